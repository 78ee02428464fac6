"""Cost models: what one op call costs, so that extraction can pick the cheapest graph.

A cost model is any object with a ``name`` and a ``__call__(op, attrs, inputs,
output) -> float`` (:class:`CostModel`). It is asked about op calls only: the
extractor charges nothing for variables, constants, tuples and tuple
projections. A model must be a pure function of its arguments, so callers may
cache its answers. Six models are provided:

- :class:`OpCount` — 1 per call: the smallest graph wins;
- :class:`Roofline` — analytic seconds: FLOPs against a peak rate, bytes moved
  against a memory bandwidth, plus a fixed per-call overhead;
- :class:`Measured` — seconds measured by building and timing each distinct
  call alone with TVM's default (unscheduled) CPU build, remembered in an on-disk cache;
- :class:`~gsl_eq.cost.tvm_cost.TVMCost` (``"tvm"``) — seconds as TVM runs the graph:
  fused kernels, each scheduled by a :class:`~gsl_eq.measure.schedule_db.ScheduleDatabase`;
- :class:`~gsl_eq.cost.gpu_cost.GPU` (``"gpu"``) — analytic seconds on a GPU preset (V100,
  A100): kernels by roofline plus a launch, element-wise epilogues fused, views and splits free;
- :class:`~gsl_eq.cost.torch_cost.MeasuredGPU` (``"gpu-measured"``) — the same with each
  kernel timed on a CUDA GPU with PyTorch, as TASO times cuDNN.

:func:`graph_cost` sums a model over a graph (or asks the model, when it prices
whole graphs itself); :func:`get_cost_model` turns a name (``"opcount"``,
``"roofline"``, ``"measured"``, ``"tvm"``, ``"gpu"``, ``"gpu-measured"``) into a model.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np
import tvm
from tvm import relax

from ..measure.disk_cache import default_cache_dir
from ..graph import Graph, Kind, Node
from ..graph.ops import make_call
from ..graph.relax_bridge import function_of
from ..graph.types import Type
from ..graph.work import _tensors, op_bytes, op_flops, roofline_seconds
from ..extract.extractors import ENodeCost, dag_cost
from ..extract.fusion import call_fusion, fuses
from .timings import MeasuredTimes, TimedCalls, call_key, call_name, random_input

__all__ = [
    "COST_MODELS", "CostModel", "Measured", "OpCount", "Roofline",
    "display_unit", "fused_graph_cost", "get_cost_model", "graph_cost", "op_bytes", "op_flops", "speedup",
]


@runtime_checkable
class CostModel(Protocol):
    """The cost of one op call.

    ``op`` is a Relax op name (``"relax.nn.conv2d"``); ``attrs`` its plain,
    canonical attributes (see :mod:`gsl_eq.graph.ops`); ``inputs`` the types of
    its data inputs in order; ``output`` the type of its result. Costs are
    non-negative and add up over the calls of a graph. Any object with these two members is
    one (the protocol is checked with ``isinstance``); ``unit``, ``graph_cost(graph)`` and the
    fusion methods of :class:`~gsl_eq.cost.gpu_cost.GPU` are optional.

    Attributes
    ----------
    name
        The model's name, for reports.

    Examples
    --------
    Every call a launch of 10 us plus its work at 1 TFLOP/s and 100 GB/s::

        class Launches:
            name = "launches"

            def __call__(self, op, attrs, inputs, output):
                return 1e-5 + max(op_flops(op, attrs, inputs, output) / 1e12,
                                  op_bytes(op, attrs, inputs, output) / 1e11)

        optimize(wl, rules.default(), cost=Launches())
    """

    name: str

    def __call__(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        """The cost of one call of ``op``.

        Parameters
        ----------
        op
            The Relax op name.
        attrs
            Its plain, canonical attributes.
        inputs
            The types of its data inputs, in order.
        output
            The type of its result.
        """
        ...


def graph_cost(graph: Graph, model: CostModel | str) -> float:
    """The sum of ``model`` over every op call of ``graph`` (other nodes cost nothing);
    ``model.graph_cost(graph)`` when the model prices whole graphs (``"tvm"``: by the kernels
    TVM fuses them into); for a model that prices fusion (:func:`~.fusion.fuses`, ``"gpu"``),
    :func:`fused_graph_cost`.

    Parameters
    ----------
    graph
        The graph to price.
    model
        A cost model or a name accepted by :func:`get_cost_model`.
    """
    model = get_cost_model(model)
    if callable(getattr(model, "graph_cost", None)):
        return float(model.graph_cost(graph))
    if fuses(model):
        return fused_graph_cost(graph, model)
    return float(sum(
        model(node.op, node.attrs, [i.type for i in node.inputs], node.type)
        for node in graph.rpo() if node.kind is Kind.CALL
    ))


def fused_graph_cost(graph: Graph, model: CostModel) -> float:
    """``graph`` under a model that prices fusion, as extraction prices a chosen graph: each
    node an e-class of one e-node (:func:`~.fusion.call_fusion`), the fusions that save most
    taken (:func:`~.extractors.dag_cost`)."""
    egraph: dict[Node, list[ENodeCost]] = {}
    for node in graph.rpo():
        children = tuple(node.inputs)
        if node.kind is not Kind.CALL:
            egraph[node] = [ENodeCost(0.0, children)]
            continue
        inputs = [i.type for i in children]
        cost = float(model(node.op, node.attrs, inputs, node.type))
        distinct = list(dict.fromkeys(children))
        groups = tuple(tuple(k for k, i in enumerate(children) if i is child) for child in distinct)
        opens, savings, prologue = call_fusion(model, node.op, node.attrs, inputs, node.type, groups, cost)
        fusible = tuple((child, saving) for child, saving in zip(distinct, savings) if saving > 0)
        egraph[node] = [ENodeCost(cost, children, node.op, opens, fusible, prologue)]
    return dag_cost(egraph, list(graph.outputs), dict.fromkeys(egraph, 0))


# --------------------------------------------------------------------------- OpCount


class OpCount:
    """Every op call costs 1: the cost of a graph is its number of calls (``cost="opcount"``);
    its unit is ``"op calls"``."""

    name = "opcount"

    def __call__(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        return 1.0

    def __repr__(self) -> str:
        return "OpCount()"


# --------------------------------------------------------------------------- Roofline


class Roofline:
    """Analytic time of a call, in seconds: ``max(flops / peak_flops, bytes / bandwidth) + overhead``.

    The defaults describe a small 2-core CPU: ``peak_flops`` 50 GFLOP/s
    (2 cores x ~3 GHz x 8 float32 FMA lanes, achieved rather than theoretical),
    ``bandwidth`` 10 GB/s of DRAM traffic and ``overhead`` 2 µs per call
    (VM dispatch and kernel launch). FLOPs and bytes are :func:`op_flops` and
    :func:`op_bytes`.

    Parameters
    ----------
    peak_flops
        FLOP/s; above 0.
    bandwidth
        Bytes/s; above 0.
    overhead
        Seconds per call; at least 0.

    Raises
    ------
    ValueError
        A value out of those ranges.

    Examples
    --------
    ::

        optimize(wl, rules.default(), cost=Roofline(peak_flops=1e12, bandwidth=100e9))
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
        return roofline_seconds(op, attrs, inputs, output, self.peak_flops, self.bandwidth, self.overhead)

    def __repr__(self) -> str:
        return f"Roofline(peak_flops={self.peak_flops:g}, bandwidth={self.bandwidth:g}, overhead={self.overhead:g})"


