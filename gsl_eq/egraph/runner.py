"""The equality saturation loop, modelled on egg's Runner: explicit limits, a report
per iteration and the reason it stopped.

One iteration: egglog runs every rule's *collect* query once; Python decides the
keys it has not seen (guards, target attributes and types); egglog runs every
rule's *apply* query once, adding target e-nodes and unions, and rebuilds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Sequence

from egglog import bindings as egg

from ..frontend import Subst
from ..graph import Graph
from .compile import CompiledRule, compile_rule
from .egraph import EGraph

_SPAN = egg.PanicSpan()


class StopReason(str, Enum):
    SATURATED = "saturated"
    NODE_LIMIT = "node limit"
    ITERATION_LIMIT = "iteration limit"
    TIME_LIMIT = "time limit"


@dataclass
class Iteration:
    """What one iteration did and how long each part took (seconds)."""

    enodes: int
    eclasses: int
    new_keys: dict[str, int]
    accepted_keys: dict[str, int]
    search_time: float
    guard_time: float
    apply_time: float
    total_time: float


@dataclass
class Report:
    """The runner's history: one :class:`Iteration` per iteration and why it stopped."""

    iterations: list[Iteration] = field(default_factory=list)
    stop_reason: StopReason | None = None

    @property
    def python_time(self) -> float:
        return sum(i.guard_time for i in self.iterations)

    @property
    def engine_time(self) -> float:
        return sum(i.search_time + i.apply_time for i in self.iterations)


class Runner:
    """Saturates an e-graph holding ``graph`` with ``rules`` under node, iteration and time limits.

        runner = Runner(graph, rules.algebraic(), node_limit=50_000, iter_limit=30, time_limit=60)
        report = runner.run()
    """

    def __init__(self, graph: Graph, rules: Sequence[Subst], node_limit: int = 50_000,
                 iter_limit: int = 30, time_limit: float = 60.0):
        self.egraph = EGraph()
        self.graph = graph
        self.handles = self.egraph.add_graph(graph)
        self.rules = rules
        self.compiled: list[CompiledRule] = [c for k, r in enumerate(rules) for c in compile_rule(r, k, self.egraph)]
        self.node_limit, self.iter_limit, self.time_limit = node_limit, iter_limit, time_limit
        self.report = Report()

    def run(self) -> Report:
        start = time.perf_counter()
        eg = self.egraph
        while True:
            if len(self.report.iterations) >= self.iter_limit:
                return self._stop(StopReason.ITERATION_LIMIT)
            t0 = time.perf_counter()
            eg.run("(run-schedule (run collect))")
            t1 = time.perf_counter()
            new_keys, accepted = self._decide()
            t2 = time.perf_counter()
            eg.run("(run-schedule (run apply))")
            t3 = time.perf_counter()
            enodes, eclasses = self.size()
            self.report.iterations.append(Iteration(
                enodes, eclasses, new_keys, accepted, t1 - t0, t2 - t1, t3 - t2, t3 - t0))
            if not any(new_keys.values()) and len(self.report.iterations) > 1 and self._unchanged():
                return self._stop(StopReason.SATURATED)
            if enodes >= self.node_limit:
                return self._stop(StopReason.NODE_LIMIT)
            if time.perf_counter() - start >= self.time_limit:
                return self._stop(StopReason.TIME_LIMIT)

    def _stop(self, reason: StopReason) -> Report:
        self.report.stop_reason = reason
        return self.report

    def _unchanged(self) -> bool:
        its = self.report.iterations
        return its[-1].enodes == its[-2].enodes and its[-1].eclasses == its[-2].eclasses

    def _decide(self) -> tuple[dict[str, int], dict[str, int]]:
        """Decide every key not seen before; fill the tables of the accepted ones."""
        eg = self.egraph
        frozen = eg.egg.freeze()
        value = eg.egg.value_to_i64
        new_keys, accepted, commands = {}, {}, []
        for c in self.compiled:
            rows = frozen.functions[f"Key_{c.name}"].rows
            fresh = [k for k in (tuple(value(v) for v in row.inputs) for row in rows) if k not in c.seen]
            new_keys[c.rule.name] = new_keys.get(c.rule.name, 0) + len(fresh)
            ok = 0
            for key in fresh:
                c.seen.add(key)
                decision = c.decide(eg, key)
                if decision is None:
                    continue
                variant, created = decision
                ok += 1
                args = [_int(k) for k in key]
                table = f"{c.name}_{variant.index}"
                for j, (payload, type_id) in enumerate(created):
                    commands.append(egg.ActionCommand(egg.Set(_SPAN, f"A_{table}_{j}", args, _int(payload))))
                    commands.append(egg.ActionCommand(egg.Set(_SPAN, f"T_{table}_{j}", args, _int(type_id))))
                commands.append(egg.ActionCommand(egg.Set(_SPAN, f"Ok_{table}", args, _int(1))))
            accepted[c.rule.name] = accepted.get(c.rule.name, 0) + ok
            c.accepted += ok
        if commands:
            eg.egg.run_program(*commands)
        return new_keys, accepted

    def size(self) -> tuple[int, int]:
        """(e-nodes, e-classes) of the expression constructors."""
        return self.egraph.size()


def _int(v: int) -> object:
    return egg.Lit(_SPAN, egg.Int(int(v)))
