"""Element-wise rules: merging bias adds, and merging repeated element-wise calls."""

from __future__ import annotations

from ..frontend import Subst, attr, pat, spec


def bias_add_right() -> Subst:
    """``b + x -> x + b``: a bias added from the left moved to the right, where the library's bias
    rules (:func:`bias_add_add`, the parallel matmul and conv merges) look for it. PyTorch's
    ``addmm`` puts the bias first: every ``nn.Linear`` that TVM imports from PyTorch is
    ``add(bias, matmul(x, w))``.

    When: ``b`` is a parameter vector and ``x`` has two or more axes (so the rule never matches
    what it made).
    """
    # Input
    x = pat.Wildcard()
    b = pat.Variable(ndim=1)
    return Subst(b + x, x + b, where=x.ndim >= 2, name="bias_add_right")


def bias_add_add() -> Subst:
    """``(x + b1) + b2 -> x + (b1 + b2)``: two bias adds become one.

    Relax writes a bias as a broadcast add of a vector. When: ``b1`` and ``b2``
    are parameter vectors of the same shape and dtype; with parameter folding
    ``b1 + b2`` becomes one new bias.
    """
    # Input
    x = pat.Wildcard()
    b1 = pat.Variable(ndim=1)
    b2 = pat.Variable(shape=b1.shape, dtype=b1.dtype)
    # Source pattern: (x + b1) + b2
    y1 = (x + b1) + b2
    # Target pattern: x + (b1 + b2)
    y2 = x + (b1 + b2)
    return Subst(y1, y2, name="bias_add_add")


def merge_element_wise() -> Subst:
    """``ew(x), ew(x) -> ew(x)``: the same element-wise op applied twice to one value is computed once.

    This is GSL's reading: two calls of one element-wise op (any op with the
    ``ELEMENT_WISE`` trait, ``relu``, ``exp``, ...) on the same input are merged
    and both uses read the one call. When: both calls are the same op with the
    same result type. Calls matched through one op trait must also agree on
    their attributes (leakyrelu's ``alpha``), which the merged call keeps.
    """
    # Input
    x = pat.Wildcard()
    # Source pattern: two calls of one element-wise op on x
    ew = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE)
    ew1 = ew(x)
    ew2 = ew(x, dtype=ew1.dtype)
    # Target pattern: one call, read by both
    merged = ew(x)
    return Subst([ew1, ew2], [merged, merged], name="merge_element_wise")


def merge_element_wise_variadic() -> Subst:
    """``ew(x), ew(x), ... -> ew(x)``: every call of one element-wise op on a value is merged into one.

    As :func:`merge_element_wise`, for two or more calls at once. A target
    variadic builds a fresh copy of its field per instance, so each output is
    a ``pat.Cond`` whose both branches are the one merged call (the frontend
    requires the field of a variadic to be one of its templates).
    """
    # Input
    x = pat.Wildcard()
    # Source pattern: element-wise calls of one op on x
    ew = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE)
    first = ew(x)
    call = ew(x, dtype=first.dtype)
    src = pat.Variadic(call, templates=[call], first=[first], min_len=2)
    # Target pattern: every output reads the one merged call
    merged = ew(x)
    i = attr.Symbol()
    same = pat.Cond(i >= 0, merged, merged)
    tgt = pat.Variadic(same, templates=[same], index=i)
    return Subst(src, tgt, name="merge_element_wise_variadic", symmetric=True)
