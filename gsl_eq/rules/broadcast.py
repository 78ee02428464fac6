"""Broadcast rules: moving a per-channel broadcast op (a bias add, a scale) across a concat or a split.

A conv's bias add ``conv + b``, ``b`` of shape ``(1, C, 1, 1)``, is a broadcasting op whose
second operand varies along the channel axis only. Parts joined by a concat, or taken from
one split, along that axis each add their own bias; the rules here add the concatenated
biases to the whole tensor instead: one call instead of one per part (and, on a GPU, an
epilogue of the kernel producing the whole tensor instead of a kernel per part).

Each rule holds under Relax broadcasting because its guards ask that every second operand
``b_i``

- has at most the rank of its first operand ``a_i`` and does not broadcast it
  (``bop(a_i, b_i)`` has ``a_i``'s shape: every extent of ``b_i`` is ``a_i``'s or 1, the axes
  aligned from the right as broadcasting aligns them: a linear layer's bias of shape ``(C,)``
  against ``(N, C)``);
- has an axis aligned with the concat (split) axis, of ``a_i``'s extent there, so that the
  ``b_i`` concatenated along it line up with the ``a_i`` concatenated (a ``b_i`` of extent 1
  broadcast along the axis does not);
- has the rank of every other ``b_j`` and agrees with it on every other axis (so the
  concatenation of the ``b_i`` is defined and broadcasts along those axes as each ``b_i`` did);
- in the concat and split forms, is broadcast: it has fewer elements than ``a_i`` (a bias, a
  scale), not ``a_i``'s shape. An add of two tensors of one shape is no per-channel op; under
  ``add_commutative`` and ``add_associative`` it matches in both orders and with every
  regrouping of an add chain, so that a concat of n such adds matched in 2**n ways and more
  (cells of branch sums, as NasNet-A's, then fill the e-graph up to the iteration limit under
  ``default() + algebraic()`` where it saturates without them, at the same best cost).

Which rules go where: the split forms and the conv merges that take each conv's bias add (and
activation) along are in ``fusion()`` and ``default()`` (the expand-kernels one, which pads a
kernel with zeros, in ``fusion()`` only); the concat forms are in ``algebraic()``, since
``bop`` on a concat is a kernel of its own where each ``bop(a_i, b_i)`` may have been an
epilogue of ``a_i``'s kernel. Saturation searching merges in its first iteration only
(TENSAT's ``multi_iterations=1``) needs the conv merges: the split forms never see the parts
``parallel_conv_variadic`` makes there.
"""

from __future__ import annotations

from typing import Any

from ..frontend import Subst, attr, op, pat, spec
from ._common import CONV_ATTRS, NCHW, concat_each, same_padding, split_back

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _aligned(a: pat.Pattern, axis: Any) -> attr.AttrExpr:
    """``axis`` of ``a`` counted from the end: the same axis in every operand broadcast against
    ``a``, whose axes line up with ``a``'s from the right (what the ``b_i`` are concatenated along)."""
    return axis % a.ndim - a.ndim


def _lines_up(a: pat.Pattern, b: pat.Pattern, b0: pat.Pattern, axis: Any) -> attr.AttrExpr:
    """``b`` has at most ``a``'s rank and ``a``'s extent on ``axis`` (aligned from the right), and
    ``b0``'s rank and extent on every other axis."""
    k = _aligned(a, axis) + b.ndim  # axis in b, negative if b has none aligned with it
    d = attr.Symbol("d")
    others = attr.ReduceIndexed(attr.BinOp.AND, (d == k) | (b.shape[d] == b0.shape[d]), d, b.ndim, True)
    return (b.ndim <= a.ndim) & (k >= 0) & (b.ndim == b0.ndim) & (b.shape[k] == a.shape[axis % a.ndim]) & others


def _broadcasts(a: pat.Pattern, b: pat.Pattern) -> attr.AttrExpr:
    """``b`` has fewer elements than ``a`` (a lower rank, or extent 1 where ``a`` has more): a bias
    or a scale, not a tensor of ``a``'s shape (why: the module's docstring)."""
    d = attr.Symbol("d")
    return attr.ReduceIndexed(attr.BinOp.OR, b.shape[d] != a.shape[d + a.ndim - b.ndim], d, b.ndim, b.ndim < a.ndim)


