"""Pairing the matches of a rule whose source outputs share no node.

Such a source (``[relu(a), relu(b)]``) is matched part by part; its matches are the
combinations of its parts' matches, which grow with the square of them. They are
formed in the first ``pair_iterations`` iterations only (TENSAT's ``iter_multi``), at
loaded nodes neither of which reads the other (a pair where one does makes a cycle:
``Apart``), at most about the rule's limit of new pairs per iteration
(:meth:`Pairing._pair_all`).
"""

from __future__ import annotations

import itertools
import math

from .calls import Counts
from .compile import Query
from .egraph import BUCKETS

#: How many rounds of buckets :meth:`Pairing._pair_in_rounds` opens per part and iteration.
PAIRING_ROUNDS = 8


class Pairing:
    """The :class:`~.runner.Runner`'s pairing of disconnected parts: reads ``egraph``, ``graph``,
    ``handles``, ``queries``, ``rule_queries``, ``scheduler``, ``backlog`` and ``pair_iterations``."""

    def _pair_all(self, paired: list[int], counts: Counts) -> dict[int, int]:
        """Pair the matches of the disconnected parts of each rule in ``paired``; returns the
        combinations formed per rule.

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

        egglog calls cost more than small rules do, so the rules whose budget admits every
        pending row (most, on small graphs) are paired together: every bucket opened once for
        all of their parts, which is what the rounds would do one rule at a time.
        """
        if not paired:
            return {}
        eg = self.egraph
        eg.number()
        self._run(counts, [f"pend_{k}" for k in paired])
        sizes = eg.table_sizes()
        whole = [k for k in paired if self._admits_all(k, sizes)]
        if whole:
            self._in_buckets(range(BUCKETS), counts,
                             [q.activate(c) for k in whole for q in self.queries[k] if q.disconnected
                              for c in range(len(q.components))])
        for k in paired:
            if k not in whole:
                self._pair_in_rounds(k, counts)
        return self._per_rule_index(self._run(counts, [f"pair_{k}" for k in paired]), paired)

    def _admits_all(self, k: int, sizes: dict[str, int]) -> bool:
        """Whether rule ``k``'s budget admits activating every pending row of its parts: the
        rounds of :meth:`_pair_in_rounds` would then open every bucket at their first round."""
        budget = self.scheduler.limit(k) - self.backlog[k]
        for q in (q for q in self.queries[k] if q.disconnected):
            active = [sizes.get(f"Act_{q.name}_{c}", 0) for c in range(len(q.components))]
            for c in range(len(q.components)):
                pending = sizes.get(f"PendB_{q.name}_{c}", 0)
                others = math.prod(active[:c] + active[c + 1:])
                if pending and others:
                    if budget < others * pending:
                        return False
                    budget -= others * pending
                active[c] += pending
        return True

    def _pair_in_rounds(self, k: int, counts: Counts) -> None:
        """Make the pending rows of rule ``k``'s parts active by rounds of buckets, within its budget."""
        eg = self.egraph
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
                    self._in_buckets(buckets, counts, [q.activate(c)])
                    sizes = eg.table_sizes()
                    made = sizes.get(f"Act_{q.name}_{c}", 0) - active[c]
                    active[c], pending[c] = active[c] + made, pending[c] - made
                    budget -= made * others

    def _mark_apart(self) -> None:
        """``Apart`` for the loaded nodes a disconnected part's output could match (same kind and op)."""
        heads = {(q.slots[o].kind, q.slots[o].op) for qs in self.rule_queries for q in qs if q.disconnected
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
