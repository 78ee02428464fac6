"""Patterns, op shorthands, op traits, and what Subst precomputes for executors."""

import sys

import numpy as np
import pytest

from gsl_eq.frontend import ExpressionUsageError, PatternGraph, Subst, attr, op, pat, spec
from gsl_eq.frontend import attr as A
from gsl_eq.frontend import pat as P
from gsl_eq.graph import ops


def line():
    return sys._getframe(1).f_lineno


# --- op shorthands and traits ------------------------------------------------------


def test_every_relax_op_has_a_shorthand():
    # Ops of Relax modules imported after gsl_eq (relax.vm.*, by the build) may be missing.
    names = set(ops.op_names())
    core = {n for n in names if n.count(".") == 1 or n.startswith("relax.nn.")}
    assert core <= set(op.SHORTHANDS.values()) <= names
    for short, name in op.SHORTHANDS.items():
        assert getattr(op, short).relax_name == name


@pytest.mark.parametrize("short, name", [
    ("Conv2D", "relax.nn.conv2d"), ("Concatenate", "relax.concat"), ("Split", "relax.split"),
    ("BatchNorm", "relax.nn.batch_norm"), ("LayerNorm", "relax.nn.layer_norm"), ("ReLU", "relax.nn.relu"),
    ("Transpose", "relax.permute_dims"), ("Reshape", "relax.reshape"), ("ExpandDims", "relax.expand_dims"),
    ("Sqrt", "relax.sqrt"), ("MatMul", "relax.matmul"), ("Add", "relax.add"), ("Multiply", "relax.multiply"),
    ("MaxPool2D", "relax.nn.max_pool2d"), ("Conv2DTranspose", "relax.nn.conv2d_transpose"), ("Softmax", "relax.nn.softmax"),
])
def test_seed_names_of_ops(short, name):
    assert op.SHORTHANDS[short] == name


def test_shorthand_builds_a_call_with_relax_attribute_names():
    x, w = pat.Wildcard(), pat.Variable()
    conv = op.Conv2D(x, w, strides=(2, 2), data_layout="NCHW", out_dtype="float32")
    assert isinstance(conv, P.Call) and conv.op == "relax.nn.conv2d" and conv.inputs == (x, w)
    assert {n: e.value for n, e in conv.attrs.items()} == {"strides": (2, 2), "data_layout": "NCHW", "out_dtype": "float32"}
    assert conv.op_attrs() == {"strides", "padding", "dilation", "groups", "data_layout", "kernel_layout", "out_layout", "out_dtype"}


def test_call_by_name_with_or_without_prefix():
    x = pat.Wildcard()
    assert pat.Call("nn.relu", x).op == "relax.nn.relu"
    assert pat.Call("relax.nn.relu", x).op == "relax.nn.relu"
    assert pat.Call(op.ReLU, x).op == "relax.nn.relu"


def test_trait_tables_hold_real_ops_of_one_arity():
    names = set(ops.op_names())
    for trait in spec.OpTrait:
        members = spec.ops_with_trait(trait)
        assert members and set(members) <= names
        assert {ops.signature(n).num_inputs for n in members} == {spec.trait_arity(trait)}
    assert spec.trait_arity(spec.OpTrait.ELEMENT_WISE) == 1
    assert spec.trait_arity(spec.OpTrait.BROADCASTING) == 2
    assert spec.trait_attrs(spec.OpTrait.REDUCTION) == ("axis", "keepdims")
    assert spec.trait_attrs(spec.OpTrait.BROADCASTING) == ()
    assert spec.has_trait("relax.nn.relu", spec.OpTrait.ELEMENT_WISE)
    assert not spec.has_trait("relax.nn.conv2d", spec.OpTrait.ELEMENT_WISE)
    assert spec.traits("relax.add") == {spec.OpTrait.BROADCASTING, spec.OpTrait.COMMUTATIVE, spec.OpTrait.ASSOCIATIVE}
    assert set(spec.ops_with_trait(spec.OpTrait.COMMUTATIVE)) <= set(spec.ops_with_trait(spec.OpTrait.BROADCASTING))


def test_structural_fields_never_hide_readable_attributes():
    # p.name reads an attribute only when the pattern has no Python attribute of that name.
    every_op_attr = {a for n in ops.op_names() for a in ops.signature(n).attrs} | {"shape", "dtype", "ndim", "length", "index"}
    for cls in (P.Wildcard, P.Variable, P.Const, P.Call, P.Tuple, P.GetItem, P.Cond, P.Alt, P.Match, P.Instance):
        slots = {s for k in cls.__mro__ for s in getattr(k, "__slots__", ())}
        assert not slots & every_op_attr, cls
    variadic_slots = {s for k in P.Variadic.__mro__ for s in getattr(k, "__slots__", ())}
    assert "length" not in variadic_slots


# --- building patterns ---------------------------------------------------------------


