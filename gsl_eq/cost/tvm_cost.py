"""The ``tvm`` cost model: seconds as TVM runs a graph, every kernel scheduled by a schedule database.

TVM does not run one kernel per op. Legalization turns each op into TIR, FuseOps fuses an
element-wise or broadcast op into the kernel of the op before it (a convolution's bias add and
relu run inside the convolution's loops), and the :class:`~gsl_eq.measure.schedule_db.ScheduleDatabase`
gives each fused kernel its best sampled schedule. Scheduling decides most of the time, so
neither counting FLOPs nor timing ops alone with the default build predicts it.

:meth:`TVMCost.graph_cost` prices a whole graph that way: legalize and fuse it as TVM does, look
every kernel up in the database (scheduling it if new) and add the kernels' times, each times its
number of calls, plus the virtual machine's dispatch per call (measured once per instance).

Extraction needs a price per e-node that does not depend on its neighbours, so a single call
(:meth:`TVMCost.__call__`) is priced by an approximation of that fusion:

- an element-wise or broadcast op with an input shaped like its output is an *epilogue*: FuseOps
  attaches it to the kernel producing that input. It costs what it adds to such a kernel,
  measured on the kernel ``op(negative(x), ...)`` against ``negative(x)`` alone (at least 0):
  reading its other inputs and computing, but neither a round trip of ``x`` through memory nor a
  call;
- any other op costs its kernels built alone, scheduled, plus the dispatch per kernel.

What this misses: the schedule of a fused kernel differs from its anchor's (an epilogue can make a
convolution sample better or worse), injective ops (reshape, transpose) fuse with their
neighbours too, and ops computed only from parameters are folded. BENCHMARKS.md (cost-fidelity)
measures the error of both prices against TVM's measured time.

    model = TVMCost(ScheduleDatabase(samples=4))
    optimize(wl, rules.default(), cost=model)    # extraction by the per-call approximation
    graph_cost(graph, model)                     # a graph priced by its fused kernels
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import numpy as np
import tvm
from tvm import relax

from ..graph import Graph
from ..graph.ops import make_call
from ..graph.relax_bridge import function_of, to_relax
from ..graph.types import TensorType, Type
from ..measure.schedule_db import ScheduleDatabase

__all__ = ["TVMCost"]

#: TIR op patterns (``op_pattern`` of a legalized kernel) that FuseOps attaches to a producer.
_EPILOGUE_PATTERNS = (0, 1)  # kElemWise, kBroadcast


class TVMCost:
    """Seconds TVM runs, with the kernels scheduled by ``schedules`` (by default a
    :class:`~gsl_eq.measure.schedule_db.ScheduleDatabase` on the default cache).

    ``__call__`` prices one op call for extraction (see the module's docstring for the
    approximation); :meth:`graph_cost` and :meth:`module_seconds` price what TVM builds of a whole
    graph or module. Kernel times come from the database, measured once and cached on disk; a
    call's price is kept in memory for the instance's life.

    Parameters
    ----------
    schedules
        The schedule database (its target, samples and cache); None: a default
        :class:`~gsl_eq.measure.schedule_db.ScheduleDatabase`.

    Examples
    --------
    ::

        model = TVMCost(ScheduleDatabase(samples=4))
        result = optimize(wl, rules.default(), cost=model)
        graph_cost(result.workload.graph, model)      # the result's fused kernels
    """

    name = "tvm"
    unit = "s"

    def __init__(self, schedules: ScheduleDatabase | None = None):
        self.schedules = schedules if schedules is not None else ScheduleDatabase()
        self._prices: dict[str, float] = {}
        self._dispatch: float | None = None

    # --- one call, for extraction -----------------------------------------------------
    def __call__(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        key = json.dumps([op, sorted((k, v) for k, v in attrs.items()), [str(t) for t in inputs]],
                         separators=(",", ":"), default=str)
        if key not in self._prices:
            self._prices[key] = self._price(op, attrs, list(inputs), output)
        return self._prices[key]

    def _price(self, op: str, attrs: Mapping[str, Any], inputs: list[Type], output: Type) -> float:
        alone = function_of(inputs, lambda args: make_call(op, args, attrs))
        kernels = self._kernels(alone)
        main = next((k for k, t in enumerate(inputs) if isinstance(output, TensorType) and t == output), None)
        if main is None or len(kernels) != 1 or _pattern(kernels[0][0]) not in _EPILOGUE_PATTERNS:
            return self._seconds(kernels)

        def after_producer(args: list[relax.Expr]) -> relax.Expr:
            return make_call(op, [*args[:main], relax.op.negative(args[main]), *args[main + 1:]], attrs)

        producer = function_of([inputs[main]], lambda args: relax.op.negative(args[0]))
        fused = function_of(inputs, after_producer)
        fused_seconds, producer_seconds = (self._seconds(self._kernels(m), dispatch=False) for m in (fused, producer))
        return max(0.0, fused_seconds - producer_seconds)

    # --- whole graphs -----------------------------------------------------------------
    def graph_cost(self, graph: Graph) -> float:
        """Seconds TVM runs ``graph``: its fused kernels' scheduled times plus the dispatch per call.

        Parameters
        ----------
        graph
            The graph, converted to Relax (:func:`~gsl_eq.graph.relax_bridge.to_relax`).
        """
        return self.module_seconds(to_relax(graph))

    def module_seconds(self, mod: tvm.IRModule) -> float:
        """Seconds TVM runs Relax module ``mod``: its fused kernels' scheduled times plus the
        dispatch per call.

        Parameters
        ----------
        mod
            The Relax module.
        """
        return self._seconds(self._kernels(mod))

    @property
    def dispatch(self) -> float:
        """Seconds the virtual machine spends per kernel call beyond the kernel: measured on a chain
        of tiny matmuls (which FuseOps keeps apart), the slope of time over chain length."""
        if self._dispatch is None:
            times = [_chain_seconds(n) for n in (1, 33)]
            self._dispatch = max(0.0, (times[1] - times[0]) / 32)
        return self._dispatch

    def _kernels(self, mod: tvm.IRModule) -> list[tuple[tvm.IRModule, int]]:
        """The distinct kernels TVM builds for ``mod``, with how often each is called."""
        from tvm.s_tir import meta_schedule as ms

        tasks = ms.relax_integration.extract_tasks(self.schedules.fuse(mod), self.schedules.target)
        return [(task.dispatched[0], int(task.weight)) for task in tasks]

    def _seconds(self, kernels: list[tuple[tvm.IRModule, int]], dispatch: bool = True) -> float:
        """The scheduled time of ``kernels``, each times its calls, with the dispatch per call or without."""
        per_call = self.dispatch if dispatch else 0.0
        return sum(calls * (self.schedules.choice(kernel).seconds + per_call) for kernel, calls in kernels)

    def __repr__(self) -> str:
        return f"TVMCost({self.schedules!r})"


def _pattern(kernel: tvm.IRModule) -> int:
    attrs = kernel["main"].attrs
    return int(attrs["op_pattern"]) if attrs is not None and "op_pattern" in attrs else -1


def _chain_seconds(length: int) -> float:
    """Seconds of one run of ``length`` chained 1x1 matmuls on TVM's virtual machine, fastest of 5."""
    one = TensorType((1, 1), "float32")

    def chain(args: list[relax.Expr]) -> relax.Expr:
        out = args[0]
        for _ in range(length):
            out = relax.op.matmul(out, args[0])
        return out

    mod = function_of([one], chain)
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    x = tvm.runtime.tensor(np.ones((1, 1), "float32"))
    return float(min(vm.time_evaluator("main", tvm.cpu(), number=100, repeat=5)(x).results))
