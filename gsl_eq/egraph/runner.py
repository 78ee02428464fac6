"""The equality saturation loop, modelled on egg's Runner: explicit limits, a report
per iteration, the reason it stopped, and a back-off scheduler.

One iteration: egglog runs the *collect* rules of every rule not banned; Python
decides the keys it has not seen (guards, target attributes and types, see
:mod:`.compile`); egglog runs the *apply* rules, adding target e-nodes and
unions, and rebuilds.

Each GSL rule has its own pair of egglog rulesets, so the scheduler can leave a
rule out. As in egg's ``BackoffScheduler``, a rule whose matches in one
iteration exceed ``match_limit << times_banned`` is not applied that iteration
and is banned for ``ban_length << times_banned`` iterations; when nothing else
changes, bans are lifted early rather than reporting saturation.

egglog cannot be interrupted inside an iteration, so the time limit is kept by
not starting an iteration predicted to overrun it: the last iteration's time,
scaled by how much the e-graph grew in it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Collection, Sequence

from egglog import bindings as egg

from ..frontend import Subst
from ..graph import Graph
from .compile import MAX_VARIADIC, Query, compile_rule
from .egraph import SPAN, EGraph, int_literal



class StopReason(str, Enum):
    SATURATED = "saturated"
    NODE_LIMIT = "node limit"
    ITERATION_LIMIT = "iteration limit"
    TIME_LIMIT = "time limit"


@dataclass
class Iteration:
    """What one iteration did and how long each part took (seconds).

    ``matches``: source matches found per rule; ``new_keys`` / ``accepted_keys``:
    distinct keys Python saw for the first time / accepted; ``applied``:
    applications per rule (matches of accepted keys); ``banned``: rules the
    scheduler left out.
    """

    enodes: int
    eclasses: int
    matches: dict[str, int]
    new_keys: dict[str, int]
    accepted_keys: dict[str, int]
    applied: dict[str, int]
    banned: list[str]
    search_time: float
    guard_time: float
    apply_time: float
    rebuild_time: float
    total_time: float


@dataclass
class Report:
    """The runner's history: one :class:`Iteration` per iteration and why it stopped."""

    iterations: list[Iteration] = field(default_factory=list)
    stop_reason: StopReason | None = None
    load_time: float = 0.0

    @property
    def python_time(self) -> float:
        return sum(i.guard_time for i in self.iterations)

    @property
    def engine_time(self) -> float:
        return sum(i.search_time + i.apply_time for i in self.iterations)

    @property
    def total_time(self) -> float:
        return sum(i.total_time for i in self.iterations)

    def applied(self) -> dict[str, int]:
        """Applications per rule over the whole run."""
        total: dict[str, int] = {}
        for it in self.iterations:
            for name, n in it.applied.items():
                total[name] = total.get(name, 0) + n
        return total


@dataclass
class _Schedule:
    """Back-off state of one rule."""

    times_banned: int = 0
    banned_until: int = 0


@dataclass
class _Phase:
    """What running one phase's rulesets did."""

    matches: dict[str, int] = field(default_factory=dict)
    updated: bool = False
    rebuild: float = 0.0
    complete: bool = True