def test_python_operators_build_calls():
    x, y = pat.Wildcard(), pat.Wildcard()
    assert [(x + y).op, (x - y).op, (x * y).op, (x / y).op, (-x).op, (x @ y).op] == [
        "relax.add", "relax.subtract", "relax.multiply", "relax.divide", "relax.negative", "relax.matmul"]
    scaled = 2.0 * x
    assert scaled.op == "relax.multiply" and isinstance(scaled.inputs[0], P.Const) and scaled.inputs[1] is x
    assert scaled.inputs[0].value == np.asarray(2.0)


def test_python_tuples_become_tuple_patterns():
    a, b = pat.Wildcard(), pat.Wildcard()
    cat = op.Concatenate([a, b], axis=1)
    (tup,) = cat.inputs
    assert isinstance(tup, P.Tuple) and tup.inputs == (a, b)


def test_items_and_attribute_reads():
    x = pat.Wildcard()
    split = op.Split(x, indices_or_sections=3)
    first = split[0]
    assert isinstance(first, P.GetItem) and first.inputs == (split,) and first.attrs["index"].value == 0
    read = split.axis
    assert isinstance(read, A.GetAttr) and read.pattern is split and read.name == "axis"
    assert isinstance(first.shape[0], A.GetItem)
    same = pat.same_attr(split, ["axis", "indices_or_sections"])
    assert [(n, e.pattern, e.name) for n, e in same.items()] == [("axis", split, "axis"), ("indices_or_sections", split, "indices_or_sections")]


def test_constraint_tuples_keep_expressions_and_wildcards():
    w1 = pat.Variable()
    w = pat.Variable(shape=(None, None, w1.shape[2], w1.shape[3]))
    shape = w.attrs["shape"]
    assert isinstance(shape, A.Tuple)
    assert [type(f).__name__ for f in shape.fields] == ["Const", "Const", "GetItem", "GetItem"]
    assert pat.Variable(shape=(1, None)).attrs["shape"].value == (1, None)


def test_locations_are_the_users_lines():
    here = line()
    x = pat.Wildcard(); conv = op.Conv2D(x, pat.Variable()); read = conv.strides; s = x + x  # noqa: E702
    assert {x.loc.lineno, conv.loc.lineno, read.loc.lineno, s.loc.lineno} == {here + 1}
    assert x.loc.filename == __file__
    assert f"test_patterns.py:{here + 1}" in repr(conv)


def test_location_of_a_helper_is_the_helper_line():
    def conv_relu(x, w):
        return op.ReLU(op.Conv2D(x, w))  # the innermost line outside the frontend

    relu = conv_relu(pat.Wildcard(), pat.Variable())
    assert relu.loc.lineno == conv_relu.__code__.co_firstlineno + 1


def test_patterns_cannot_be_iterated():
    split = op.Split(pat.Wildcard(), indices_or_sections=2)
    with pytest.raises(ExpressionUsageError):
        a, b = split
    with pytest.raises(ExpressionUsageError):
        list(split.shape)
    with pytest.raises(ExpressionUsageError):
        3 in split.shape


def test_free_symbols():
    x = pat.Wildcard()
    i, j = attr.Symbol(), attr.Symbol()
    assert (x.shape[i] + j).free == {i, j}
    assert attr.Sum(x.shape[j], j, i).free == {i}
    assert attr.Variadic(attr.Sum(x.shape[j], j, i + 1), index=i, length=x.ndim).free == frozenset()
    assert attr.Map(x.shape, lambda d: d + i).free == {i}
    split = op.Split(x)
    item = split[i]
    relu = op.ReLU(item)
    assert item.free == {i} and relu.free == {i} and relu.shape.free == {i}
    assert pat.Variadic(relu, templates=[relu, item], index=i).free == frozenset()
    assert attr.free_symbols(attr.Cond(i > 0, j, 1)) == {i, j}


# --- rules beyond the seeds ------------------------------------------------------------


def test_op_with_trait_binds_the_matched_op():
    x = pat.Wildcard()
    unary = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE)
    src = op.Transpose(unary(x), axes=(0, 2, 1))
    tgt = unary(op.Transpose(x, axes=(0, 2, 1)))
    subst = Subst(src, tgt)
    assert src.inputs[0].op is unary and tgt.op is unary
    assert subst.target.rpo[-1] is tgt


def test_alt_and_match():
    x = pat.Wildcard()
    alt = pat.Alt(op.ReLU(x), op.Sigmoid(x))
    src = op.Exp(alt)
    tgt = pat.Match(alt, [op.Tanh(x), op.Sqrt(x)])
    subst = Subst(src, tgt)
    assert subst.source.rpo == (x, alt.alts[0], alt.alts[1], alt, src)
    assert alt.readable_attrs() == {"shape", "dtype", "ndim", "length"}


