"""Cost models: what one op call costs, so that extraction can pick the cheapest graph.

A cost model is any object with a ``name`` and a ``__call__(op, attrs, inputs,
output) -> float`` (:class:`CostModel`). It is asked about op calls only: the
extractor charges nothing for variables, constants, tuples and tuple
projections. A model must be a pure function of its arguments, so callers may
cache its answers. Five models are provided:

- :class:`OpCount` — 1 per call: the smallest graph wins;
- :class:`Roofline` — analytic seconds: FLOPs against a peak rate, bytes moved
  against a memory bandwidth, plus a fixed per-call overhead;
- :class:`Measured` — seconds measured by building and timing each distinct
  call alone with TVM's default (unscheduled) CPU build, remembered in an on-disk cache;
- :class:`~gsl_eq.extract.tvm_cost.TVMCost` (``"tvm"``) — seconds as TVM runs the graph:
  fused kernels, each scheduled by a :class:`~gsl_eq.schedule_db.ScheduleDatabase`;
- :class:`~gsl_eq.extract.gpu_cost.GPU` (``"gpu"``) — analytic seconds on a GPU preset (V100,
  A100): kernels by roofline plus a launch, element-wise epilogues fused, views and splits free.

:func:`graph_cost` sums a model over a graph (or asks the model, when it prices
whole graphs itself); :func:`get_cost_model` turns a name (``"opcount"``,
``"roofline"``, ``"measured"``, ``"tvm"``, ``"gpu"``) into a model.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np
import tvm
from tvm import relax

from ..disk_cache import JsonCache, default_cache_dir
from ..graph import Graph, Kind
from ..graph.ops import make_call
from ..graph.relax_bridge import function_of
from ..graph.types import TensorType, TupleType, Type

__all__ = [
    "COST_MODELS", "CostModel", "Measured", "OpCount", "Roofline",
    "display_unit", "get_cost_model", "graph_cost", "op_bytes", "op_flops", "speedup",
]


@runtime_checkable
class CostModel(Protocol):
    """The cost of one op call.

    ``op`` is a Relax op name (``"relax.nn.conv2d"``); ``attrs`` its plain,
    canonical attributes (see :mod:`gsl_eq.graph.ops`); ``inputs`` the types of
    its data inputs in order; ``output`` the type of its result. Costs are
    non-negative and add up over the calls of a graph.
    """

    name: str

    def __call__(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float: ...


def graph_cost(graph: Graph, model: CostModel | str) -> float:
    """The sum of ``model`` over every op call of ``graph`` (other nodes cost nothing), or
    ``model.graph_cost(graph)`` when the model prices whole graphs (``"tvm"``: by the kernels
    TVM fuses them into).

    ``model`` is a cost model or a name accepted by :func:`get_cost_model`.
    """
    model = get_cost_model(model)
    if callable(getattr(model, "graph_cost", None)):
        return float(model.graph_cost(graph))
    return float(sum(
        model(node.op, node.attrs, [i.type for i in node.inputs], node.type)
        for node in graph.rpo() if node.kind is Kind.CALL
    ))


# --------------------------------------------------------------------------- OpCount


class OpCount:
    """Every op call costs 1: the cost of a graph is its number of calls."""

    name = "opcount"

    def __call__(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        return 1.0

    def __repr__(self) -> str:
        return "OpCount()"


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
    """
    return float(_FLOP_RULES.get(op, _DEFAULT_RULE)(attrs, inputs, output))