def _every_part(src: pat.Variadic, item: pat.Pattern, split: pat.Pattern) -> attr.AttrExpr:
    """The split's last part is matched: as instance ``i`` matches part ``i``, every part is.

    (Stated through the last instance rather than ``src.length == split.length`` so that it
    cannot be evaluated, rather than false, while an instance is still being drawn: a matcher
    refuses a guard it cannot evaluate, as it refuses a false one.)
    """
    return src(item, split.length - 1).index == split.length - 1


def concat_of_broadcast() -> Subst:
    """``concat(bop(a, b1), bop(c, b2), axis=k) -> bop(concat(a, c, axis=k), concat(b1, b2, axis=k))``.

    ``bop`` is any broadcasting op (add, multiply, ...), the same for both calls. When: see the
    module's docstring (``b1`` and ``b2`` have the rank of ``a``, do not broadcast it, have
    ``a``'s and ``c``'s extents on axis ``k`` and agree on every other axis), and ``b1`` is
    broadcast (a bias or a scale, not a tensor of ``a``'s shape).
    """
    # Input
    a = pat.Wildcard()
    c = pat.Wildcard(dtype=a.dtype)
    b1 = pat.Wildcard()
    b2 = pat.Wildcard(dtype=b1.dtype)
    # Source pattern: concat(bop(a, b1), bop(c, b2))
    bop = pat.OpWithTrait(spec.OpTrait.BROADCASTING)
    x1 = bop(a, b1, shape=a.shape)
    x2 = bop(c, b2, shape=c.shape, dtype=x1.dtype)
    cat = op.Concatenate((x1, x2))
    # Target pattern: bop(concat(a, c), concat(b1, b2))
    y = bop(op.Concatenate((a, c), axis=cat.axis), op.Concatenate((b1, b2), axis=_aligned(a, cat.axis)))
    where = [_lines_up(a, b1, b1, cat.axis), _lines_up(c, b2, b1, cat.axis), _broadcasts(a, b1)]
    return Subst(cat, y, name="concat_of_broadcast", where=where)


def concat_of_broadcast_variadic() -> Subst:
    """``concat(bop(a_0, b_0), ..., bop(a_n, b_n), axis=k) -> bop(concat(a_i, axis=k), concat(b_i, axis=k))``.

    As :func:`concat_of_broadcast`, for a concat of any number (at least two) of calls of one
    broadcasting op, every ``b_i`` lined up with its ``a_i`` and agreeing with ``b_0``, ``b_0``
    broadcast.
    """
    # Input
    a0 = pat.Wildcard()
    b0 = pat.Wildcard()
    a = pat.Wildcard(dtype=a0.dtype)
    b = pat.Wildcard(dtype=b0.dtype)
    # Source pattern: concat(bop(a_i, b_i) ...)
    bop = pat.OpWithTrait(spec.OpTrait.BROADCASTING)
    x0 = bop(a0, b0, shape=a0.shape)
    x = bop(a, b, shape=a.shape, dtype=x0.dtype)
    parts = pat.Variadic(x, templates=[x, a, b], first=[x0, a0, b0], min_len=2)
    cat = op.Concatenate(parts)
    # Target pattern: bop(concat(a_i ...), concat(b_i ...))
    a_cat = concat_each(parts, a, axis=cat.axis)
    b_cat = concat_each(parts, b, axis=_aligned(a0, cat.axis))
    y = bop(a_cat, b_cat)
    # When: every b_i lines up with its a_i, and agrees with b_0 off the axis
    i = attr.Symbol()
    each = attr.ReduceIndexed(attr.BinOp.AND, _lines_up(parts(a, i), parts(b, i), b0, cat.axis), i,
                              parts.length, True)
    return Subst(cat, y, name="concat_of_broadcast_variadic", where=[_broadcasts(a0, b0), each])


