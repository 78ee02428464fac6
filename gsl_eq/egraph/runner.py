"""The equality saturation loop, modelled on egg's Runner: explicit limits, a report
per iteration (:mod:`.report`), the reason it stopped, and a back-off scheduler
(:mod:`.scheduler`).

An iteration is *fast* while the limits are far (:mod:`.fast`: every new match applied
at once on a copy of the e-graph that can be dropped), else *controlled*:

1. *search*: egglog runs the search rule of every rule the scheduler lets search;
   each match becomes a row of the rule's worklist and its key a row of the key
   relation (see :mod:`.compile`). Sources are e-matched once, semi-naively; the parts
   of a source whose outputs share no node are paired (:mod:`.pairing`);
2. *decide*: Python decides the keys it has not seen (:mod:`.keys`);
3. *apply*: egglog consumes worklist rows within each rule's budget (:mod:`.worklists`).

Limits are promises. ``node_limit`` is a memory budget: one application adds at
most as many e-nodes as its target creates, so a rule's budget is also capped by
the node headroom divided by that number, and the e-graph never exceeds the limit
(stop reason: node limit). ``time_limit`` (or the ``deadline`` given to
:meth:`Runner.run`) bounds the run: the clock is checked between egglog calls
(:mod:`.calls`), an iteration predicted to overrun is not started, the iterations
leave the time stopping will take (:data:`STOP_SECONDS_PER_ENODE`), and with
``extraction_reserve`` (seconds the caller needs per e-node once the run stops)
growth also stops where the time left would no longer cover extracting the e-graph.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Collection, Mapping, Sequence

from ..frontend import Subst
from ..graph import Graph
from ..run.limits import Limits, StopReason, check_count
from .attribution import Attribution, attribute
from .calls import Counts, EngineCalls, OutOfTime
from .compile import MAX_VARIADIC, Query, Rulesets, compile_rule
from .egraph import EGraph, Snapshot
from .fast import PUSH_WORTH, FastIterations
from .keys import KeyDecisions
from .pairing import Pairing
from .report import Iteration, Report
from .scheduler import Scheduler
from .seeding import seed
from .worklists import Worklists

__all__ = ["Iteration", "Report", "Runner", "StopReason"]

#: What stopping a run (clearing the worklists, bringing ``Foldable`` up to date) is predicted to take
#: per e-node: 0.09 s for 34,000 e-nodes of an explosive chain of products here. The run's iterations
#: end that much before its deadline, so that the stop also ends by it.
STOP_SECONDS_PER_ENODE = 3e-6


class Runner(FastIterations, KeyDecisions, Worklists, Pairing, EngineCalls):
    """Saturates an e-graph holding ``graph`` with ``rules`` under node, iteration and time limits.

    ``params`` names the variables that are parameters: what is computed from
    them alone is marked ``Foldable`` when the run stops (see :class:`EGraph`).
    ``match_limit``, ``multi_match_limit`` and ``ban_length`` configure the
    scheduler (:class:`~gsl_eq.egraph.scheduler.Scheduler`). A rule whose source
    outputs share no node pairs its matches in the first ``pair_iterations``
    iterations only (TENSAT's ``iter_multi``, 1 by default there too), at most
    about its limit of new pairs each (:mod:`.pairing`), and only at loaded nodes
    neither of which reads the other: its pairs grow with the square of its
    matches; part matches not paired by then are left out. With ``multi_iterations``
    every rule with several source outputs is searched in that many first iterations
    only (TENSAT's ``iter_multi`` for all of them; the run is saturated when the other
    rules are). ``deadline`` (a ``time.perf_counter()`` value) bounds compiling the rules: those
    not compiled by then are never searched (the report's ``uncompiled``). ``fast=False`` makes every
    iteration controlled (see :mod:`.fast`); an iteration is also controlled after pushing the
    e-graph took more than ``push_worth`` times as long as applying the matches, or where the copy
    is predicted to cost more than that (``math.inf``: never for that reason, whatever the clock says).

        runner = Runner(graph, rules.algebraic(), node_limit=50_000, iter_limit=30, time_limit=60)
        runner = Runner(graph, rules.algebraic(), limits=Limits(node_limit=50_000))  # the same limits, as one
        report = runner.run()
        print(report.stop_reason, report.iterations[-1].enodes)
    """

    def __init__(self, graph: Graph, rules: Sequence[Subst], node_limit: int | None = None,
                 iter_limit: int | None = None, time_limit: float | None = None, match_limit: int = 1000, multi_match_limit: int = 100,
                 ban_length: int = 5, max_variadic: int = MAX_VARIADIC,
                 on_iteration: Callable[[Iteration], None] | None = None, params: Collection[str] = (),
                 extraction_reserve: float = 0.0, pair_iterations: int = 1, fast: bool = True,
                 push_worth: float = PUSH_WORTH, multi_iterations: int | None = None, deadline: float | None = None,
                 limits: Limits | None = None):
        limits = Limits.of(limits, node_limit=node_limit, iter_limit=iter_limit, time_limit=time_limit)
        start = time.perf_counter()
        self.egraph = EGraph()
        self.graph = graph
        self.handles = self.egraph.add_graph(graph, params)
        self._loaded_size = self.egraph.size()  # what egglog's calls are predicted from before the first iteration
        loaded = time.perf_counter()
        self.rules = list(rules)
        # a rule's queries are compiled in Python at once (a bad rule is refused here), but given to egglog
        # only once every constructor they match may have e-nodes (_wake): until then nothing matches, and
        # egglog takes most of compiling's time (TASO's rules on Inception-v3: 2.5 s, 1.8 of it for queries
        # of ops the graph has not)
        self.rule_queries: list[list[Query]] = []  # every query of each rule
        uncompiled = []
        for k, rule in enumerate(self.rules):
            if deadline is not None and time.perf_counter() > deadline:  # TASO's 692 take a tenth of a second here
                uncompiled.append(k)
                self.rule_queries.append([])
                continue
            self.rule_queries.append(compile_rule(rule, k, self.egraph, max_variadic))
        self.queries: list[list[Query]] = [[] for _ in self.rules]  # those given to egglog, which it searches
        self._asleep: list[list[Query]] = [list(qs) for qs in self.rule_queries]
        for k in range(len(self.rules)):  # one program each: egglog takes 1.4 s for TASO's 692 in one, 0.03 so
            self.egraph.run(Rulesets.of_rule(k).declarations())
        self._peeking: set[int] = set()  # rules whose rows of opened buckets egglog can count
        uncompiled += self._wake(deadline)
        compiled = time.perf_counter()
        self.node_limit, self.iter_limit = limits.node_limit, limits.iter_limit
        seeded = seed(self.egraph, graph, self.handles, self.rules, max_variadic, self.node_limit, deadline,
                      skip=uncompiled)
        self._mark_apart()
        self.time_limit = limits.time_limit
        self.extraction_reserve = extraction_reserve
        self.pair_iterations = check_count("pair_iterations", pair_iterations)
        if multi_iterations is not None:
            multi_iterations = check_count("multi_iterations", multi_iterations)
        self.scheduler = Scheduler([any(q.multi_output for q in qs) for qs in self.rule_queries],
                                   match_limit, multi_match_limit, ban_length, multi_iterations)
        self.backlog = [0] * len(self.rules)
        self.push_worth = push_worth
        self.fast = fast  # until a fast iteration is refused (then every one is controlled)
        self._controlled_next = False  # the last fast iteration's copy cost more than it saved
        self._pushed = 0  # e-nodes in the copies pushed on egglog's stack
        self._direct_sets: dict[tuple[int, ...], str] = {}
        self._defined: set[tuple[str, int, str]] = set()  # (query, variant, part) defined in egglog
        self._key_rows: dict[str, int] = {}  # rows of each key relation read so far
        self._seconds_per_row: dict[str, float] = {}
        self._last_time: dict[str, tuple[float, int]] = {}
        self._last_matches: dict[int, tuple[int, int]] = {}
        self._probed: dict[int, int] = {}  # per rule index: the e-nodes when its search was last probed
        self.on_iteration = on_iteration
        self.report = Report(compile_time=compiled - loaded, load_time=loaded - start,
                             uncompiled=[self.rules[k].name for k in sorted(set(uncompiled))],
                             seeded=seeded, seed_time=time.perf_counter() - compiled)

    def run(self, deadline: float | None = None) -> Report:
        """Saturate until a limit; ``deadline`` (a ``time.perf_counter()`` value) overrides ``time_limit``."""
        end = time.perf_counter() + self.time_limit if deadline is None else deadline
        size = self.egraph.size()
        if not self.report.iterations:
            self.egraph.stamp(0)
        while True:
            self.deadline = end - STOP_SECONDS_PER_ENODE * size  # what the iterations may use
            n = len(self.report.iterations)
            if n >= self.iter_limit:
                return self._stop(StopReason.ITERATION_LIMIT)
            if n and time.perf_counter() + self._predicted_time(size) > self.deadline:
                return self._stop(StopReason.TIME_LIMIT)
            iteration, reason = self._iterate(n)
            stamped = time.perf_counter()
            self.egraph.stamp(n + 1)
            iteration.total_time += time.perf_counter() - stamped  # part of the iteration: the clock predicts from it
            self.report.iterations.append(iteration)
            size = iteration.enodes
            if self.on_iteration is not None:
                self.on_iteration(iteration)
            if reason is not None:
                return self._stop(reason)

    def _wake(self, deadline: float | None) -> list[int]:
        """Give egglog the queries every constructor of whose source may now have e-nodes (the
        e-graph's ``literals``: the loaded nodes' and every accepted target's), rule by rule until
        ``deadline``. Returns the rules with such queries left asleep at the deadline."""
        late = []
        for k, asleep in enumerate(self._asleep):
            ready, still = [], []
            for q in asleep:
                (ready if q.ready(self.egraph) else still).append(q)
            if not ready:
                continue
            if deadline is not None and time.perf_counter() > deadline:
                late.append(k)
                continue
            rulesets = Rulesets.of_rule(k)
            self.egraph.run("\n".join([*(q.program(rulesets) for q in ready),
                                       *(q.peek_program(k) for q in ready if k in self._peeking)]))
            self.queries[k] += ready
            self._asleep[k] = still
        return late

    def _iterate(self, n: int) -> tuple[Iteration, StopReason | None]:
        start = time.perf_counter()
        for k in self._wake(self.deadline):  # ready but left asleep at the deadline: never saturated
            if self.rules[k].name not in self.report.uncompiled:
                self.report.uncompiled.append(self.rules[k].name)
        self.report.compile_time += time.perf_counter() - start
        eg, names = self.egraph, [r.name for r in self.rules]
        banned = [names[k] for k in range(len(names)) if self.scheduler.banned(k, n)]
        searched = [k for k in range(len(self.rules)) if self.scheduler.should_search(k, n, self.backlog[k])]
        ticks, reason = [time.perf_counter()], None  # the search's time holds the trials of searches on forks
        searched, late = self._affordable(searched)
        search, apply, found, new_bans = Counts(), Counts(), {}, []
        new_keys: dict[str, int] = {}
        accepted: dict[str, int] = {}
        rejected: dict[str, dict[str, int]] = {}
        if any(q.mirrors for qs in self.queries for q in qs):
            eg.number()  # a symmetric rule's matches compare the ranks of their outputs (order)
        if not late and self._fast_possible(n, searched):
            try:
                fast = self._fast(n, searched, banned, new_keys, accepted, rejected, ticks[0])
            except OutOfTime:
                fast = None
                reason = StopReason.TIME_LIMIT
            if fast is not None:
                return fast
        try:
            if reason is not None:
                raise OutOfTime
            paired = [k for k in searched if self._pairs(k, n)]
            if searched:  # one egglog call for every search: calls cost, rule sets can be large
                rulesets = [f"search_{k}" for k in searched] + [f"find_{k}" for k in paired]
                found = self._per_rule_index(self._run(search, rulesets), searched)
                self._last_matches.update((k, (found[k], self._size())) for k in searched)
            ticks.append(time.perf_counter())
            self._decide(searched, n, new_keys, accepted, rejected, "apply")
            # A semi-naive search finds again matches an earlier iteration applied, as many as the history of
            # its rows' timestamps makes it (every match a fast iteration applied, some a controlled one did):
            # only new rows whose target is not there yet count, so that what is banned, and so the e-graph
            # grown, does not depend on which kind the iterations were (a clock decides that). Rows of
            # rejected keys count, as in egg, where a guard is checked once a match is found.
            rows = sum(found.values()) + sum(self.backlog[k] for k in searched)
            self._define_all("prune")
            if any(found.values()):
                self._run(search, [Rulesets.of_rule(k).prune for k in searched if found[k]], rows)
            pending = self._backlog(eg.table_sizes())
            found = {k: max(0, pending[k] - self.backlog[k]) for k in searched}
            # it reads every worklist row of the searched rules: 21 million once, in 24 s
            self._run(search, ["reject"], rows)
            for k, pairs in self._pair_all(paired, search).items():
                found[k] += pairs
            ticks.append(time.perf_counter())
            sizes = eg.table_sizes()
            self.backlog = self._backlog(sizes)
            # a disconnected rule's pairs are already kept to its budget (_pair_all): no ban for them
            new_bans = [names[k] for k in searched
                        if k not in paired and self.scheduler.after_search(k, n, found[k])]
            self._define_all("apply")  # variants decided in fast iterations have no apply rules yet
            reason = self._apply_phase(n, apply, eg.size(sizes))
        except OutOfTime:
            reason = StopReason.TIME_LIMIT
        ticks += [time.perf_counter()] * (4 - len(ticks))
        sizes = eg.table_sizes()
        enodes = eg.size(sizes)
        self.backlog = self._backlog(sizes)
        iteration = Iteration(
            enodes, {names[k]: n for k, n in found.items()}, new_keys, accepted,
            self._per_rule(apply.matches), banned,
            ticks[1] - ticks[0], ticks[2] - ticks[1], ticks[3] - ticks[2], search.rebuild + apply.rebuild,
            time.perf_counter() - ticks[0], {names[k]: b for k, b in enumerate(self.backlog) if b}, len(searched),
            new_bans, rejected, late=[names[k] for k in late])
        # only applying changes the e-graph: rows the search wrote and pruning or rejecting deleted again
        # change nothing, and whether there are any depends on the kinds of the iterations before (above)
        changed = apply.updated
        if reason is None and late and not changed:
            reason = StopReason.TIME_LIMIT  # what is left to do cannot be done in the time left
        if reason is None and enodes >= self.node_limit:
            reason = StopReason.NODE_LIMIT
        if reason is None and not changed:
            if not any(self.backlog) and not self._unpaired(sizes, n + 1) and len(searched) == self.scheduler.active(n):
                reason = self._nothing_left()
            elif self.scheduler.any_banned(n + 1):  # nothing else changes: lift the bans early (egg does the same)
                self.scheduler.lift_bans()
        return iteration, reason

    def attribute(self, snap: Snapshot, choice: Mapping[Any, int], classes: Collection[Any],
                  wanted: Collection[Any] | None = None) -> Attribution:
        """:func:`.attribution.attribute` with the provenance rules of every decided variant."""
        self._define_all("provenance")
        self.egraph.number()
        return attribute(self.egraph, snap, choice, classes, wanted)

    def _nothing_left(self) -> StopReason:
        """Why a run that found nothing more to do stops: saturated, unless some rules were left
        uncompiled at the deadline and never searched."""
        return StopReason.TIME_LIMIT if self.report.uncompiled else StopReason.SATURATED

    def _predicted_time(self, size: int) -> float:
        its = self.report.iterations
        before = its[-2].enodes if len(its) > 1 else len(self.graph)
        return its[-1].total_time * max(1.0, size / max(before, 1))

    def _stop(self, reason: StopReason) -> Report:
        start = time.perf_counter()
        self.egraph.run("(run clear 1)")  # worklists are not part of the e-graph
        self.egraph.fold()
        self.report.stop_time += time.perf_counter() - start
        self.report.stop_reason = reason
        return self.report
