"""Layouts as rewrites: a conv and the chain of ops after it computed channels-last (NHWC/HWIO),
with the transposes at the chain's ends as terms of their own.

:func:`conv_nhwc` writes an NCHW conv as ``to_nchw(conv_nhwc(to_nhwc(x), to_hwio(w)))``; the kernel's
transpose reads only a parameter and folds away. The other rules move a ``to_nchw`` transpose
past the op reading it (element-wise ops, broadcasting ops, pools, concats), so the next conv's
``to_nhwc`` meets it and :func:`~gsl_eq.rules.transpose_transpose` cancels the pair. Saturate
mode then holds every place a chain could change layout, and extraction prices a chain's kernels
and its boundary transposes together: a choice for a cost model that sees TVM's kernels
(``cost="tvm"``, BENCHMARKS.md's cost-fidelity), not a rewrite that always pays, so these rules are not in ``default()``; greedy mode
would convert every conv, as TVM's ``ConvertLayout`` does. TVM 0.27 cannot legalize convs in a
blocked layout (NCHWc), so no rule offers one.
"""

from __future__ import annotations

from ..frontend import Subst, attr, op, pat, spec

#: ``permute_dims`` axes taking NCHW to NHWC, NHWC back to NCHW, and an OIHW kernel to HWIO.
TO_NHWC, TO_NCHW, TO_HWIO = (0, 2, 3, 1), (0, 3, 1, 2), (2, 3, 1, 0)

_POOL_ATTRS = ["pool_size", "strides", "padding", "dilation", "ceil_mode", "count_include_pad"]


def _to_nchw(x: pat.Pattern) -> pat.Call:
    return op.Transpose(x, axes=TO_NCHW)


def _channels_last(x: pat.Pattern) -> pat.Pattern:
    """``x`` (a scalar, or a 4-d value broadcast against an NCHW one) as the NHWC computation reads it."""
    return pat.Cond(x.ndim == 0, x, op.Transpose(x, axes=TO_NHWC))


def conv_nhwc() -> Subst:
    """``conv2d(x, w)`` in NCHW/OIHW -> ``to_nchw(conv2d(to_nhwc(x), to_hwio(w)))`` in NHWC/HWIO.

    When: an NCHW conv that is not depthwise (grouped ones too). A depthwise conv runs slower
    channels-last on this CPU, tuned or sampled (BENCHMARKS.md's cpu-rewrites and cost-fidelity), and
    the per-call price extraction sums, which leaves out the conv's fused epilogue, ranks it the other
    way. The conv keeps its strides, padding, dilation, groups and out_dtype.
    """
    # Input
    x = pat.Wildcard(ndim=4)
    w = pat.Wildcard(ndim=4)
    # Source pattern: an NCHW conv
    conv = op.Conv2D(x, w, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW")
    # Target pattern: the conv channels-last, between transposes
    same = pat.same_attr(conv, ["strides", "padding", "dilation", "groups", "out_dtype"])
    nhwc = op.Conv2D(op.Transpose(x, axes=TO_NHWC), op.Transpose(w, axes=TO_HWIO), data_layout="NHWC",
                     kernel_layout="HWIO", out_layout="NHWC", **same)
    depthwise = (conv.groups > 1) & (conv.groups == x.shape[1]) & (w.shape[1] == 1)
    return Subst(conv, _to_nchw(nhwc), where=~depthwise, name="conv_nhwc")


def element_wise_of_nchw() -> Subst:
    """``ew(to_nchw(x)) -> to_nchw(ew(x))``: an element-wise op (relu, clip, sigmoid, ...) runs in
    the layout its input was computed in."""
    # Input
    x = pat.Wildcard(ndim=4)
    ew = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE)
    # Source pattern: ew(to_nchw(x)); target pattern: to_nchw(ew(x))
    return Subst(ew(_to_nchw(x)), _to_nchw(ew(x)), name="element_wise_of_nchw")


