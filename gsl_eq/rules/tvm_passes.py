"""GSL rules doing what TVM Relax's hand-written passes do.

:data:`TVM_PASSES` pairs each pass with the rules that mirror it, in the order
to apply them; the tests run both on the same module and compare.

=============================  ===============================================
TVM pass                       GSL rules
=============================  ===============================================
CombineParallelMatmul          :func:`parallel_matmul_bias_variadic`,
                               :func:`~gsl_eq.rules.matmul.parallel_matmul_variadic`
FoldBatchnormToConv2D          :func:`~gsl_eq.rules.norm.conv_batch_norm`
DecomposeOpsForInference       :func:`~gsl_eq.rules.norm.lower_batch_norm`
RemoveRedundantReshape         :func:`~gsl_eq.rules.structural.reshape_reshape`,
                               :func:`~gsl_eq.rules.structural.identity_reshape`
=============================  ===============================================

CombineParallelMatmul also carries activations (relu, gelu, silu) through the
combined matmul; the rules here combine matmuls and their bias adds.
"""

from __future__ import annotations

from typing import Callable

from ..frontend import Subst, op, pat
from ._common import concat_each, split_back
from .matmul import parallel_matmul_variadic
from .norm import conv_batch_norm, lower_batch_norm
from .structural import identity_reshape, reshape_reshape


def parallel_matmul_bias_variadic() -> Subst:
    """``x @ w_k + b_k`` for two or more ``k`` -> ``split(x @ concat(w) + concat(b), axis=-1)``.

    When: as :func:`~gsl_eq.rules.matmul.parallel_matmul_variadic`, each matmul
    followed by the add of a parameter vector ``b_k`` with one entry per column
    of ``w_k``.
    """
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable(ndim=2)
    b1 = pat.Variable(shape=(w1.shape[1],), dtype=w1.dtype)
    w = pat.Variable(shape=(w1.shape[0], None), dtype=w1.dtype)
    b = pat.Variable(shape=(w.shape[1],), dtype=w1.dtype)
    # Source pattern: x @ w_k + b_k
    mm1 = op.MatMul(x, w1)
    y1 = mm1 + b1
    mm = op.MatMul(x, w, out_dtype=mm1.out_dtype)
    y = mm + b
    src = pat.Variadic(y, templates=[y, mm, w, b], first=[y1, mm1, w1, b1], min_len=2)
    # Target pattern: split(x @ concat(w) + concat(b))
    weights = concat_each(src, w, axis=1)
    biases = concat_each(src, b, axis=0)
    combined = op.MatMul(x, weights, out_dtype=mm1.out_dtype) + biases
    tgt = split_back(combined, src, w, 1, axis=-1)
    return Subst(src, tgt, name="parallel_matmul_bias_variadic", symmetric=True)


#: TVM pass name -> the functions building the rules that do its work, in order.
TVM_PASSES: dict[str, tuple[Callable[[], Subst], ...]] = {
    "CombineParallelMatmul": (parallel_matmul_bias_variadic, parallel_matmul_variadic),
    "FoldBatchnormToConv2D": (conv_batch_norm,),
    "DecomposeOpsForInference": (lower_batch_norm,),
    "RemoveRedundantReshape": (reshape_reshape, identity_reshape),
}