def split_of_broadcast() -> Subst:
    """``bop(split(y)[0], b1), bop(split(y)[1], b2) -> split(bop(y, concat(b1, b2, axis=k)))`` parts.

    A two-part split along ``k`` whose parts each meet their own second operand of one
    broadcasting op. When: see the module's docstring, ``a_i`` being the split's parts (``b1``
    broadcast).
    """
    # Input
    y = pat.Wildcard()
    split = op.Split(y, length=2)
    p1, p2 = split[0], split[1]
    b1 = pat.Wildcard()
    b2 = pat.Wildcard(dtype=b1.dtype)
    # Source pattern: bop on each part
    bop = pat.OpWithTrait(spec.OpTrait.BROADCASTING)
    x1 = bop(p1, b1, shape=p1.shape)
    x2 = bop(p2, b2, shape=p2.shape, dtype=x1.dtype)
    # Target pattern: split(bop(y, concat(b1, b2)))
    whole = bop(y, op.Concatenate((b1, b2), axis=_aligned(y, split.axis)))
    new = op.Split(whole, indices_or_sections=split.indices_or_sections, axis=split.axis)
    where = [_lines_up(p1, b1, b1, split.axis), _lines_up(p2, b2, b1, split.axis), _broadcasts(p1, b1)]
    return Subst([x1, x2], [new[0], new[1]], name="split_of_broadcast", where=where)


def split_of_broadcast_variadic() -> Subst:
    """``bop(split(y)[i], b_i)`` for every part ``i`` of a split -> the parts of ``split(bop(y, concat(b_i)))``.

    As :func:`split_of_broadcast`, for a split into any number of parts, each part (in
    order, none left out) meeting its own ``b_i``.
    """
    # Input
    y = pat.Wildcard()
    split = op.Split(y)
    b = pat.Wildcard()
    # Source pattern: bop(split(y)[i], b_i) for each i
    bop = pat.OpWithTrait(spec.OpTrait.BROADCASTING)
    i = attr.Symbol()
    item = split[i]
    x = bop(item, b, shape=item.shape)
    src = pat.Variadic(x, templates=[x, item, b], index=i, min_len=2)
    # Target pattern: the parts of split(bop(y, concat(b_i ...)))
    b_cat = concat_each(src, b, axis=_aligned(y, split.axis))
    new = op.Split(bop(y, b_cat), indices_or_sections=split.indices_or_sections, axis=split.axis)
    j = attr.Symbol()
    part = new[j]
    tgt = pat.Variadic(part, templates=[part], index=j)
    # When: every part is covered, and every b_i lines up with its part
    j = attr.Symbol()
    each = attr.ReduceIndexed(attr.BinOp.AND, _lines_up(src(item, j), src(b, j), src(b, 0), split.axis), j,
                              src.length, True)
    return Subst(src, tgt, name="split_of_broadcast_variadic",
                 where=[_every_part(src, item, split), _broadcasts(src(item, 0), src(b, 0)), each])


def split_of_split_broadcast() -> Subst:
    """``bop(split(y)[i], split(z)[i])`` for every part ``i`` of two like splits -> the parts of ``split(bop(y, z))``.

    What :func:`split_of_broadcast_variadic` leaves to this rule: second operands of the parts'
    own shape, the parts of a second split (NasRNN adds the parts of two merged matmuls, ``x``'s
    and ``h``'s projections, part by part). One call on the two wholes instead of one per part.
    When: ``y`` and ``z`` have one shape and dtype and are split alike (sections and axis), and
    every part (in order, none left out) meets its counterpart.
    """
    # Input
    y = pat.Wildcard()
    z = pat.Wildcard(shape=y.shape, dtype=y.dtype)
    split = op.Split(y)
    other = op.Split(z, **pat.same_attr(split, ["indices_or_sections", "axis"]))
    # Source pattern: bop(split(y)[i], split(z)[i]) for each i
    bop = pat.OpWithTrait(spec.OpTrait.BROADCASTING)
    i = attr.Symbol()
    item, counterpart = split[i], other[i]
    x = bop(item, counterpart)
    src = pat.Variadic(x, templates=[x, item, counterpart], index=i, min_len=2)
    # Target pattern: the parts of split(bop(y, z))
    new = op.Split(bop(y, z), indices_or_sections=split.indices_or_sections, axis=split.axis)
    j = attr.Symbol()
    part = new[j]
    tgt = pat.Variadic(part, templates=[part], index=j)
    return Subst(src, tgt, name="split_of_split_broadcast", where=_every_part(src, item, split))