def broadcast_of_nchw() -> Subst:
    """``bc(to_nchw(x), c) -> to_nchw(bc(x, to_nhwc(c)))``: an add, multiply, ... runs channels-last.

    When: ``c`` is a scalar (read as it is) or 4-d (transposed too: a parameter's transpose folds,
    and a ``c`` computed channels-last meets its own ``to_nchw`` and cancels). A broadcasting op
    whose other operand is the transposed one is first commuted (``add_commutative``).
    """
    # Input
    x = pat.Wildcard(ndim=4)
    c = pat.Wildcard()
    bc = pat.OpWithTrait(spec.OpTrait.BROADCASTING)
    # Source pattern: bc(to_nchw(x), c); target pattern: to_nchw(bc(x, c channels-last))
    y1 = bc(_to_nchw(x), c)
    y2 = _to_nchw(bc(x, _channels_last(c)))
    return Subst(y1, y2, where=(c.ndim == 0) | (c.ndim == 4), name="broadcast_of_nchw")


def _pool_of_nchw(make: op.Op, name: str, attrs: list[str]) -> Subst:
    x = pat.Wildcard(ndim=4)
    pool = make(_to_nchw(x), layout="NCHW", out_layout="NCHW")
    return Subst(pool, _to_nchw(make(x, layout="NHWC", out_layout="NHWC", **pat.same_attr(pool, attrs))), name=name)


def max_pool_of_nchw() -> Subst:
    """``max_pool2d(to_nchw(x)) -> to_nchw(max_pool2d(x))``, the pool in NHWC, its window kept."""
    return _pool_of_nchw(op.MaxPool2D, "max_pool_of_nchw", _POOL_ATTRS)


def avg_pool_of_nchw() -> Subst:
    """``avg_pool2d(to_nchw(x)) -> to_nchw(avg_pool2d(x))``, the pool in NHWC, its window kept."""
    return _pool_of_nchw(op.AvgPool2D, "avg_pool_of_nchw", _POOL_ATTRS)


def adaptive_pool_of_nchw() -> Subst:
    """``adaptive_avg_pool2d(to_nchw(x)) -> to_nchw(adaptive_avg_pool2d(x))`` (global pooling among them)."""
    return _pool_of_nchw(op.AdaptiveAvgPool2D, "adaptive_pool_of_nchw", ["output_size"])


def concat_of_nchw() -> Subst:
    """``concat((to_nchw(a), b), axis=k) -> to_nchw(concat((a, to_nhwc(b)), axis=k'))``, ``k'`` the
    NHWC axis of NCHW axis ``k`` (channels: 1 -> 3). A ``b`` computed channels-last meets its own
    ``to_nchw`` and cancels; a concat whose transposed part comes second is reached through
    :func:`~gsl_eq.rules.concat_of_nchw_right`."""
    # Input
    a = pat.Wildcard(ndim=4)
    b = pat.Wildcard(ndim=4)
    # Source pattern: concat((to_nchw(a), b))
    cat = op.Concatenate((_to_nchw(a), b))
    # Target pattern: the concat channels-last
    return Subst(cat, _to_nchw(op.Concatenate((a, op.Transpose(b, axes=TO_NHWC)), axis=_nhwc_axis(cat.axis))),
                 name="concat_of_nchw")


def concat_of_nchw_right() -> Subst:
    """``concat((a, to_nchw(b)), axis=k) -> to_nchw(concat((to_nhwc(a), b), axis=k'))``: :func:`concat_of_nchw`
    for a concat whose transposed part comes second."""
    a = pat.Wildcard(ndim=4)
    b = pat.Wildcard(ndim=4)
    cat = op.Concatenate((a, _to_nchw(b)))
    y2 = _to_nchw(op.Concatenate((op.Transpose(a, axes=TO_NHWC), b), axis=_nhwc_axis(cat.axis)))
    return Subst(cat, y2, name="concat_of_nchw_right")


def _nhwc_axis(axis: attr.AttrExpr) -> attr.AttrExpr:
    """Where NCHW axis ``axis`` (negative counts from the end) is in NHWC."""
    return attr.Const(tuple(TO_NHWC.index(d) for d in range(4)))[axis % 4]


def layouts() -> list[Subst]:
    """Convs channels-last and the rules moving their transposes along a chain (see the module's
    docstring); with :func:`~gsl_eq.rules.transpose_transpose`, which cancels a chain's inner pairs."""
    from .structural import transpose_transpose

    return [conv_nhwc(), element_wise_of_nchw(), broadcast_of_nchw(), max_pool_of_nchw(), avg_pool_of_nchw(),
            adaptive_pool_of_nchw(), concat_of_nchw(), concat_of_nchw_right(), transpose_transpose()]
