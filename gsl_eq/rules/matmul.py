"""Matmul rules: matmuls sharing their left operand become one, split back (GSL's parallel dense)."""

from __future__ import annotations

from ..frontend import Subst, op, pat
from ._common import concat_each, split_back


def parallel_matmul() -> Subst:
    """``x @ w1, x @ w2 -> split(x @ concat(w1, w2, axis=1), axis=-1)``.

    When: ``w1`` and ``w2`` are 2-d parameters with the same number of rows and
    dtype, and the matmuls have the same ``out_dtype``; column counts may differ.
    """
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable(ndim=2)
    w2 = pat.Variable(shape=(w1.shape[0], None), dtype=w1.dtype)
    # Source pattern
    mm1 = op.MatMul(x, w1)
    mm2 = op.MatMul(x, w2, out_dtype=mm1.out_dtype)
    # Target pattern
    mm = op.MatMul(x, op.Concatenate((w1, w2), axis=1), out_dtype=mm1.out_dtype)
    split = op.Split(mm, indices_or_sections=(w1.shape[1],), axis=-1)
    return Subst([mm1, mm2], [split[0], split[1]], name="parallel_matmul")


def parallel_matmul_variadic() -> Subst:
    """Any number (at least two) of ``x @ w_k`` -> ``split(x @ concat(w_1, ..., w_n, axis=1), axis=-1)``.

    When: as :func:`parallel_matmul`, for every ``w_k``.
    """
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable(ndim=2)
    w = pat.Variable(shape=(w1.shape[0], None), dtype=w1.dtype)
    # Source pattern
    mm1 = op.MatMul(x, w1)
    mm = op.MatMul(x, w, out_dtype=mm1.out_dtype)
    src = pat.Variadic(mm, templates=[mm, w], first=[mm1, w1], min_len=2)
    # Target pattern
    concat = concat_each(src, w, axis=1)
    mm = op.MatMul(x, concat, out_dtype=mm1.out_dtype)
    tgt = split_back(mm, src, w, 1, axis=-1)
    return Subst(src, tgt, name="parallel_matmul_variadic", symmetric=True)
