"""Every rule of the GSL READMEs (seeds 001 and 002) builds, written as there."""

from gsl_eq.frontend import *
from gsl_eq.frontend import pat as P


def test_diamond_conv_add():
    # Seed 002; seed 001 writes the same rule with its older names.
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable()
    w2 = pat.Variable(shape=w1.shape)
    # Source pattern: conv2d(x, w1) + conv2d(x, w2)
    conv1 = op.Conv2D(x, w1)
    conv2 = op.Conv2D(x, w2, strides=conv1.strides, padding=conv1.padding,
                      dilation=conv1.dilation, groups=conv1.groups)
    y1 = conv1 + conv2
    # Target pattern: conv2d(x, w1 + w2)
    y2 = op.Conv2D(x, w1 + w2, strides=conv1.strides, padding=conv1.padding,
                   dilation=conv1.dilation, groups=conv1.groups)
    # Build substitution
    subst = Subst(y1, y2)

    assert subst.source.rpo == (x, w1, conv1, w2, conv2, y1)
    assert subst.inputs == (x, w1, w2)
    assert subst.src_outputs == (y1,) and subst.tgt_outputs == (y2,)
    assert y1.op == "relax.add" and y2.op == "relax.nn.conv2d"
    (add,) = [p for p in subst.target.rpo if isinstance(p, P.Call) and p.op == "relax.add"]
    assert add.inputs == (w1, w2)
    assert subst.target.inputs == (x, w1, w2)
    assert not subst.variadic


def test_parallel_conv_multi_output():
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable()
    w2 = pat.Variable(shape=w1.shape)
    # Source pattern
    conv1 = op.Conv2D(x, w1, groups=1)
    conv2 = op.Conv2D(x, w2, **pat.same_attr(conv1, ['strides', 'padding', 'dilation', 'groups']))
    # Target pattern
    w = op.Concatenate((w1, w2), axis=0)
    conv = op.Conv2D(x, w, **pat.same_attr(conv1, ['strides', 'padding', 'dilation', 'groups']))
    split = op.Split(conv, indices_or_sections=2, axis=1)
    # Build substitution
    subst = Subst([conv1, conv2], [split[0], split[1]])

    assert subst.src_outputs == (conv1, conv2)
    assert [o.attrs["index"].value for o in subst.tgt_outputs] == [0, 1]
    assert w.op == "relax.concat" and isinstance(w.inputs[0], P.Tuple) and w.inputs[0].inputs == (w1, w2)
    assert subst.source.succ[x] == (conv1, conv2)
    assert set(conv2.attrs) == {"strides", "padding", "dilation", "groups"}
    assert all(e.pattern is conv1 and e.name == name for name, e in conv2.attrs.items())


def test_split_concat_variadic_field():
    # Input
    x = pat.Wildcard()
    # Source pattern: concat(split(x, axis=a), axis=a)
    split = op.Split(x)
    i = attr.Symbol()
    item = split[i]
    y1 = op.Concatenate(pat.Variadic(item, templates=[item], index=i), axis=split.axis)
    # Target pattern: x
    y2 = x
    # Build substitution
    subst = Subst(y1, y2)

    variadic = y1.inputs[0]
    assert isinstance(variadic, P.Variadic) and variadic.field is item and variadic.index is i
    assert subst.source.rpo == (x, split, item, variadic, y1)
    assert subst.target.rpo == (x,) and subst.target.inputs == (x,)
    assert item.free == frozenset({i}) and variadic.free == frozenset()


def test_variadic_parallel_conv():
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable()
    w = pat.Variable(shape=(None, None, w1.shape[2], w1.shape[3]))
    # Source pattern
    conv1 = op.Conv2D(x, w1, groups=1)
    conv = op.Conv2D(x, w, **pat.same_attr(conv1, ['strides', 'padding', 'dilation', 'groups']))
    src = pat.Variadic(conv, templates=[conv, w], first=[conv1, w1], min_len=2)
    # Target pattern
    i = attr.Symbol()
    w_inst = src(w, i)
    concat = op.Concatenate(pat.Variadic(w_inst, templates=[w_inst], index=i, length=src.length),
                            axis=0)
    conv = op.Conv2D(x, concat,
                     **pat.same_attr(conv1, ['strides', 'padding', 'dilation', 'groups']))
    i = attr.Symbol()
    j = attr.Symbol()
    split = op.Split(conv, axis=1, indices_or_sections=attr.Variadic(
        attr.Sum(src(w, j).shape[0], j, i + 1), index=i, length=src.length - 1))
    i = attr.Symbol()
    item = split[i]
    tgt = pat.Variadic(item, templates=[item], index=i)
    # Build substitution
    subst = Subst(src, tgt)

    assert subst.variadic
    assert subst.source.rpo[:3] == (x, w1, conv1)  # the first instance is matched first
    assert subst.source.rpo[-1] is src
    assert subst.target.inputs == (x, w_inst)
    assert subst.template_owner[w] is src and subst.template_owner[item] is tgt
    assert split.attrs["indices_or_sections"].free == frozenset()
    assert src.min_len == 2 and src.first == (conv1, w1)


def test_rules_build_under_seed_001_names_too():
    # Seed 001's diamond rule, with its names mapped to seed 002's.
    Wildcard, Var, Conv2D, Substitution = pat.Wildcard, pat.Variable, op.Conv2D, Subst
    x = Wildcard()
    w1 = Var()
    w2 = Var(shape=w1.shape)
    conv1 = Conv2D(x, w1)
    conv2 = Conv2D(x, w2, strides=conv1.strides, padding=conv1.padding,
                   dilation=conv1.dilation, groups=conv1.groups)
    y1 = conv1 + conv2
    y2 = Conv2D(x, w1 + w2, strides=conv1.strides, padding=conv1.padding,
                dilation=conv1.dilation, groups=conv1.groups)
    subst = Substitution(y1, y2)
    assert subst.inputs == (x, w1, w2)