def test_cond_in_target_and_reads_of_built_target_patterns():
    x = pat.Wildcard()
    relu = op.ReLU(x)
    flat = op.Reshape(x, shape=(attr.ReduceTuple("mul", x.shape, 1),))
    back = op.Reshape(op.ReLU(flat), shape=x.shape)
    tgt = pat.Cond(x.ndim > 1, op.Reshape(back, shape=flat.shape + (1,)), op.ReLU(x))
    subst = Subst(relu, tgt)
    assert subst.target.rpo.index(flat) < subst.target.rpo.index(back)


def test_target_may_reuse_a_source_constant():
    x = pat.Wildcard()
    c = pat.Const()
    src = op.Add(op.Add(x, c), c)
    tgt = op.Add(x, op.Multiply(c, pat.Const(2.0)))
    subst = Subst(src, tgt)
    assert subst.inputs == (x, c)
    assert set(subst.target.inputs) == {x, c}


def test_instance_access_in_target_attributes():
    x = pat.Wildcard()
    w = pat.Variable()
    add = op.Add(x, w)
    src = pat.Variadic(add, templates=[add, w], min_len=2)
    i = attr.Symbol()
    inst = src(w, i)
    new_add = op.Add(x, inst)
    cast = op.AsType(new_add, dtype=src(add, i).dtype)  # reads an inner template's instance: fine
    tgt = pat.Variadic(cast, templates=[cast, new_add, inst], index=i)
    subst = Subst(src, tgt)
    assert subst.variadic and subst.target.inputs == (x, inst)
    assert cast.attrs["dtype"].free == {i}


# --- precomputed structure ------------------------------------------------------------


def test_reverse_post_order_and_successors():
    x = pat.Wildcard()
    w1, w2 = pat.Variable(), pat.Variable()
    c1, c2 = op.Conv2D(x, w1), op.Conv2D(x, w2)
    r = op.ReLU(c2)
    y = op.Add(c1, r)
    z = op.Multiply(y, y)
    g = PatternGraph([z])
    assert g.rpo == (x, w1, c1, w2, c2, r, y, z)
    assert g.succ[x] == (c1, c2) and g.succ[y] == (z,) and g.succ[z] == ()
    assert g.inputs == (x, w1, w2)
    assert g.reach(r) == {x, w2, c2, r}
    for p, users in g.succ.items():  # each successor list is a subsequence of rpo
        positions = [g.rpo.index(u) for u in users]
        assert positions == sorted(positions)


def test_multi_output_graph_order_follows_outputs():
    x = pat.Wildcard()
    a = op.ReLU(x)
    b = op.Sigmoid(x)
    subst = Subst([b, a], [op.Tanh(x), op.Exp(x)])
    assert subst.source.rpo == (x, b, a)
    assert subst.source.succ[x] == (b, a)


def test_memoizable_target_expressions():
    x = pat.Wildcard()
    w1, w2 = pat.Variable(), pat.Variable()
    conv1 = op.Conv2D(x, w1)
    conv2 = op.Conv2D(x, w2, strides=conv1.strides)
    strides = conv1.strides  # one object, read twice in the target
    once = conv1.padding
    i = attr.Symbol()
    tgt = op.Conv2D(x, w1 + w2, strides=strides, padding=once,
                    dilation=attr.Cond(attr.Len(strides) == 2, (1, 1), (1, 1, 1)))
    subst = Subst(conv1 + conv2, tgt)
    assert strides in subst.memoizable
    assert once not in subst.memoizable
    assert all(not e.free for e in subst.memoizable)



def test_expressions_with_free_symbols_are_not_memoized():
    x = pat.Wildcard()
    split = op.Split(x, indices_or_sections=2)
    i = attr.Symbol()
    item = split[i]
    src = op.Concatenate(pat.Variadic(item, templates=[item], index=i), axis=split.axis)
    j = attr.Symbol()
    t_item = op.Split(x, indices_or_sections=2, axis=split.axis)[j]
    rows = t_item.shape[0] * 2  # read twice, but differs from instance to instance
    size = x.shape[0]  # read twice and closed
    t = op.Reshape(t_item, shape=(rows, size, -1))
    t2 = op.Reshape(t, shape=(rows, size, -1))
    tgt = op.Concatenate(pat.Variadic(t2, templates=[t2, t, t_item], index=j, length=2), axis=split.axis)
    subst = Subst(src, tgt)
    assert rows.free == {j}
    assert rows not in subst.memoizable
    assert size in subst.memoizable


def test_walk_visits_each_sub_expression_once():
    x = pat.Wildcard()
    n = x.shape[0]
    e = attr.Tuple(n, n + 1)
    seen = list(attr.walk(e))
    assert seen[0] is e and len(seen) == len({id(s) for s in seen})
    assert sum(s is n for s in seen) == 1
    assert [s.pattern for s in seen if isinstance(s, A.GetAttr)] == [x]
