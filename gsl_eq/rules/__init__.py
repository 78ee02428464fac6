"""The rule library: GSL's rules in Relax terms, and rules mirroring TVM Relax passes.

Each rule is a function returning a fresh :class:`~gsl_eq.Subst` named after it;
the groups return lists of rules in the order a greedy run should try them
(variadic forms before their two-output forms)::

    from gsl_eq import rules
    wl = rules.diamond_conv_add()(wl)          # one rule, until no match is left
    result = gsl_eq.greedy.greedy(wl, rules.default())

Groups: :func:`structure` (ops undoing each other, tuple forwarding),
:func:`fusion` (merging convs, matmuls, element-wise ops, bias adds),
:func:`lowering` (norms to arithmetic), :func:`legalize` (what TVM cannot compile
into what it can), :func:`default` (a safe inference
pipeline), :func:`algebraic` (identities for saturate mode), :func:`ring`
(commutativity, associativity and distributivity of add and multiply, both ways:
a stress test for saturation limits), :func:`all` (every rule once),
:func:`tvm_equivalents` (the rules mirroring TVM passes, see :data:`TVM_PASSES`), :func:`layouts` (convs
and their chains channels-last), :func:`cpu` (forms and layouts TVM's CPU backend may run faster), :func:`taso` and
:func:`tensat` (TASO's verified substitutions, see :mod:`gsl_eq.rules.taso_equations`).
"""

from __future__ import annotations

from ..frontend import Subst
from .algebra import (
    add_associative,
    add_associative_left,
    add_commutative,
    algebraic,
    concat_of_element_wise,
    element_wise_over_concat,
    matmul_associative,
    matmul_distributes_left,
    matmul_distributes_right,
    matmul_factor_left,
    mul_associative,
    mul_associative_left,
    mul_commutative,
    mul_distributes,
    mul_factors,
    ring,
)
from .broadcast import (
    concat_of_broadcast,
    concat_of_broadcast_variadic,
    parallel_conv_bias_act_variadic,
    parallel_conv_bias_variadic,
    parallel_conv_expand_kernels_bias_act,
    split_of_broadcast,
    split_of_broadcast_variadic,
    split_of_element_wise,
    split_of_split_broadcast,
)
from .cpu_forms import (channel_shuffle_as_take, conv1x1_as_matmul, split_of_channel_shuffle,
                        strided_conv1x1_as_matmul)
from .layout import (
    adaptive_pool_of_nchw,
    avg_pool_of_nchw,
    broadcast_of_nchw,
    concat_of_nchw,
    concat_of_nchw_right,
    conv_nhwc,
    element_wise_of_nchw,
    layouts,
    max_pool_of_nchw,
)
from .conv import (
    conv_mul,
    conv_shortcut_add,
    diamond_conv_add,
    parallel_conv,
    parallel_conv_expand_kernels,
    parallel_conv_variadic,
    parallel_group_conv_variadic,
    two_conv_add,
)
from .legalization import bool_cumsum, bool_equal
from .elementwise import bias_add_add, bias_add_right, merge_element_wise, merge_element_wise_variadic
from .matmul import parallel_matmul, parallel_matmul_variadic
from .norm import conv_batch_norm, conv_bias_batch_norm, lower_batch_norm, lower_layer_norm
from .structural import (
    dispatch_tuple,
    identity_reshape,
    reshape_reshape,
    split_concat,
    split_concat_variadic,
    transpose_transpose,
)
from .taso_equations import taso, tensat
from .tvm_passes import TVM_PASSES, parallel_matmul_bias_variadic

__all__ = [
    "add_associative", "add_associative_left", "add_commutative", "algebraic", "concat_of_element_wise",
    "element_wise_over_concat", "matmul_associative", "matmul_distributes_left", "matmul_distributes_right",
    "matmul_factor_left", "mul_associative", "mul_associative_left", "mul_commutative", "mul_distributes",
    "mul_factors", "ring",
    "concat_of_broadcast", "concat_of_broadcast_variadic", "split_of_broadcast", "split_of_broadcast_variadic",
    "split_of_element_wise", "split_of_split_broadcast", "parallel_conv_bias_act_variadic", "parallel_conv_bias_variadic",
    "parallel_conv_expand_kernels_bias_act",
    "adaptive_pool_of_nchw", "avg_pool_of_nchw", "broadcast_of_nchw", "concat_of_nchw", "concat_of_nchw_right",
    "conv_nhwc", "element_wise_of_nchw", "layouts", "max_pool_of_nchw",
    "TVM_PASSES", "all", "channel_shuffle_as_take", "conv1x1_as_matmul", "cpu", "split_of_channel_shuffle", "strided_conv1x1_as_matmul", "bias_add_add", "bias_add_right", "bool_cumsum", "bool_equal", "conv_batch_norm", "conv_bias_batch_norm", "conv_mul", "conv_shortcut_add", "default",
    "diamond_conv_add", "dispatch_tuple", "fusion", "identity_reshape", "lower_batch_norm", "lower_layer_norm",
    "legalize", "lowering", "merge_element_wise", "merge_element_wise_variadic", "parallel_conv", "parallel_conv_expand_kernels",
    "parallel_conv_variadic", "parallel_group_conv_variadic", "parallel_matmul", "parallel_matmul_bias_variadic",
    "parallel_matmul_variadic", "reshape_reshape", "split_concat", "split_concat_variadic", "structure",
    "taso", "tensat", "transpose_transpose", "tvm_equivalents", "two_conv_add",
]


