"""What one op call computes and moves: its floating-point operations (:func:`op_flops`) and
the bytes it reads and writes (:func:`op_bytes`), by table, and the time a roofline gives them
(:func:`roofline_seconds`); the analytic cost models (:class:`~gsl_eq.cost.model.Roofline`,
:class:`~gsl_eq.cost.gpu_cost.GPU`) price these, and a build that runs once is optimized by them
(:meth:`~gsl_eq.workload.Workload.once_target`)."""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Callable, Iterator, Mapping, Sequence

import tvm

from .types import TensorType, TupleType, Type

__all__ = ["VIEWS", "op_bytes", "op_flops", "roofline_seconds"]


# --------------------------------------------------------------------------- types


def _tensors(types: Type | Sequence[Type]) -> Iterator[TensorType]:
    """The tensors of a type or of a list of types, tuples flattened."""
    if isinstance(types, TensorType):
        yield types
    elif isinstance(types, TupleType):
        for field in types.fields:
            yield from _tensors(field)
    else:
        for ty in types:
            yield from _tensors(ty)


def _elements(types: Type | Sequence[Type]) -> int:
    """How many scalars the tensors of ``types`` hold."""
    return sum(math.prod(t.shape) for t in _tensors(types))


@functools.cache
def _itemsize(dtype: str) -> int:
    return tvm.DataType(dtype).itemsize


def _nbytes(types: Type | Sequence[Type]) -> int:
    """How many bytes the tensors of ``types`` occupy."""
    return sum(math.prod(t.shape) * _itemsize(t.dtype) for t in _tensors(types))


# --------------------------------------------------------------------------- FLOP rules

# A rule maps (attrs, input types, output type) to a number of floating-point operations.
FlopRule = Callable[[Mapping[str, Any], Sequence[Type], Type], float]


def _per_output(flops: float) -> FlopRule:
    """``flops`` per output element (element-wise ops)."""
    return lambda attrs, inputs, output: flops * _elements(output)


def _per_input(flops: float) -> FlopRule:
    """``flops`` per element of the first input (reductions, normalizations)."""
    return lambda attrs, inputs, output: flops * _elements(inputs[0])


def _layout_dim(layout: str, axis: str, shape: Sequence[int]) -> int:
    """The extent of ``axis`` (e.g. ``"O"``) in a tensor of ``layout``, packed sub-axes included
    (``OIHW4o``: O * 4)."""
    extent = 1
    for dim, (_, letter) in zip(shape, re.findall(r"(\d*)([A-Za-z])", layout)):
        if letter.upper() == axis:
            extent *= dim
    return extent