class Runner:
    """Saturates an e-graph holding ``graph`` with ``rules`` under node, iteration and time limits.

    ``params`` names the variables that are parameters: what is computed from
    them alone is marked ``Foldable`` when the run stops (see :class:`EGraph`).

        runner = Runner(graph, rules.algebraic(), node_limit=50_000, iter_limit=30, time_limit=60)
        report = runner.run()
        print(report.stop_reason, report.iterations[-1].enodes)
    """

    def __init__(self, graph: Graph, rules: Sequence[Subst], node_limit: int = 50_000, iter_limit: int = 30,
                 time_limit: float = 60.0, match_limit: int = 1000, ban_length: int = 5,
                 max_variadic: int = MAX_VARIADIC, on_iteration: Callable[[Iteration], None] | None = None,
                 params: Collection[str] = ()):
        start = time.perf_counter()
        self.egraph = EGraph()
        self.graph = graph
        self.handles = self.egraph.add_graph(graph, params)
        self.rules = list(rules)
        self.queries: list[list[Query]] = []
        for k, rule in enumerate(self.rules):
            queries = compile_rule(rule, k, self.egraph, max_variadic)
            self.egraph.run(f"(ruleset collect_{k})\n(ruleset apply_{k})\n"
                            + "\n".join(q.program(f"collect_{k}") for q in queries))
            self.queries.append(queries)
        self.node_limit, self.iter_limit, self.time_limit = node_limit, iter_limit, time_limit
        self.match_limit, self.ban_length = match_limit, ban_length
        self.schedule = [_Schedule() for _ in self.rules]
        self.on_iteration = on_iteration
        self.report = Report(load_time=time.perf_counter() - start)

    def run(self) -> Report:
        start = time.perf_counter()
        deadline = start + self.time_limit
        size = len(self.graph)
        while True:
            n = len(self.report.iterations)
            if n >= self.iter_limit:
                return self._stop(StopReason.ITERATION_LIMIT)
            if n and time.perf_counter() + self._predicted_time(size) > deadline:
                return self._stop(StopReason.TIME_LIMIT)
            t0 = time.perf_counter()
            active = [k for k, s in enumerate(self.schedule) if s.banned_until <= n]
            collected = self._run_phase("collect", active, deadline)
            matches = self._per_rule(collected.matches)
            banned = [k for k in active if self._ban(k, matches.get(self.rules[k].name, 0), n)]
            chosen = [k for k in active if k not in banned]
            t1 = time.perf_counter()
            new_keys, accepted = self._decide(chosen if collected.complete else [])
            t2 = time.perf_counter()
            applied = self._run_phase("apply", chosen if collected.complete else [], deadline)
            t3 = time.perf_counter()
            enodes, eclasses = self.egraph.size()
            self.report.iterations.append(Iteration(
                enodes, eclasses, matches, new_keys, accepted, self._per_rule(applied.matches),
                [self.rules[k].name for k in range(len(self.rules)) if k not in chosen],
                t1 - t0 - collected.rebuild, t2 - t1, t3 - t2 - applied.rebuild, collected.rebuild + applied.rebuild,
                time.perf_counter() - t0))
            size = enodes
            if self.on_iteration is not None:
                self.on_iteration(self.report.iterations[-1])
            if not (collected.complete and applied.complete):
                return self._stop(StopReason.TIME_LIMIT)
            if not (collected.updated or applied.updated or any(new_keys.values())):
                if not banned and all(s.banned_until <= n + 1 for s in self.schedule):
                    return self._stop(StopReason.SATURATED)
                for s in self.schedule:  # nothing else changes: lift the bans early (egg does the same)
                    s.banned_until = 0
            if enodes >= self.node_limit:
                return self._stop(StopReason.NODE_LIMIT)

    def _predicted_time(self, size: int) -> float:
        its = self.report.iterations
        before = its[-2].enodes if len(its) > 1 else len(self.graph)
        return its[-1].total_time * max(1.0, size / max(before, 1))

    def _ban(self, k: int, matches: int, iteration: int) -> bool:
        s = self.schedule[k]
        if matches <= self.match_limit << s.times_banned:
            return False
        s.banned_until = iteration + 1 + (self.ban_length << s.times_banned)
        s.times_banned += 1
        return True

    def _run_phase(self, phase: str, rules: list[int], deadline: float) -> "_Phase":
        """Run ``phase``'s ruleset of each rule in turn, checking the clock between rules."""
        result = _Phase()
        for k in rules:
            if time.perf_counter() > deadline:
                result.complete = False
                break
            (out,) = self.egraph.run(f"(run {phase}_{k} 1)")
            result.updated |= out.report.updated
            result.rebuild += sum(r.total_seconds() for r in out.report.rebuild_time_per_ruleset.values())
            for name, count in out.report.num_matches_per_rule.items():
                result.matches[name] = result.matches.get(name, 0) + count
        return result

    def _per_rule(self, counts: dict[str, int]) -> dict[str, int]:
        """egglog's per-rule counts (named "collect r<k>_<q>" / "apply r<k>_<q>_<v>") summed per GSL rule."""
        total: dict[str, int] = {}
        for name, n in counts.items():
            k = int(name.split()[1][1:].split("_")[0])
            total[self.rules[k].name] = total.get(self.rules[k].name, 0) + n
        return total

    def _stop(self, reason: StopReason) -> Report:
        self.egraph.fold()
        self.report.stop_reason = reason
        return self.report

    def _decide(self, rules: list[int]) -> tuple[dict[str, int], dict[str, int]]:
        """Decide every key not seen before; fill the tables of the accepted ones."""
        eg = self.egraph
        new_keys, accepted, commands = {}, {}, []
        for k in rules:
            name = self.rules[k].name
            for q in self.queries[k]:
                fresh = [key for key in self._keys(q) if key not in q.seen]
                new_keys[name] = new_keys.get(name, 0) + len(fresh)
                ok = 0
                for key in fresh:
                    q.seen.add(key)
                    known = len(q.variants)
                    decision = q.decide(eg, key)
                    if decision is None:
                        continue
                    variant, payloads = decision
                    if len(q.variants) > known:
                        eg.run(q.variant_program(eg, variant, f"apply_{k}"))
                    ok += 1
                    args = [int_literal(v) for v in key]
                    table = f"{q.name}_{variant.index}"
                    for j, (payload, type_id) in enumerate(payloads):
                        commands.append(egg.ActionCommand(egg.Set(SPAN, f"A_{table}_{j}", args, int_literal(payload))))
                        commands.append(egg.ActionCommand(egg.Set(SPAN, f"T_{table}_{j}", args, int_literal(type_id))))
                    commands.append(egg.ActionCommand(egg.Set(SPAN, f"Ok_{table}", args, int_literal(1))))
                accepted[name] = accepted.get(name, 0) + ok
        if commands:
            eg.egg.run_program(*commands)
        return new_keys, accepted

    def _keys(self, q: Query) -> list[tuple[int, ...]]:
        """The rows of ``q``'s key relation (only that relation is read, not the whole e-graph)."""
        (out,) = self.egraph.egg.run_program(
            egg.PrintFunction(SPAN, f"Key_{q.name}", None, None, egg.CSVPrintFunctionMode()))
        arity = q.key_arity
        return [tuple(int(v) for v in line.split(",")[1:1 + arity]) for line in str(out).splitlines() if line]