def structure() -> list[Subst]:
    """Ops that undo each other, and tuples built only to be taken apart."""
    return [split_concat_variadic(), split_concat(), transpose_transpose(), reshape_reshape(), identity_reshape(),
            dispatch_tuple()]


def fusion() -> list[Subst]:
    """Rules merging convs, matmuls, bias adds and element-wise calls into fewer ops."""
    return [
        bias_add_right(), conv_batch_norm(), conv_bias_batch_norm(), conv_mul(), bias_add_add(), diamond_conv_add(), conv_shortcut_add(), two_conv_add(),
        parallel_conv_bias_act_variadic(), parallel_conv_bias_variadic(),
        parallel_conv_variadic(), parallel_conv(), parallel_group_conv_variadic(), parallel_conv_expand_kernels_bias_act(),
        parallel_conv_expand_kernels(),
        parallel_matmul_bias_variadic(), parallel_matmul_variadic(), parallel_matmul(),
        merge_element_wise_variadic(), merge_element_wise(),
        split_of_broadcast_variadic(), split_of_broadcast(), split_of_split_broadcast(), split_of_element_wise(),
    ]


def legalize() -> list[Subst]:
    """Rules rewriting what TVM cannot compile into an equal computation it can."""
    return [bool_cumsum(), bool_equal()]


def lowering() -> list[Subst]:
    """Rules lowering normalization ops to element-wise arithmetic."""
    return [lower_batch_norm(), lower_layer_norm()]


def default() -> list[Subst]:
    """A safe inference pipeline: legalization, structural clean-up, batch norms folded or lowered,
    and fusions that never add work (no activation copies, no zero-padded kernels)."""
    return [
        *legalize(),
        *structure(),
        bias_add_right(), conv_batch_norm(), conv_bias_batch_norm(), lower_batch_norm(), conv_mul(), bias_add_add(), diamond_conv_add(),
        conv_shortcut_add(),
        parallel_conv_bias_act_variadic(), parallel_conv_bias_variadic(), parallel_conv_variadic(),
        parallel_matmul_bias_variadic(), parallel_matmul_variadic(),
        merge_element_wise_variadic(), split_of_broadcast_variadic(), split_of_split_broadcast(), split_of_element_wise(),
    ]


def cpu() -> list[Subst]:
    """Forms and layouts TVM's CPU backend may run faster, for a cost model that sees its kernels
    (``cost="tvm"``) or measured selection: a 1x1 conv as a matrix product
    (:mod:`~gsl_eq.rules.cpu_forms`), a channel shuffle as a gather, and convs with their chains
    channels-last (:func:`layouts`).
    What ``optimize(wl, cost="tvm")`` adds to :func:`default` in saturate mode."""
    return [conv1x1_as_matmul(), strided_conv1x1_as_matmul(), split_of_channel_shuffle(), channel_shuffle_as_take(),
            *layouts()]


def all() -> list[Subst]:  # noqa: A001  (rules.all(), as the groups are named)
    """Every rule of the library once, but the algebraic identities (greedily, the symmetric
    ones would never stop; saturate mode takes them with :func:`algebraic`)."""
    cpu_only = [r for r in cpu() if r.name != "transpose_transpose"]  # structure() has it
    return [*legalize(), *structure(), *fusion(), *lowering(), *cpu_only]


def tvm_equivalents() -> list[Subst]:
    """The rules mirroring TVM's CombineParallelMatmul, FoldBatchnormToConv2D,
    DecomposeOpsForInference and RemoveRedundantReshape (see :data:`TVM_PASSES`)."""
    return [make() for makers in TVM_PASSES.values() for make in makers]