def _conv(attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
    """Convolution: each output element is a dot product over C/groups * kernel window,
    i.e. 2 * N*K*OH*OW * (C/groups)*KH*KW; the weight holds K * (C/groups)*KH*KW values."""
    weight = inputs[1]
    out_channels = _layout_dim(attrs.get("kernel_layout", "OIHW"), "O", weight.shape)
    return 2.0 * _elements(output) * math.prod(weight.shape) / out_channels


def _conv_transpose(attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
    """Transposed convolution: each input element is scattered onto K/groups * kernel window
    outputs; the weight (IOHW) holds C * (K/groups)*KH*KW values."""
    weight = inputs[1]
    in_channels = _layout_dim(attrs.get("kernel_layout", "IOHW"), "I", weight.shape)
    return 2.0 * _elements(inputs[0]) * math.prod(weight.shape) / in_channels


def _matmul(attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
    """Batched, broadcasting matmul: 2 * prod(batch) * M * N * K; the output holds prod(batch)*M*N."""
    return 2.0 * _elements(output) * inputs[0].shape[-1]


def _einsum(attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
    """Einsum: one multiply-add per operand at each point of the iteration space (all index letters)."""
    operands = list(_tensors(inputs))
    subscripts = str(attrs.get("subscripts", ""))
    lhs = subscripts.split("->")[0].split(",")
    if "." in subscripts or len(lhs) != len(operands):
        return _elements(output)
    extents: dict[str, int] = {}
    for letters, operand in zip(lhs, operands):
        extents.update(zip(letters.strip(), operand.shape))
    return float(len(operands) * math.prod(extents.values()))


def _attention(attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
    """Attention on (B, S, H, D) tensors: Q K^T and P V matmuls plus a softmax over B*H*S*S_kv scores."""
    (b, s, h, d), (_, s_kv, _, _), (_, _, _, d_v) = (t.shape for t in inputs[:3])
    scores = b * h * s * s_kv
    return 2.0 * scores * (d + d_v) + 5.0 * scores


def _pool(attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
    """Windowed pooling: one operation per output element and window position."""
    size = attrs.get("pool_size", 1)
    window = math.prod(size) if isinstance(size, (tuple, list)) else size
    return float(_elements(output) * window)


def _zero(attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
    return 0.0


def _names(*names: str) -> tuple[str, ...]:
    return tuple("relax." + n for n in names)


# Element-wise ops dearer than one operation per element (polynomial/iterative evaluations).
TRANSCENDENTAL_FLOPS = 4.0
_TRANSCENDENTAL = _names(
    "exp", "log", "tanh", "sigmoid", "erf", "sqrt", "rsqrt", "power", "sin", "cos", "tan", "sinh", "cosh",
    "asin", "acos", "atan", "asinh", "acosh", "atanh", "atan2", "log_add_exp",
    "nn.gelu", "nn.gelu_tanh", "nn.silu", "nn.softplus", "nn.selu",
)
_REDUCTIONS = _names(
    "sum", "mean", "max", "min", "prod", "variance", "std", "median", "argmax", "argmin",
    "cumsum", "cumprod", "collapse_sum_like", "collapse_sum_to",
    "nn.adaptive_avg_pool1d", "nn.adaptive_avg_pool2d", "nn.adaptive_avg_pool3d",
)
SOFTMAX_FLOPS = 5.0
NORM_FLOPS = 8.0
_NORMS = _names("nn.layer_norm", "nn.batch_norm", "nn.group_norm", "nn.instance_norm", "nn.rms_norm")
_POOLS = _names(*(f"nn.{kind}_pool{n}d" for kind in ("max", "avg") for n in (1, 2, 3)))

# Views: reinterpret the same buffer with another shape. No FLOPs and, by assumption, no
# copy (TVM lowers them to a view when it can), so a view costs the per-call overhead only.
VIEWS = frozenset(_names("reshape", "squeeze", "expand_dims", "flatten", "nn.batch_flatten"))
# Data movement: no FLOPs, but every input and output byte goes through memory.
_DATA_MOVEMENT = _names(
    "concat", "split", "stack", "permute_dims", "strided_slice", "dynamic_strided_slice", "take",
    "broadcast_to", "tile", "repeat", "flip", "layout_transform", "nn.pad", "nn.pixel_shuffle",
    "gather_elements", "gather_nd", "scatter_elements", "scatter_nd", "index_tensor", "slice_scatter",
    "nn.dropout", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "astype",
)

_FLOP_RULES: dict[str, FlopRule] = {
    **dict.fromkeys(_names("nn.conv1d", "nn.conv2d", "nn.conv3d"), _conv),
    **dict.fromkeys(_names("nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose"), _conv_transpose),
    "relax.matmul": _matmul,
    "relax.einsum": _einsum,
    "relax.nn.attention": _attention,
    "relax.ewise_fma": _per_output(2.0),
    **dict.fromkeys(_TRANSCENDENTAL, _per_output(TRANSCENDENTAL_FLOPS)),
    **dict.fromkeys(_REDUCTIONS, _per_input(1.0)),
    **dict.fromkeys(_names("nn.softmax", "nn.log_softmax"), _per_input(SOFTMAX_FLOPS)),
    **dict.fromkeys(_NORMS, _per_input(NORM_FLOPS)),
    **dict.fromkeys(_POOLS, _pool),
    **dict.fromkeys(VIEWS | set(_DATA_MOVEMENT), _zero),
}
# Any other op (add, relu, where, clip, ...) and any op unknown to the table: 1 FLOP per output element.
_DEFAULT_RULE = _per_output(1.0)


def op_flops(op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
    """Floating-point operations of one call (a multiply-add counts 2).

    Table-driven: convolutions, matmul, einsum and attention by their loop
    nests; element-wise ops 1 per output element (transcendental ones
    ``TRANSCENDENTAL_FLOPS``); reductions 1 per input element; softmax
    ``SOFTMAX_FLOPS`` and normalizations ``NORM_FLOPS`` per input element;
    pooling one per output element and window position; views and data
    movement 0. An op the table does not know counts as element-wise.

    Parameters
    ----------
    op
        The Relax op name (``"relax.nn.conv2d"``).
    attrs
        Its attributes.
    inputs
        The types of its data inputs, in order.
    output
        The type of its result.

    Examples
    --------
    ::

        t = TensorType((64, 64), "float32")
        op_flops("relax.matmul", {}, [t, t], t)    # 2 * 64**3
    """
    return float(_FLOP_RULES.get(op, _DEFAULT_RULE)(attrs, inputs, output))


def op_bytes(op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
    """Bytes one call moves through memory: all its input and output tensors, each read or
    written once; 0 for views (reshape, squeeze, expand_dims, flatten), which copy nothing.

    Parameters
    ----------
    op, attrs, inputs, output
        As in :func:`op_flops`.
    """
    if op in VIEWS:
        return 0.0
    return float(_nbytes(inputs) + _nbytes(output))


def roofline_seconds(op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type,
                     peak_flops: float = 50e9, bandwidth: float = 10e9, overhead: float = 2e-6) -> float:
    """One call's time by the roofline: ``max(flops / peak_flops, bytes / bandwidth) + overhead``
    (the defaults: a small 2-core CPU, see :class:`~gsl_eq.cost.model.Roofline`)."""
    compute = op_flops(op, attrs, inputs, output) / peak_flops
    memory = op_bytes(op, attrs, inputs, output) / bandwidth
    return max(compute, memory) + overhead