# --------------------------------------------------------------------------- Measured


class Measured(TimedCalls):
    """Measured time of a call, in seconds, on the CPU.

    Each distinct (op, attrs, input types) is built alone as a Relax function
    with TVM for ``target``, run on random inputs with TVM's time evaluator
    (``number`` runs per repeat, ``repeat`` repeats, the fastest repeat kept),
    and remembered in ``<cache_dir>/measured.json`` (default
    :func:`~gsl_eq.measure.disk_cache.default_cache_dir`), so later runs and other instances reuse it.
    The file is rewritten atomically, merged with what other instances wrote
    meanwhile. ``measurements`` counts the timings this instance actually ran.

    A call TVM cannot build or run is charged its :class:`Roofline` estimate
    (with a warning, counted in ``failures``, not written to the cache).

    Parameters
    ----------
    target
        The TVM target the calls are built for.
    cache_dir
        The folder of the cache file; None: the default cache folder.
    number
        Runs per repeat.
    repeat
        Repeats; the fastest is kept.
    seed
        The seed of the random inputs.
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
        self._fallback = Roofline()
        self._times = MeasuredTimes(self.cache_dir, self.CACHE_FILE, self._FORMAT, estimate="the roofline estimate")

    def key(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type]) -> str:
        """The cache key of a call: target, op, sorted attributes and input types, as stable JSON.

        Parameters
        ----------
        op, attrs, inputs
            As in :meth:`CostModel.__call__`.
        """
        return call_key(self.target, op, attrs, inputs)

    def __call__(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        return self._times.seconds(self.key(op, attrs, inputs), lambda: self.measure(op, attrs, inputs),
                                   lambda: self._fallback(op, attrs, inputs, output), call_name(op, attrs, inputs))

    def measure(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type]) -> float:
        """Build and time one call now (no cache); seconds per call, fastest repeat.

        Parameters
        ----------
        op, attrs, inputs
            As in :meth:`CostModel.__call__`.
        """
        mod = function_of(inputs, lambda args: make_call(op, args, attrs))
        dev = tvm.cpu()
        vm = relax.VirtualMachine(relax.build(mod, target=self.target), dev)
        rng = np.random.default_rng(self.seed)
        values = [tvm.runtime.tensor(random_input(t, rng), dev) for t in _tensors(list(inputs))]
        timer = vm.time_evaluator("main", dev, number=self.number, repeat=self.repeat)
        return float(timer(*values).min)

    def __repr__(self) -> str:
        return f"Measured(target={self.target!r}, cache_dir={str(self.cache_dir)!r}, number={self.number}, repeat={self.repeat})"


# --------------------------------------------------------------------------- units


def display_unit(unit: str) -> tuple[str, float]:
    """The unit tables show costs of ``unit`` in, and the factor from ``unit`` to it: seconds as
    microseconds ("us", as the command line prints them); any other unit as it is, factor 1.

    Parameters
    ----------
    unit
        A unit, as :func:`cost_unit` gives it.

    Examples
    --------
    ::

        unit, factor = display_unit(cost_unit(model))    # ("us", 1e6) for seconds
        print(f"{cost * factor:.1f} {unit}")
    """
    return ("us", 1e6) if unit == "s" else (unit, 1.0)


def speedup(before: float, after: float) -> float:
    """``before / after``: above 1 when ``after`` is cheaper; the one direction every table uses.
    An ``after`` of 0 gives infinity (NaN if ``before`` is 0 too).

    Parameters
    ----------
    before, after
        The two costs.
    """
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


def _gpu_measured_cost() -> CostModel:
    from .torch_cost import MeasuredGPU  # it imports PyTorch: only when asked for

    return MeasuredGPU()


COST_MODELS: dict[str, Callable[[], CostModel]] = {
    "opcount": OpCount, "roofline": Roofline, "measured": Measured, "tvm": _tvm_cost, "gpu": _gpu_cost,
    "gpu-measured": _gpu_measured_cost,
}

#: The built-in cost models that build and time kernels: their timing is outside a call's time limit,
#: and they are not used for extra candidates unless asked for.
MEASURING = ("measured", "tvm", "gpu-measured")


def cost_unit(model: CostModel) -> str:
    """The unit of ``model``'s costs: seconds (``"s"``) for :class:`Roofline` and :class:`Measured`,
    ``"op calls"`` for :class:`OpCount`, else the model's ``unit`` attribute, if it has one
    (``"cost units"`` if not).

    Parameters
    ----------
    model
        The cost model.
    """
    if isinstance(model, (Roofline, Measured)):
        return "s"
    if isinstance(model, OpCount):
        return "op calls"
    return str(getattr(model, "unit", "cost units"))


def get_cost_model(name_or_model: str | CostModel) -> CostModel:
    """A cost model: a fresh default instance for a name (``"opcount"``, ``"roofline"``,
    ``"measured"``, ``"tvm"``, ``"gpu"``, ``"gpu-measured"``, any case), or ``name_or_model`` itself when it already is a model.

    Parameters
    ----------
    name_or_model
        A name or a cost model.

    Raises
    ------
    ValueError
        Naming the valid choices, for another name.
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