def split_of_element_wise() -> Subst:
    """``ew(split(y)[i])`` for every part ``i`` of a split -> the parts of ``split(ew(y))``.

    One element-wise call (relu, ...) on the whole tensor instead of one per part. When: every
    part of the split (in order, none left out) has a call of the same element-wise op, with the
    same attributes and result dtype.
    """
    # Input
    y = pat.Wildcard()
    split = op.Split(y)
    # Source pattern: ew(split(y)[i]) for each i
    ew = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE)
    i = attr.Symbol()
    item = split[i]
    x = ew(item)
    src = pat.Variadic(x, templates=[x, item], index=i, min_len=2)
    # Target pattern: the parts of split(ew(y))
    new = op.Split(ew(y), indices_or_sections=split.indices_or_sections, axis=split.axis)
    j = attr.Symbol()
    part = new[j]
    tgt = pat.Variadic(part, templates=[part], index=j)
    return Subst(src, tgt, name="split_of_element_wise", where=_every_part(src, item, split))


def _parallel_conv_then(name: str, activation: bool) -> Subst:
    """Convs of one input, each followed by its own per-channel ``bop(., b_i)`` (and, with
    ``activation``, one element-wise op) -> one conv, one ``bop``, (one activation,) split back."""
    # Input
    x = pat.Wildcard()
    w0 = pat.Variable()
    w = pat.Variable(shape=(None, None, w0.shape[2], w0.shape[3]), dtype=w0.dtype)
    b0 = pat.Wildcard()
    b = pat.Wildcard(dtype=b0.dtype)
    # Source pattern: [ew](bop(conv2d(x, w_i), b_i)) for each i
    bop = pat.OpWithTrait(spec.OpTrait.BROADCASTING)
    ew = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE) if activation else None
    conv0 = op.Conv2D(x, w0, groups=1, **NCHW)
    conv = op.Conv2D(x, w, **pat.same_attr(conv0, CONV_ATTRS))
    z0 = bop(conv0, b0, shape=conv0.shape)
    z = bop(conv, b, shape=conv.shape, dtype=z0.dtype)
    if activation:
        y0, y = ew(z0), ew(z)
        src = pat.Variadic(y, templates=[y, z, conv, w, b], first=[y0, z0, conv0, w0, b0], min_len=2)
    else:
        src = pat.Variadic(z, templates=[z, conv, w, b], first=[z0, conv0, w0, b0], min_len=2)
    # Target pattern: split([ew](bop(conv2d(x, concat(w_i)), concat(b_i))))
    weights = concat_each(src, w, axis=0)
    biases = concat_each(src, b, axis=_aligned(conv0, 1))
    whole = bop(op.Conv2D(x, weights, **pat.same_attr(conv0, CONV_ATTRS)), biases)
    if activation:
        whole = ew(whole)
    tgt = split_back(whole, src, w, 0, axis=1)
    # When: every b_i lines up with its conv's output channels, and agrees with b_0 elsewhere
    i = attr.Symbol()
    each = attr.ReduceIndexed(attr.BinOp.AND, _lines_up(src(conv, i), src(b, i), b0, 1), i, src.length, True)
    # (and convs of floating-point values: the rule is meant for bias adds and scales, and the
    # soundness checker cannot run an integer conv's floor_mod by a random zero)
    floating = attr.In(z0.dtype, _FLOATS)
    # (and per-channel b_i, constant over the image, as a bias or a batch norm's scale: a b_i that
    # varies over it is another branch's tensor, whose add the conv merge and split_of_broadcast
    # move as well, and which add_associative puts beside every conv of an add chain)
    per_channel = (b0.shape[-1] == 1) & (b0.shape[-2] == 1)
    return Subst(src, tgt, name=name, where=[floating, _lines_up(conv0, b0, b0, 1), per_channel, each], symmetric=True)


