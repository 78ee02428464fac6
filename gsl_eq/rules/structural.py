"""Structural rules: ops that undo each other (split/concat, transposes, reshapes) and tuple forwarding."""

from __future__ import annotations

from ..frontend import Subst, attr, op, pat
from ._common import arange


def split_concat() -> Subst:
    """``concat((split(x)[0], split(x)[1]), axis=a) -> x``, the split also along ``a``.

    When: the split has two parts (either ``indices_or_sections=2`` or one
    index) and the concat joins them in order along the split's axis.
    """
    # Input
    x = pat.Wildcard()
    # Source pattern: concat(split(x, axis=a), axis=a)
    split = op.Split(x, length=2)
    y1 = op.Concatenate((split[0], split[1]), axis=split.axis)
    # Target pattern: x
    y2 = x
    return Subst(y1, y2, name="split_concat")


def split_concat_variadic() -> Subst:
    """``concat((split(x)[0], ..., split(x)[n-1]), axis=a) -> x`` for a split into any number of parts.

    When: the concat joins the split's items in order along the split's axis and
    gives back ``x``'s shape (so no part is left out). A variadic pattern's example.
    """
    # Input
    x = pat.Wildcard()
    # Source pattern: concat(split(x, axis=a), axis=a)
    split = op.Split(x)
    i = attr.Symbol()
    item = split[i]
    y1 = op.Concatenate(pat.Variadic(item, templates=[item], index=i), axis=split.axis, shape=x.shape)
    # Target pattern: x
    y2 = x
    return Subst(y1, y2, name="split_concat_variadic")


def transpose_transpose() -> Subst:
    """``permute_dims(permute_dims(x, a1), a2) -> permute_dims(x, a)``, or ``x`` if ``a`` is the identity.

    ``a[d] = a1[a2[d]]``. Axes of ``None`` (reverse all dimensions) and negative axes are understood.
    Always applies; the composition is computed with ``attr.Map``.
    """
    # Input
    x = pat.Wildcard()
    # Source pattern: permute_dims(permute_dims(x, a1), a2)
    t1 = op.Transpose(x)
    t2 = op.Transpose(t1)
    # Target pattern: permute_dims(x, a1 . a2), or x
    n = x.ndim
    identity = arange(n)

    def axes(t: pat.Pattern) -> attr.AttrExpr:
        return attr.Cond(t.axes == None, attr.Reverse(identity), t.axes)  # noqa: E711  (builds an expression)

    a1 = axes(t1)
    composed = attr.Map(axes(t2), lambda d: a1[d] % n)
    y2 = pat.Cond(composed == identity, x, op.Transpose(x, axes=composed))
    return Subst(t2, y2, name="transpose_transpose")


def dispatch_tuple() -> Subst:
    """``(e_0, ..., e_n)[k] -> e_k``: items taken from a tuple built in the graph read its fields directly.

    This is GSL's ``dispatch_tuple``: the outputs are every ``GetItem`` of one
    tuple, each replaced by the field it selects, so the tuple goes away. When:
    the tuple is read only by item accesses (TVM's ``DecomposeOpsForInference``
    leaves such a tuple behind each batch norm).
    """
    # Source pattern: items of a tuple of anything
    x = pat.Wildcard()
    tup = pat.Variadic(x, templates=[x])
    item = pat.GetItem(tup, attr.Const(None))
    src = pat.Variadic(item, templates=[item])
    # Target pattern: the field each item selects
    i = attr.Symbol()
    field = tup(x, src(item, i).index)
    tgt = pat.Variadic(field, templates=[field], index=i)
    return Subst(src, tgt, name="dispatch_tuple")


def reshape_reshape() -> Subst:
    """``reshape(reshape(x, s1), s2) -> reshape(x, s2)``.

    Always applies (Relax resolves ``-1`` and ``0`` in a reshape's shape when it
    is built, so ``s2`` is the final shape).
    """
    # Input
    x = pat.Wildcard()
    # Source pattern: reshape(reshape(x))
    y1 = op.Reshape(op.Reshape(x))
    # Target pattern: reshape(x)
    y2 = op.Reshape(x, shape=y1.shape)
    return Subst(y1, y2, name="reshape_reshape")


def identity_reshape() -> Subst:
    """``reshape(x, s) -> x`` when ``s`` is already ``x``'s shape."""
    # Input
    x = pat.Wildcard()
    # Source pattern: reshape(x, x.shape)
    y1 = op.Reshape(x, shape=x.shape)
    # Target pattern: x
    return Subst(y1, x, name="identity_reshape")
