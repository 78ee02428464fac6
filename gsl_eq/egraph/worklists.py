"""Controlled application: worklists drained within each rule's budget, in part by buckets.

A controlled iteration's search leaves each match as a row of its rule's worklist
(:mod:`.compile`); :meth:`Worklists._apply_phase` consumes them: every rule whose rows
fit its budget in one egglog call, a rule that does not alone, bucket by bucket, about
the budget's worth. The budget is the scheduler's limit, capped by the node headroom
divided by the e-nodes one application creates, so the e-graph never exceeds
``node_limit``; with ``extraction_reserve`` also by the e-nodes the time left could
still extract.
"""

from __future__ import annotations

import math
import time

from ..run.limits import StopReason
from .calls import Counts
from .egraph import BUCKETS, BucketSpan

#: How many more rounds :meth:`Worklists._fill` applies of a rule cut short by the node budget.
FILL_ROUNDS = 3


class Worklists:
    """The :class:`~.runner.Runner`'s application of worklists: reads ``egraph``, ``rules``,
    ``queries``, ``scheduler``, ``node_limit``, ``extraction_reserve`` and ``deadline``; keeps
    ``backlog`` (pending rows per rule)."""

    def _apply_phase(self, n: int, counts: Counts, enodes: int) -> StopReason | None:
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
            reason, exact = None, False
            if created and self._room(enodes)[0] < created * self.backlog[k]:
                flush()
                enodes = self.egraph.size()
                room, why = self._room(enodes)
                # buckets are lumpy: applied about the budget, a rule may pass it by half and more
                exact = room < created * self.backlog[k]
                if room < created * budget:
                    budget, reason = max(0, math.floor(room / created)), why
            if budget == self.backlog[k]:
                batch.append(k)
                enodes += created * budget
            elif budget:
                flush()
                applied = self._apply_buckets(k, budget, counts, exact=exact)
                self.backlog[k] -= applied
                enodes += created * applied
                if reason is not None:
                    applied = self._fill(k, created, applied, budget, counts)
                    if applied >= self.scheduler.limit(k) or not self.backlog[k]:
                        # all the rule may apply this iteration fitted after all (its targets share
                        # e-nodes with the e-graph): the room is not spent, the next rules go on
                        reason, enodes = None, self.egraph.size()
            if reason is not None:
                flush()
                return reason
        flush()
        return None

    def _fill(self, k: int, created: int, applied: int, budget: int, counts: Counts) -> int:
        """Rule ``k`` was cut short by the room left: its ``created`` e-nodes per application are an
        upper bound (targets share e-nodes with the e-graph), so apply more of its matches while the
        measured room, its limit and its backlog allow a round of at least an eighth of ``budget``.
        Returns how many of its matches this iteration applied."""
        for _ in range(FILL_ROUNDS):
            more = min(math.floor(self._room(self.egraph.size())[0] / created), self.backlog[k],
                       self.scheduler.limit(k) - applied)
            if more < max(1, budget // 8):
                break
            got = self._apply_buckets(k, more, counts, exact=True)
            if not got:
                break
            self.backlog[k] -= got
            applied += got
        return applied

    def _room(self, enodes: int) -> tuple[float, StopReason]:
        """How many e-nodes may still be added, and which limit says so."""
        room, reason = self.node_limit - enodes, StopReason.NODE_LIMIT
        if self.extraction_reserve > 0:
            time_room = (self.deadline - time.perf_counter()) / self.extraction_reserve - enodes
            if time_room < room:
                room, reason = time_room, StopReason.TIME_LIMIT
        return room, reason

    def _apply_buckets(self, k: int, budget: int, counts: Counts, exact: bool = False) -> int:
        """Apply about ``budget`` of rule ``k``'s pending matches, bucket by bucket; with
        ``exact`` (the budget is the room the node limit leaves), never more than ``budget``.

        Matches are lumpy: the matches of one e-class under associativity share most of
        their e-classes, so a few buckets can hold many. The first round aims at a quarter
        of the budget, later ones at half of what is left, each sized on the matches per
        bucket seen so far: a lump is seen before the budget is passed by much. Where that
        is too much, the rows of a round's buckets are counted first, and a round that would
        pass the budget opens half its buckets instead (:meth:`_fitting`).
        """
        self.egraph.number()
        self._run(counts, [f"bucket_{k}"], self.backlog[k])
        applied, left, opened, density = 0, self.backlog[k], 0, self.backlog[k] / BUCKETS
        while left > 0 and applied < (budget if exact else 0.8 * budget) and opened < BUCKETS:
            want = (budget - applied) / (4 if not opened else 2)
            buckets = self.scheduler.buckets(k, min(want / density, BUCKETS - opened) / BUCKETS)
            opened += len(buckets)
            if exact:
                buckets = self._fitting(k, buckets, budget - applied)
                if not buckets:
                    break
            got = sum(self._in_buckets(buckets, counts, [f"window_{k}"], round(density * len(buckets))).values())
            applied, left = applied + got, left - got
            density = max(density, (applied / opened) if applied else density)
        return applied

    def _fitting(self, k: int, buckets: BucketSpan, most: int) -> BucketSpan | None:
        """The first half, quarter, ... of ``buckets`` whose rows of rule ``k`` number at most
        ``most`` (counted by egglog before any is applied); None if not even the first bucket's do."""
        if k not in self._peeking:
            self.egraph.run("\n".join([f"(ruleset peek_{k})", f"(ruleset unpeek_{k})",
                                       *(q.peek_program(k) for q in self.queries[k])]))
            self._peeking.add(k)
        while buckets:
            self.egraph.open_buckets(buckets)
            self.egraph.run(f"(run peek_{k} 1)")
            sizes = self.egraph.table_sizes()
            rows = sum(sizes.get(f"Peek_{q.name}", 0) for q in self.queries[k])
            self.egraph.run(f"(run-schedule (seq (run unpeek_{k}) (run close)))")
            if rows <= most:
                return buckets
            buckets = buckets.first(len(buckets) // 2)
        return None

    def _backlog(self, sizes: dict[str, int]) -> list[int]:
        """Pending matches per rule: rows in its worklists."""
        return [sum(sizes.get(f"M_{q.name}", 0) + sizes.get(f"MB_{q.name}", 0) for q in qs) for qs in self.queries]