def parallel_conv_bias_variadic() -> Subst:
    """``bop(conv2d(x, w_i), b_i)`` for two or more ``i`` -> parts of ``split(bop(conv2d(x, concat(w_i)), concat(b_i)))``.

    :func:`~gsl_eq.rules.conv.parallel_conv_variadic` with each conv's bias add (or scale, any
    broadcasting op, the same for all) merged too, so that it is one call on the merged conv
    rather than one per part: in one rule, for saturation runs that search merges in their
    first iteration only (TENSAT's ``multi_iterations=1``), where :func:`split_of_broadcast_variadic`
    never sees the parts the conv merge makes. When: as ``parallel_conv_variadic``, and each
    ``b_i`` lines up with its conv's output on the channel axis (see the module's docstring).
    """
    return _parallel_conv_then("parallel_conv_bias_variadic", activation=False)


def parallel_conv_bias_act_variadic() -> Subst:
    """``ew(bop(conv2d(x, w_i), b_i))`` for two or more ``i`` -> parts of ``split(ew(bop(conv2d(x, concat(w_i)), concat(b_i))))``.

    :func:`parallel_conv_bias_variadic` with the activation after each bias add (relu, any
    element-wise op, the same for all) merged as well: conv, bias add and activation of an
    inception or squeezenet branch become one conv with its epilogue.
    """
    return _parallel_conv_then("parallel_conv_bias_act_variadic", activation=True)


def parallel_conv_expand_kernels_bias_act() -> Subst:
    """``ew(bop(conv2d(x, w1), b1)), ew(bop(conv2d(x, w2), b2))``, kernels of different sizes -> the
    parts of ``split(ew(bop(conv2d(x, concat(pad(w1), pad(w2))), concat(b1, b2))))``.

    :func:`~gsl_eq.rules.conv.parallel_conv_expand_kernels` (the smaller kernel zero-padded to the
    larger size) with each conv's bias add and activation merged too, in one match: squeezenet's
    expand 1x1 and 3x3 convs. When: as ``parallel_conv_expand_kernels``, one broadcasting op and
    one element-wise op for both, each ``b_i`` lined up with its conv's output channels (see the
    module's docstring), floating-point values.
    """
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable()
    w2 = pat.Variable(dtype=w1.dtype)
    b1 = pat.Wildcard()
    b2 = pat.Wildcard(dtype=b1.dtype)
    # Source pattern: ew(bop(conv2d(x, w_i), b_i)) for i = 1, 2
    keep = ["strides", "dilation", "groups", *NCHW, "out_dtype"]
    conv1 = op.Conv2D(x, w1, padding=same_padding(w1), dilation=(1, 1), groups=1, **NCHW)
    conv2 = op.Conv2D(x, w2, padding=same_padding(w2), **pat.same_attr(conv1, keep))
    bop = pat.OpWithTrait(spec.OpTrait.BROADCASTING)
    ew = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE)
    z1 = bop(conv1, b1, shape=conv1.shape)
    z2 = bop(conv2, b2, shape=conv2.shape, dtype=z1.dtype)
    y1, y2 = ew(z1), ew(z2)
    # Target pattern
    kh, kw = attr.Max(w1.shape[2], w2.shape[2]), attr.Max(w1.shape[3], w2.shape[3])

    def expand(w: pat.Pattern) -> pat.Call:
        top, left = (kh - 1) // 2 - (w.shape[2] - 1) // 2, (kw - 1) // 2 - (w.shape[3] - 1) // 2
        return op.Pad(w, pad_width=(0, 0, 0, 0, top, kh - w.shape[2] - top, left, kw - w.shape[3] - left))

    w = op.Concatenate((expand(w1), expand(w2)), axis=0)
    conv = op.Conv2D(x, w, padding=((kh - 1) // 2, (kw - 1) // 2, kh // 2, kw // 2), **pat.same_attr(conv1, keep))
    whole = ew(bop(conv, op.Concatenate((b1, b2), axis=_aligned(conv1, 1))))
    split = op.Split(whole, indices_or_sections=(w1.shape[0],), axis=1)
    where = [attr.In(z1.dtype, _FLOATS), _lines_up(conv1, b1, b1, 1), _lines_up(conv2, b2, b1, 1)]
    return Subst([y1, y2], [split[0], split[1]], name="parallel_conv_expand_kernels_bias_act", where=where)
