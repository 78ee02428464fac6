"""The equality saturation loop, modelled on egg's Runner: explicit limits, a report
per iteration, the reason it stopped, and a back-off scheduler (:mod:`.scheduler`).

An iteration is *fast* while the limits are far: egglog records the keys of every
source's matches (it enumerates only their distinct values, which costs little),
Python decides the new ones, and one egglog call applies every new match of a
decided key directly, as rules written in egglog would (:meth:`Runner._fast`). The
e-graph is pushed on egglog's stack first; if a rule found more matches than its
limit or the e-graph passed the node limit, it is popped back and the iteration is
run *controlled* instead, as is every later one: the pushed copies cannot be
dropped, so they are made only while they add up to less than ``node_limit``
e-nodes, and only while they take less time than applying the matches
(:data:`PUSH_WORTH`; egglog copies every table, so a small e-graph of many rules
is cheaper to run controlled). A controlled iteration:

1. *search*: egglog runs the search rule of every rule the scheduler lets search;
   each match becomes a row of the rule's worklist and its key a row of the key
   relation (see :mod:`.compile`). Sources are e-matched once, semi-naively;
2. *decide*: Python decides the keys it has not seen (guards, target attributes
   and types) and fills the apply tables; rows of rejected keys are dropped;
3. *apply*: egglog consumes worklist rows: every rule whose rows fit its budget in
   one call, a rule that does not alone, bucket by bucket, about the budget's worth.

Limits are promises. ``node_limit`` is a memory budget: one application adds at
most as many e-nodes as its target creates, so a rule's budget is also capped by
the node headroom divided by that number, and the e-graph never exceeds the limit
(stop reason: node limit). ``time_limit`` (or the ``deadline`` given to
:meth:`Runner.run`) bounds the run: the clock is checked between egglog calls,
an iteration predicted to overrun is not started, and with ``extraction_reserve``
(seconds the caller needs per e-node once the run stops) growth also stops where
the time left would no longer cover extracting the e-graph.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterable, Mapping, Sequence

from egglog import bindings as egg

from ..frontend import Subst
from ..graph import Graph
from ..limits import StopReason, check_count, check_seconds
from .compile import MAX_VARIADIC, Query, Rulesets, Variant, compile_rule
from .egraph import BUCKETS, SPAN, Attribution, EGraph, Snapshot, head_name, int_literal
from .scheduler import Scheduler


@dataclass
class Iteration:
    """What one iteration did and how long each part took (seconds).

    Per rule name: ``matches``, new matches its search found (for a disconnected
    source, the pairs formed); ``new_keys`` / ``accepted_keys``, distinct keys
    (combinations of its parts' keys) Python saw for the first time / accepted;
    ``rejected``, the others by reason (:meth:`~.compile.Query.decide`: source guard
    false, target cannot be typed, output type would change), their rows dropped;
    ``applied``, matches applied (each at most once); ``backlog``, matches found
    but not applied yet, left in the worklist. ``banned``: rules under a ban from
    an earlier iteration (neither searched nor applied); ``new_bans``: rules whose
    search found more matches than their limit (counted, not applied);
    ``searched``: how many rules were searched.
    ``rebuild_time`` is egglog's own figure, part of ``search_time`` and ``apply_time``.
    ``fast``: the iteration was fast (see the module docstring; ``search_time`` is then the
    time recording keys, ``apply_time`` the time applying every match). A controlled iteration's
    ``search_time`` includes a fast attempt that was refused.
    """

    enodes: int
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
    backlog: dict[str, int] = field(default_factory=dict)
    searched: int = 0
    new_bans: list[str] = field(default_factory=list)
    rejected: dict[str, dict[str, int]] = field(default_factory=dict)
    fast: bool = False


@dataclass
class Report:
    """The runner's history: one :class:`Iteration` per iteration and why it stopped."""

    iterations: list[Iteration] = field(default_factory=list)
    stop_reason: StopReason | None = None
    compile_time: float = 0.0  # compiling the rules into egglog
    load_time: float = 0.0  # loading the graph

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
        return _sum(it.applied for it in self.iterations)

    def rejected(self) -> dict[str, dict[str, int]]:
        """Rejected keys per rule and reason over the whole run (each key is decided once)."""
        total: dict[str, dict[str, int]] = {}
        for it in self.iterations:
            for name, reasons in it.rejected.items():
                total[name] = _sum([total.get(name, {}), reasons])
        return total


def _sum(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """Counts added up key by key."""
    total: dict[str, int] = {}
    for c in counts:
        for name, n in c.items():
            total[name] = total.get(name, 0) + n
    return total


#: Fast iterations end when pushing the e-graph took more than this many times as long as
#: applying the matches (or a millisecond): the copy is their cost, controlled ones have none.
PUSH_WORTH = 2.0
#: How many more rounds :meth:`Runner._fill` applies of a rule cut short by the node budget.
FILL_ROUNDS = 3
#: How many rounds of buckets :meth:`Runner._pair` opens per part and iteration.
PAIRING_ROUNDS = 8


@dataclass
class _Counts:
    """What a sequence of egglog runs did: matches per egglog rule, whether anything changed."""

    matches: dict[str, int] = field(default_factory=dict)
    updated: bool = False
    rebuild: float = 0.0

    def add(self, out: object) -> dict[str, int]:
        """Count one egglog run; returns its matches per egglog rule."""
        report = out.report  # type: ignore[attr-defined]
        self.updated |= report.updated
        self.rebuild += sum(r.total_seconds() for r in report.rebuild_time_per_ruleset.values())
        for name, count in report.num_matches_per_rule.items():
            self.matches[name] = self.matches.get(name, 0) + count
        return report.num_matches_per_rule


class _OutOfTime(Exception):
    """The deadline passed between two egglog calls."""


class Runner:
    """Saturates an e-graph holding ``graph`` with ``rules`` under node, iteration and time limits.

    ``params`` names the variables that are parameters: what is computed from
    them alone is marked ``Foldable`` when the run stops (see :class:`EGraph`).
    ``match_limit``, ``multi_match_limit`` and ``ban_length`` configure the
    scheduler (:class:`~gsl_eq.egraph.scheduler.Scheduler`). A rule whose source
    outputs share no node pairs its matches in the first ``pair_iterations``
    iterations only (TENSAT's ``iter_multi``, 1 by default there too), at most
    about its limit of new pairs each (:meth:`_pair`), and only at loaded nodes
    neither of which reads the other: its pairs grow with the square of its
    matches; part matches not paired by then are left out. With ``multi_iterations``
    every rule with several source outputs is searched in that many first iterations
    only (TENSAT's ``iter_multi`` for all of them; the run is saturated when the other
    rules are). ``fast=False`` makes every
    iteration controlled (see the module docstring); fast iterations also end once pushing the
    e-graph takes more than ``push_worth`` times as long as applying the matches (``math.inf``:
    never for that reason, whatever the clock says).

        runner = Runner(graph, rules.algebraic(), node_limit=50_000, iter_limit=30, time_limit=60)
        report = runner.run()
        print(report.stop_reason, report.iterations[-1].enodes)
    """

    def __init__(self, graph: Graph, rules: Sequence[Subst], node_limit: int = 50_000, iter_limit: int = 30,
                 time_limit: float = 60.0, match_limit: int = 1000, multi_match_limit: int = 100,
                 ban_length: int = 5, max_variadic: int = MAX_VARIADIC,
                 on_iteration: Callable[[Iteration], None] | None = None, params: Collection[str] = (),
                 extraction_reserve: float = 0.0, pair_iterations: int = 1, fast: bool = True,
                 push_worth: float = PUSH_WORTH, multi_iterations: int | None = None):
        start = time.perf_counter()
        self.egraph = EGraph()
        self.graph = graph
        self.handles = self.egraph.add_graph(graph, params)
        loaded = time.perf_counter()
        self.rules = list(rules)
        self.queries: list[list[Query]] = []
        for k, rule in enumerate(self.rules):
            queries = compile_rule(rule, k, self.egraph, max_variadic)
            rulesets = Rulesets.of_rule(k)
            self.egraph.run("\n".join([rulesets.declarations(), *(q.program(rulesets) for q in queries)]))
            self.queries.append(queries)
        self._mark_apart()
        self.node_limit, self.iter_limit = check_count("node_limit", node_limit), check_count("iter_limit", iter_limit)
        self.time_limit = check_seconds("time_limit", time_limit)
        self.extraction_reserve = extraction_reserve
        self.pair_iterations = check_count("pair_iterations", pair_iterations)
        if multi_iterations is not None:
            multi_iterations = check_count("multi_iterations", multi_iterations)
        self.scheduler = Scheduler([any(q.multi_output for q in qs) for qs in self.queries],
                                   match_limit, multi_match_limit, ban_length, multi_iterations)
        self.backlog = [0] * len(self.rules)
        self.push_worth = push_worth
        self.fast = fast  # until a fast iteration is refused or not worth its copy (then every one is controlled)
        self._prune = False  # the next search finds again what fast iterations applied
        self._pushed = 0  # e-nodes in the copies pushed on egglog's stack
        self._direct_sets: dict[tuple[int, ...], str] = {}
        self._defined: set[tuple[str, int, str]] = set()  # (query, variant, part) defined in egglog
        self._seconds_per_row: dict[str, float] = {}
        self._last_time: dict[str, float] = {}
        self.on_iteration = on_iteration
        self.report = Report(compile_time=time.perf_counter() - loaded, load_time=loaded - start)

    def run(self, deadline: float | None = None) -> Report:
        """Saturate until a limit; ``deadline`` (a ``time.perf_counter()`` value) overrides ``time_limit``."""
        self.deadline = time.perf_counter() + self.time_limit if deadline is None else deadline
        size = self.egraph.size()
        if not self.report.iterations:
            self.egraph.stamp(0)
        while True:
            n = len(self.report.iterations)
            if n >= self.iter_limit:
                return self._stop(StopReason.ITERATION_LIMIT)
            if n and time.perf_counter() + self._predicted_time(size) > self.deadline:
                return self._stop(StopReason.TIME_LIMIT)
            iteration, reason = self._iterate(n)
            self.egraph.stamp(n + 1)
            self.report.iterations.append(iteration)
            size = iteration.enodes
            if self.on_iteration is not None:
                self.on_iteration(iteration)
            if reason is not None:
                return self._stop(reason)

    def _iterate(self, n: int) -> tuple[Iteration, StopReason | None]:
        eg, names = self.egraph, [r.name for r in self.rules]
        banned = [names[k] for k in range(len(names)) if self.scheduler.banned(k, n)]
        searched = [k for k in range(len(self.rules)) if self.scheduler.should_search(k, n, self.backlog[k])]
        search, apply, found, new_bans = _Counts(), _Counts(), {}, []
        new_keys: dict[str, int] = {}
        accepted: dict[str, int] = {}
        rejected: dict[str, dict[str, int]] = {}
        ticks, reason = [time.perf_counter()], None
        if self._fast_possible(n, searched):
            try:
                fast = self._fast(n, searched, banned, new_keys, accepted, rejected)
            except _OutOfTime:
                fast = None
                reason = StopReason.TIME_LIMIT
            if fast is not None:
                return fast
        refused, self._prune = self._prune, False
        try:
            if reason is not None:
                raise _OutOfTime
            paired = [k for k in searched if self._pairs(k, n)]
            if searched:  # one egglog call for every search: calls cost, rule sets can be large
                rulesets = [f"search_{k}" for k in searched] + [f"find_{k}" for k in paired]
                found = self._per_rule_index(self._run(search, rulesets), searched)
            ticks.append(time.perf_counter())
            self._decide(searched, n, new_keys, accepted, rejected)
            self._run(search, ["reject"])
            if refused:  # this first search found again every match the fast iterations applied
                self._define_all("prune")
                self._run(search, ["prune"])
                rows = self._backlog(eg.table_sizes())
                found = {k: rows[k] for k in searched}
            for k in paired:
                found[k] += self._pair(k, search)
            ticks.append(time.perf_counter())
            sizes = eg.table_sizes()
            self.backlog = self._backlog(sizes)
            # a disconnected rule's pairs are already kept to its budget (_pair): no ban for them
            new_bans = [names[k] for k in searched
                        if k not in paired and self.scheduler.after_search(k, n, found[k])]
            self._define_all("apply")  # variants decided in fast iterations have no apply rules yet
            reason = self._apply_phase(n, apply, eg.size(sizes))
        except _OutOfTime:
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
            new_bans, rejected)
        if reason is None and enodes >= self.node_limit:
            reason = StopReason.NODE_LIMIT
        if reason is None and not (search.updated or apply.updated):
            if not any(self.backlog) and not self._unpaired(sizes, n + 1) and len(searched) == self.scheduler.active(n):
                reason = StopReason.SATURATED
            elif self.scheduler.any_banned(n + 1):  # nothing else changes: lift the bans early (egg does the same)
                self.scheduler.lift_bans()
        return iteration, reason

    def _fast_possible(self, n: int, searched: list[int]) -> bool:
        """Whether iteration ``n`` may be fast: no worklist holds matches, no rule pairs the
        parts of a disconnected source now, the pushed copy fits the node budget, and the
        iteration is predicted to end well before the deadline."""
        if not self.fast or any(self.backlog) or any(self._pairs(k, n) for k in searched):
            return False
        size = self.report.iterations[-1].enodes if self.report.iterations else len(self.graph)
        if self._pushed + size > self.node_limit:
            return False
        predicted = self._predicted_time(size) if self.report.iterations else 0.0
        return time.perf_counter() + 4 * predicted <= self.deadline

    def _fast(self, n: int, searched: list[int], banned: list[str], new_keys: dict[str, int],
              accepted: dict[str, int],
              rejected: dict[str, dict[str, int]]) -> tuple[Iteration, StopReason | None] | None:
        """A fast iteration (see the module docstring); None, the e-graph as it was, if it was refused
        (the keys it decided stay decided)."""
        eg, names, counts = self.egraph, [r.name for r in self.rules], _Counts()
        start = time.perf_counter()
        keyed_rules = [k for k in searched if not all(q.covered(eg) for q in self.queries[k] if not q.disconnected)]
        if keyed_rules:
            self._run(counts, [f"key_{k}" for k in keyed_rules])
        keyed = time.perf_counter()
        self._decide(searched, n, new_keys, accepted, rejected)
        decided = time.perf_counter()
        size = self.report.iterations[-1].enodes if self.report.iterations else eg.size()
        eg.egg.run_program(egg.Push(1))
        pushed = time.perf_counter()
        found = dict.fromkeys(searched, 0)
        try:
            if searched:
                found = self._per_rule_index(self._run(counts, [self._direct_set(searched)]), searched)
        except _OutOfTime:
            eg.egg.run_program(egg.Pop(SPAN, 1))
            raise
        sizes = eg.table_sizes()
        enodes = eg.size(sizes)
        if any(found[k] > self.scheduler.limit(k) for k in searched) or self._room(enodes)[0] < 0:
            eg.egg.run_program(egg.Pop(SPAN, 1))
            self._end_fast()
            return None
        self._pushed += size
        copy, applying = pushed - decided, time.perf_counter() - pushed
        if copy > self.push_worth * max(applying, 1e-3):  # egglog copies every table: small e-graphs of many rules
            self._end_fast()
        applied = {names[k]: m for k, m in found.items() if m}
        end = time.perf_counter()
        iteration = Iteration(enodes, {names[k]: m for k, m in found.items()}, new_keys, accepted, applied, banned,
                              keyed - start, decided - keyed, end - decided, counts.rebuild, end - start, {},
                              len(searched), [], rejected, fast=True)
        # no rule is banned while iterations are fast: a rule past its limit ends them
        if enodes >= self.node_limit:
            return iteration, StopReason.NODE_LIMIT
        return iteration, None if counts.updated or len(searched) < self.scheduler.active(n) else StopReason.SATURATED

    def _end_fast(self) -> None:
        """Make every later iteration controlled."""
        self.fast, self._prune = False, True
        self._define_all("apply")

    def _define(self, k: int, q: Query, v: Variant, parts: Iterable[str]) -> None:
        """Define in egglog the ``parts`` of variant ``v`` of rule ``k``'s query ``q`` not defined yet."""
        todo = [part for part in parts if (q.name, v.index, part) not in self._defined]
        if todo:
            self.egraph.run(q.variant_program(self.egraph, v, Rulesets.of_rule(k), todo))
            self._defined.update((q.name, v.index, part) for part in todo)

    def _define_all(self, part: str) -> None:
        """Define ``part`` of every variant decided so far."""
        for k, qs in enumerate(self.queries):
            for q in qs:
                for v in q.variants.values():
                    self._define(k, q, v, [part])

    def attribute(self, snap: Snapshot, choice: Mapping[Any, int], classes: Collection[Any]) -> Attribution:
        """:meth:`EGraph.attribute` with the provenance rules of every decided variant."""
        self._define_all("provenance")
        return self.egraph.attribute(snap, choice, classes)

    def _direct_set(self, rules: list[int]) -> str:
        """An egglog ruleset running the *direct* rules of ``rules`` together, as one iteration."""
        key = tuple(rules)
        if key not in self._direct_sets:
            name = self._direct_sets[key] = f"direct_set_{len(self._direct_sets)}"
            self.egraph.run(f"(unstable-combined-ruleset {name} {' '.join(f'direct_{k}' for k in rules)})")
        return self._direct_sets[key]

    def _apply_phase(self, n: int, counts: _Counts, enodes: int) -> StopReason | None:
        """Apply every rule's pending matches within its budget; the reason to stop if the node or
        time budget cut a rule short.

        ``enodes`` is kept an upper bound on the e-graph's size (an application adds at most the
        e-nodes its target creates) and measured when the bound leaves too little room. Rules
        applied whole go in one egglog call; a rule applied in part goes alone, bucket by bucket.
        """
        batch: list[int] = []

        def flush() -> None:
            if batch:
                self._run(counts, [f"apply_{k}" for k in batch], sum(self.backlog[k] for k in batch))
                batch.clear()

        for k in range(len(self.rules)):
            if not self.backlog[k] or self.scheduler.banned(k, n):
                continue
            created = max(q.created for q in self.queries[k])
            budget = min(self.scheduler.limit(k), self.backlog[k])
            reason = None
            if created and self._room(enodes)[0] < created * budget:
                flush()
                enodes = self.egraph.size()
                room, why = self._room(enodes)
                if room < created * budget:
                    budget, reason = max(0, math.floor(room / created)), why
            if budget == self.backlog[k]:
                batch.append(k)
                enodes += created * budget
            elif budget:
                flush()
                applied = self._apply_buckets(k, budget, counts)
                self.backlog[k] -= applied
                enodes += created * applied
                if reason is not None:
                    self._fill(k, created, applied, budget, counts)
            if reason is not None:
                flush()
                return reason
        flush()
        return None

    def _fill(self, k: int, created: int, applied: int, budget: int, counts: _Counts) -> None:
        """Rule ``k`` was cut short by the room left: its ``created`` e-nodes per application are an
        upper bound (targets share e-nodes with the e-graph), so apply more of its matches while the
        measured room, its limit and its backlog allow a round of at least an eighth of ``budget``."""
        for _ in range(FILL_ROUNDS):
            more = min(math.floor(self._room(self.egraph.size())[0] / created), self.backlog[k],
                       self.scheduler.limit(k) - applied)
            if more < max(1, budget // 8):
                return
            got = self._apply_buckets(k, more, counts)
            if not got:
                return
            self.backlog[k] -= got
            applied += got

    def _room(self, enodes: int) -> tuple[float, StopReason]:
        """How many e-nodes may still be added, and which limit says so."""
        room, reason = self.node_limit - enodes, StopReason.NODE_LIMIT
        if self.extraction_reserve > 0:
            time_room = (self.deadline - time.perf_counter()) / self.extraction_reserve - enodes
            if time_room < room:
                room, reason = time_room, StopReason.TIME_LIMIT
        return room, reason

    def _apply_buckets(self, k: int, budget: int, counts: _Counts) -> int:
        """Apply about ``budget`` of rule ``k``'s pending matches, bucket by bucket.

        Matches are lumpy: the matches of one e-class under associativity share most of
        their e-classes, so a few buckets can hold many. The first round aims at a quarter
        of the budget, later ones at half of what is left, each sized on the matches per
        bucket seen so far: a lump is seen before the budget is passed by much.
        """
        self.egraph.number()
        self._run(counts, [f"bucket_{k}"], self.backlog[k])
        applied, left, opened, density = 0, self.backlog[k], 0, self.backlog[k] / BUCKETS
        while left > 0 and applied < 0.8 * budget and opened < BUCKETS:
            want = (budget - applied) / (4 if not opened else 2)
            buckets = self.scheduler.buckets(k, min(want / density, BUCKETS - opened) / BUCKETS)
            got = sum(self._in_buckets(buckets, counts, f"window_{k}", round(density * len(buckets))).values())
            opened += len(buckets)
            applied, left = applied + got, left - got
            density = max(density, (applied / opened) if applied else density)
        return applied

    def _in_buckets(self, buckets: Iterable[int], counts: _Counts, ruleset: str, rows: int = 0) -> dict[str, int]:
        """Run ``ruleset`` (rules reading ``Open``) with ``buckets`` open; returns its matches per egglog rule."""
        self.egraph.egg.run_program(*(egg.ActionCommand(egg.Expr_(SPAN, egg.Call(SPAN, "Open", [int_literal(b)])))
                                      for b in buckets))
        matches = self._run(counts, [ruleset], rows)
        self.egraph.run("(run close 1)")
        return matches

    def _pair(self, k: int, counts: _Counts) -> int:
        """Pair the matches of rule ``k``'s disconnected parts; returns the combinations formed.

        A part's new matches wait in buckets. Making ``r`` rows of part ``c`` active
        forms ``r`` x (active rows of the other parts) new combinations, so the parts
        are made active in turn, by rounds of buckets sized on the rows still
        pending, until the rule's budget (its limit less its backlog) is reached:
        the combinations formed pass the budget by at most the last round's rows
        times their partners (a round aims at the rows the budget has left, one
        bucket at least, so every match is reached). A part is made active whole
        while another part has no active row (nothing pairs yet).
        Rows whose e-classes merge later pair again, as egglog matches anew what a
        merge changes; those pairs build what exists and add no e-node.
        """
        eg = self.egraph
        eg.number()
        self._run(counts, [f"pend_{k}"])
        budget = self.scheduler.limit(k) - self.backlog[k]
        for q in (q for q in self.queries[k] if q.disconnected):
            sizes = eg.table_sizes()
            active = [sizes.get(f"Act_{q.name}_{c}", 0) for c in range(len(q.components))]
            pending = [sizes.get(f"PendB_{q.name}_{c}", 0) for c in range(len(q.components))]
            for c in range(len(q.components)):
                others = math.prod(active[:c] + active[c + 1:])
                for _ in range(PAIRING_ROUNDS):
                    if not pending[c] or (others and budget <= 0):
                        break
                    share = min(1.0, budget / others / pending[c]) if others else 1.0
                    buckets = range(BUCKETS) if share >= 1 else self.scheduler.buckets(k, share)
                    self._in_buckets(buckets, counts, q.activate(c))
                    sizes = eg.table_sizes()
                    made = sizes.get(f"Act_{q.name}_{c}", 0) - active[c]
                    active[c], pending[c] = active[c] + made, pending[c] - made
                    budget -= made * others
        return sum(self._per_rule_index(self._run(counts, [f"pair_{k}"]), [k]).values())

    def _mark_apart(self) -> None:
        """``Apart`` for the loaded nodes a disconnected part's output could match (same kind and op)."""
        heads = {(q.slots[o].kind, q.slots[o].op) for qs in self.queries for q in qs if q.disconnected
                 for o in q.part_outputs()}
        if heads:
            nodes = [n for n in self.graph.rpo() if (n.kind, n.op) in heads]
            self.egraph.mark_apart(self.graph, self.handles, nodes)

    def _pairs(self, k: int, n: int) -> bool:
        """Whether rule ``k`` has a disconnected source it pairs the matches of in iteration ``n``."""
        return n < self.pair_iterations and any(q.disconnected for q in self.queries[k])

    def _unpaired(self, sizes: dict[str, int], n: int) -> int:
        """Matches of disconnected parts not made active yet, that iteration ``n`` may still pair."""
        return sum(sizes.get(f"{table}_{q.name}_{c}", 0) for k, qs in enumerate(self.queries) if self._pairs(k, n)
                   for q in qs if q.disconnected for c in range(len(q.components)) for table in ("Pend", "PendB"))

    def _backlog(self, sizes: dict[str, int]) -> list[int]:
        """Pending matches per rule: rows in its worklists."""
        return [sum(sizes.get(f"M_{q.name}", 0) + sizes.get(f"MB_{q.name}", 0) for q in qs) for qs in self.queries]

    def _run(self, counts: _Counts, rulesets: list[str], rows: int = 0) -> dict[str, int]:
        """One egglog iteration of each of ``rulesets`` in turn (one egglog call), unless it is
        predicted to end past the deadline; returns the matches per egglog rule. ``rows``: how
        many worklist rows it consumes, when that is known.

        egglog cannot be stopped inside a call, so each call's time is predicted: per row
        consumed for the calls that consume worklists (the slowest rate seen so far), else the
        time the same kind of call took last.
        """
        kind = rulesets[0].split("_")[0]
        predicted = self._seconds_per_row.get(kind, 0.0) * rows if rows else self._last_time.get(kind, 0.0)
        start = time.perf_counter()
        if start + predicted > self.deadline:
            raise _OutOfTime
        if len(rulesets) == 1:
            (out,) = self.egraph.run(f"(run {rulesets[0]} 1)")
        else:
            (out,) = self.egraph.run(f"(run-schedule (seq {' '.join(f'(run {r})' for r in rulesets)}))")
        took = time.perf_counter() - start
        if rows >= 100:
            self._seconds_per_row[kind] = max(self._seconds_per_row.get(kind, 0.0), took / rows)
        self._last_time[kind] = took
        return counts.add(out)

    @staticmethod
    def _per_rule_index(counts: dict[str, int], rules: list[int]) -> dict[int, int]:
        """egglog's per-rule counts (rules named "search r<k>_<q>", "apply r<k>_<q>_<v>[ bucketed]",
        "window r<k>_<q>_<v>", "direct r<k>_<q>_<v>") summed per GSL rule index, every one of
        ``rules`` included."""
        total = dict.fromkeys(rules, 0)
        for name, n in counts.items():
            words = name.split()
            if words[0] in ("search", "apply", "window", "direct"):
                k = int(words[1][1:].split("_")[0])
                total[k] = total.get(k, 0) + n
        return total

    def _predicted_time(self, size: int) -> float:
        its = self.report.iterations
        before = its[-2].enodes if len(its) > 1 else len(self.graph)
        return its[-1].total_time * max(1.0, size / max(before, 1))

    def _per_rule(self, counts: dict[str, int]) -> dict[str, int]:
        """egglog's per-rule counts summed per GSL rule name."""
        total: dict[str, int] = {}
        for k, n in self._per_rule_index(counts, []).items():
            total[self.rules[k].name] = total.get(self.rules[k].name, 0) + n
        return total

    def _stop(self, reason: StopReason) -> Report:
        self.egraph.run("(run clear 1)")  # worklists are not part of the e-graph
        self.egraph.fold()
        self.report.stop_reason = reason
        return self.report

    def _decide(self, rules: list[int], n: int, new_keys: dict[str, int], accepted: dict[str, int],
                rejected: dict[str, dict[str, int]]) -> None:
        """Decide every key not seen before; fill the tables of the accepted ones, mark the rejected ones.
        Counts new and accepted keys per rule name into ``new_keys`` and ``accepted``, rejected ones
        per rule name and reason into ``rejected``."""
        eg = self.egraph
        commands = []
        plain = [q for k in rules for q in self.queries[k] if not q.disconnected]
        rows = dict(zip((q.name for q in plain), self._keys(*((f"Key_{q.name}", q.key_arity) for q in plain))))
        for k in rules:
            name = self.rules[k].name
            for q in self.queries[k]:
                if q.disconnected and not self._pairs(k, n):
                    continue
                keys = self._combinations(q) if q.disconnected else rows[q.name]
                fresh = [key for key in keys if key not in q.seen]
                new_keys[name] = new_keys.get(name, 0) + len(fresh)
                ok = 0
                for key in fresh:
                    if time.perf_counter() > self.deadline:
                        raise _OutOfTime
                    q.seen.add(key)
                    args = [int_literal(v) for v in key]
                    known = len(q.variants)
                    decision = q.decide(eg, key)
                    if isinstance(decision, str):
                        reasons = rejected.setdefault(name, {})
                        reasons[decision] = reasons.get(decision, 0) + 1
                        if not q.disconnected:  # a rejected combination has no rows to drop
                            commands.append(egg.ActionCommand(egg.Expr_(SPAN, egg.Call(SPAN, f"Rej_{q.name}", args))))
                        continue
                    if q.disconnected:
                        commands.append(egg.ActionCommand(egg.Expr_(SPAN, egg.Call(SPAN, f"Pair_{q.name}", args))))
                    variant, payloads = decision
                    if len(q.variants) > known:
                        self._define(k, q, variant, ["tables", "direct" if self.fast else "apply"])
                    ok += 1
                    table = f"{q.name}_{variant.index}"
                    for (kind, op, children), payload in zip(variant.created, payloads):
                        eg.note_literal(head_name(kind, op, len(children)), payload)
                    for j, payload in enumerate(payloads):
                        commands.append(egg.ActionCommand(egg.Set(SPAN, f"A_{table}_{j}", args, int_literal(payload))))
                    if not payloads:
                        commands.append(egg.ActionCommand(egg.Set(SPAN, f"Ok_{table}", args, int_literal(1))))
                accepted[name] = accepted.get(name, 0) + ok
        if commands:
            eg.egg.run_program(*commands)

    def _keys(self, *relations: tuple[str, int]) -> list[list[tuple[int, ...]]]:
        """The rows of each (key relation, arity), in one egglog call (only they are read, not the e-graph)."""
        if not relations:
            return []
        outs = self.egraph.egg.run_program(
            *(egg.PrintFunction(SPAN, relation, None, None, egg.CSVPrintFunctionMode()) for relation, _ in relations))
        return [[tuple(int(v) for v in line.split(",")[1:1 + arity]) for line in str(out).splitlines() if line]
                for out, (_, arity) in zip(outs, relations)]

    def _combinations(self, q: Query) -> list[tuple[int, ...]]:
        """The keys of disconnected ``q`` combining its parts' keys that were not combined before:
        those whose first part key new this time is that of part ``c``, for each ``c``."""
        keys = self._keys(*((f"Key_{q.name}_{c}", len(q.key_positions(part))) for c, part in enumerate(q.components)))
        new = [[key for key in ks if key not in seen] for ks, seen in zip(keys, q.component_seen)]
        old = [list(seen) for seen in q.component_seen]
        combinations = []
        for c in range(len(keys)):
            pools = [old[d] if d < c else new[c] if d == c else keys[d] for d in range(len(keys))]
            combinations += itertools.product(*pools)
        for seen, fresh in zip(q.component_seen, new):
            seen.update(fresh)
        positions = [q.key_positions(part) for part in q.components]
        full = []
        for combination in combinations:
            key = [0] * q.key_arity
            for where, part_key in zip(positions, combination):
                for j, v in zip(where, part_key):
                    key[j] = v
            full.append(tuple(key))
        return full
