"""Fast iterations: every new match applied at once, on a copy that can be dropped.

An iteration is *fast* while the limits are far: egglog records the keys of every
source's matches (it enumerates only their distinct values, which costs little),
Python decides the new ones, and one egglog call applies every new match of a
decided key directly, as rules written in egglog would (:meth:`FastIterations._fast`). The
e-graph is pushed on egglog's stack first; if a rule found more matches than its
limit or the e-graph passed the node limit, it is popped back and the iteration is
run *controlled* instead, as is every later one: the pushed copies cannot be
dropped, so they are made only while they add up to less than ``node_limit``
e-nodes. A copy that took more than :data:`PUSH_WORTH` times as long as applying the
matches (egglog copies every table, so a small e-graph of many rules is cheaper to run
controlled) makes the next iteration controlled. After a controlled iteration, the copy is predicted
(:data:`PUSH_SECONDS_PER_TABLE`) against the applying a fast iteration would save
(:data:`FAST_SHARE`), and the iteration is fast only if the copy pays. On TENSAT's
graphs under its rules (many tables, few matches an iteration) none is, and saturation
takes less time than with fast iterations, while the growth cases of BENCHMARKS.md's
saturation-overhead section stay fast throughout.
A variant's direct rules are defined when a fast iteration first needs them.
"""

from __future__ import annotations

import time

from egglog import bindings as egg

from ..run.limits import StopReason
from .calls import Counts, OutOfTime
from .egraph import SPAN
from .report import Iteration

#: Fast iterations end when pushing the e-graph took more than this many times as long as
#: applying the matches (or a millisecond): the copy is their cost, controlled ones have none.
#: After a controlled iteration, one is fast only if the copy is predicted to take no longer.
PUSH_WORTH = 2.0
#: Pushing an e-graph takes about this long per egglog table, whatever its rows: the copy's cost
#: follows the number of tables, not their rows, so it weighs most on small e-graphs of many rules.
PUSH_SECONDS_PER_TABLE = 4e-5
#: A fast iteration's applying against a controlled one's search and apply: applying alone is about
#: half of the work (BENCHMARKS.md, saturation-overhead).
FAST_SHARE = 0.5


class FastIterations:
    """The :class:`~.runner.Runner`'s fast iterations: read ``egraph``, ``rules``, ``queries``,
    ``scheduler``, ``report``, ``node_limit``, ``deadline`` and ``push_worth``; keep ``fast``,
    ``_controlled_next``, ``_pushed`` and the combined rulesets ``_direct_sets``."""

    def _fast_possible(self, n: int, searched: list[int]) -> bool:
        """Whether iteration ``n`` may be fast: no worklist holds matches, no rule pairs the
        parts of a disconnected source now, the pushed copy fits the node budget, and the
        iteration is predicted to end well before the deadline."""
        if not self.fast or self._controlled_next or any(self.backlog) or any(self._pairs(k, n) for k in searched):
            self._controlled_next = False
            return False
        size = self._size()
        if self._pushed + size > self.node_limit:
            return False
        its = self.report.iterations
        if its and not its[-1].fast and self._copy_time() > self.push_worth * self._fast_applying(size):
            return False
        predicted = self._predicted_time(size) if its else 0.0
        return time.perf_counter() + 4 * predicted <= self.deadline

    def _copy_time(self) -> float:
        """What pushing the e-graph is predicted to take: egglog copies every table."""
        return PUSH_SECONDS_PER_TABLE * len(self.egraph.table_sizes())

    def _fast_applying(self, size: int) -> float:
        """What a fast iteration's applying is predicted to take after a controlled iteration: half the
        latter's search and apply, grown as the e-graph did (or a millisecond)."""
        last = self.report.iterations[-1]
        return max(FAST_SHARE * (last.search_time + last.apply_time) * size / max(last.enodes, 1), 1e-3)

    def _fast(self, n: int, searched: list[int], banned: list[str], new_keys: dict[str, int],
              accepted: dict[str, int], rejected: dict[str, dict[str, int]],
              start: float) -> tuple[Iteration, StopReason | None] | None:
        """A fast iteration (see the module docstring), timed from ``start``; None, the e-graph as it was,
        if it was refused (the keys it decided stay decided)."""
        eg, names, keying, counts = self.egraph, [r.name for r in self.rules], Counts(), Counts()
        keyed_rules = [k for k in searched if not all(q.covered(eg) for q in self.queries[k] if not q.disconnected)]
        if keyed_rules:
            self._run(keying, [f"key_{k}" for k in keyed_rules])
        keyed = time.perf_counter()
        self._decide(searched, n, new_keys, accepted, rejected, "direct")
        self._define_all("direct")  # variants decided in controlled iterations have no direct rules yet
        decided = time.perf_counter()
        size = self.report.iterations[-1].enodes if self.report.iterations else eg.size()
        eg.egg.run_program(egg.Push(1))
        pushed = time.perf_counter()
        found = dict.fromkeys(searched, 0)
        try:
            if searched:
                found = self._per_rule_index(self._run(counts, [self._direct_set(searched)]), searched)
        except OutOfTime:
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
            self._controlled_next = True
        applied = {names[k]: m for k, m in found.items() if m}
        end = time.perf_counter()
        iteration = Iteration(enodes, {names[k]: m for k, m in found.items()}, new_keys, accepted, applied, banned,
                              keyed - start, decided - keyed, end - decided, keying.rebuild + counts.rebuild,
                              end - start, {},
                              len(searched), [], rejected, fast=True)
        # no rule is banned while iterations are fast: a rule past its limit ends them
        if enodes >= self.node_limit:
            return iteration, StopReason.NODE_LIMIT
        # as in a controlled iteration, only applying changes the e-graph (new keys do not)
        return iteration, None if counts.updated or len(searched) < self.scheduler.active(n) else self._nothing_left()

    def _end_fast(self) -> None:
        """Make every later iteration controlled."""
        self.fast = False
        self._define_all("apply")

    def _direct_set(self, rules: list[int]) -> str:
        """An egglog ruleset running the *direct* rules of ``rules`` together, as one iteration."""
        key = tuple(rules)
        if key not in self._direct_sets:
            name = self._direct_sets[key] = f"direct_set_{len(self._direct_sets)}"
            self.egraph.run(f"(unstable-combined-ruleset {name} {' '.join(f'direct_{k}' for k in rules)})")
        return self._direct_sets[key]