def op_bytes(op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
    """Bytes one call moves through memory: all its input and output tensors, each read or
    written once; 0 for views (reshape, squeeze, expand_dims, flatten), which copy nothing."""
    if op in VIEWS:
        return 0.0
    return float(_nbytes(inputs) + _nbytes(output))


# --------------------------------------------------------------------------- Roofline


class Roofline:
    """Analytic time of a call, in seconds: ``max(flops / peak_flops, bytes / bandwidth) + overhead``.

    The defaults describe a small 2-core CPU: ``peak_flops`` 50 GFLOP/s
    (2 cores x ~3 GHz x 8 float32 FMA lanes, achieved rather than theoretical),
    ``bandwidth`` 10 GB/s of DRAM traffic and ``overhead`` 2 µs per call
    (VM dispatch and kernel launch). FLOPs and bytes are :func:`op_flops` and
    :func:`op_bytes`.
    """

    name = "roofline"

    def __init__(self, peak_flops: float = 50e9, bandwidth: float = 10e9, overhead: float = 2e-6):
        if peak_flops <= 0 or bandwidth <= 0 or overhead < 0:
            raise ValueError(f"Roofline needs peak_flops > 0, bandwidth > 0 and overhead >= 0, "
                             f"got {peak_flops}, {bandwidth}, {overhead}")
        self.peak_flops = float(peak_flops)
        self.bandwidth = float(bandwidth)
        self.overhead = float(overhead)

    def __call__(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        compute = op_flops(op, attrs, inputs, output) / self.peak_flops
        memory = op_bytes(op, attrs, inputs, output) / self.bandwidth
        return max(compute, memory) + self.overhead

    def __repr__(self) -> str:
        return f"Roofline(peak_flops={self.peak_flops:g}, bandwidth={self.bandwidth:g}, overhead={self.overhead:g})"


# --------------------------------------------------------------------------- Measured


def _type_key(ty: Type) -> str:
    if isinstance(ty, TupleType):
        return "(" + ",".join(_type_key(f) for f in ty.fields) + ")"
    return f"{ty.dtype}[{','.join(map(str, ty.shape))}]"


class Measured:
    """Measured time of a call, in seconds, on the CPU.

    Each distinct (op, attrs, input types) is built alone as a Relax function
    with TVM for ``target``, run on random inputs with TVM's time evaluator
    (``number`` runs per repeat, ``repeat`` repeats, the fastest repeat kept),
    and remembered in ``<cache_dir>/measured.json`` (default
    :func:`~gsl_eq.disk_cache.default_cache_dir`), so later runs and other instances reuse it.
    The file is rewritten atomically, merged with what other instances wrote
    meanwhile. ``measurements`` counts the timings this instance actually ran.

    A call TVM cannot build or run is charged its :class:`Roofline` estimate
    (with a warning, counted in ``failures``, not written to the cache).
    """

    name = "measured"
    CACHE_FILE = "measured.json"
    _FORMAT = 1

    def __init__(self, target: str = "llvm", cache_dir: str | os.PathLike[str] | None = None,
                 number: int = 5, repeat: int = 3, seed: int = 0):
        self.target = str(target)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.number = int(number)
        self.repeat = int(repeat)
        self.seed = seed
        self.measurements = 0
        self.failures = 0
        self._fallback = Roofline()
        self._failed: dict[str, float] = {}
        self._cache = JsonCache(self.cache_dir, self.CACHE_FILE, self._FORMAT, field="times")
        self._times: dict[str, float] = self._read()

    @property
    def cache_path(self) -> Path:
        return self._cache.path

    def key(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type]) -> str:
        """The cache key of a call: target, op, sorted attributes and input types, as stable JSON."""
        return json.dumps(
            [self.target, op, sorted((k, v) for k, v in attrs.items()), [_type_key(t) for t in inputs]],
            separators=(",", ":"), default=str,
        )

    def __call__(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        key = self.key(op, attrs, inputs)
        if key in self._times:
            return self._times[key]
        if key in self._failed:
            return self._failed[key]
        self._times.update(self._read())  # another instance may have measured it meanwhile
        if key in self._times:
            return self._times[key]
        try:
            seconds = self.measure(op, attrs, inputs)
        except Exception as err:  # noqa: BLE001 - any TVM failure: fall back, don't break extraction
            self.failures += 1
            estimate = self._failed[key] = self._fallback(op, attrs, inputs, output)
            first = (str(err).strip().splitlines() or [type(err).__name__])[-1]
            warnings.warn(f"cannot measure {op}{dict(attrs)} on {[str(t) for t in inputs]} ({first}); "
                          f"using the roofline estimate {estimate:.3g} s", RuntimeWarning, stacklevel=2)
            return estimate
        self.measurements += 1
        self._times[key] = seconds
        self._write({key: seconds})
        return seconds

    def measure(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type]) -> float:
        """Build and time one call now (no cache); seconds per call, fastest repeat."""
        mod = function_of(inputs, lambda args: make_call(op, args, attrs))
        dev = tvm.cpu()
        vm = relax.VirtualMachine(relax.build(mod, target=self.target), dev)
        rng = np.random.default_rng(self.seed)
        values = [tvm.runtime.tensor(_random_input(t, rng), dev) for t in _tensors(list(inputs))]
        timer = vm.time_evaluator("main", dev, number=self.number, repeat=self.repeat)
        return float(timer(*values).min)

    def _read(self) -> dict[str, float]:
        """The cache on disk; empty when missing or unreadable."""
        return {k: float(v) for k, v in self._cache.read().items()}

    def _write(self, new: Mapping[str, float]) -> None:
        """Merge ``new`` into the cache on disk (see :class:`~gsl_eq.disk_cache.JsonCache`)."""
        self._times.update({k: float(v) for k, v in self._cache.merge(new).items()})

    def __repr__(self) -> str:
        return f"Measured(target={self.target!r}, cache_dir={str(self.cache_dir)!r}, number={self.number}, repeat={self.repeat})"


def _random_input(ty: TensorType, rng: np.random.Generator) -> np.ndarray:
    """Values valid for any op: floats in [0.1, 0.9) (inside the domain of log, sqrt, acos, ...),
    zeros for integers and booleans (always valid indices)."""
    if "float" in ty.dtype:
        return rng.uniform(0.1, 0.9, ty.shape).astype(ty.dtype)
    return np.zeros(ty.shape, dtype=ty.dtype)


# --------------------------------------------------------------------------- units


def display_unit(unit: str) -> tuple[str, float]:
    """The unit tables show costs of ``unit`` in, and the factor from ``unit`` to it: seconds as
    microseconds ("us", as the command line prints them)."""
    return ("us", 1e6) if unit == "s" else (unit, 1.0)


def speedup(before: float, after: float) -> float:
    """``before / after``: above 1 when ``after`` is cheaper; the one direction every table uses."""
    if after == 0:
        return math.nan if before == 0 else math.inf
    return before / after


# --------------------------------------------------------------------------- by name


def _tvm_cost() -> CostModel:
    from .tvm_cost import TVMCost  # it schedules kernels: imported only when asked for

    return TVMCost()


def _gpu_cost() -> CostModel:
    from .gpu_cost import GPU

    return GPU()


COST_MODELS: dict[str, Callable[[], CostModel]] = {
    "opcount": OpCount, "roofline": Roofline, "measured": Measured, "tvm": _tvm_cost, "gpu": _gpu_cost,
}


def get_cost_model(name_or_model: str | CostModel) -> CostModel:
    """A cost model: a fresh default instance for a name (``"opcount"``, ``"roofline"``,
    ``"measured"``, ``"tvm"``, ``"gpu"``, any case), or ``name_or_model`` itself when it already is a model.

    Raises ``ValueError`` naming the valid choices otherwise.
    """
    if isinstance(name_or_model, str):
        factory = COST_MODELS.get(name_or_model.strip().lower())
        if factory is None:
            raise ValueError(f"unknown cost model {name_or_model!r}; choose one of {', '.join(COST_MODELS)}")
        return factory()
    if isinstance(name_or_model, CostModel) and callable(name_or_model):
        return name_or_model
    raise ValueError(f"{name_or_model!r} is not a cost model; pass one of {', '.join(COST_MODELS)} "
                     f"or an object with a `name` and a `__call__(op, attrs, inputs, output)`")
