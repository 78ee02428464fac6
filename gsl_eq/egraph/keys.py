"""Deciding the keys of matches: the one step of an iteration that runs in Python.

A search records, per rule, the distinct *keys* of its matches (the matched ops'
attributes, types and constants: :mod:`.compile`). Each key is decided once
(:meth:`~.compile.Query.decide`: source guard, target attributes and types); an accepted
key fills the tables its variant's apply rules read and defines that variant in egglog
the first time it is seen; a rejected key's rows are dropped by the ``reject`` rules.
"""

from __future__ import annotations

import time
from typing import Iterable

from egglog import bindings as egg

from .calls import OutOfTime
from .compile import Query, Rulesets, UnsupportedRuleError, Variant
from .egraph import SPAN, head_name, int_literal


class KeyDecisions:
    """The :class:`~.runner.Runner`'s decisions: reads ``egraph``, ``rules``, ``queries``, ``deadline``
    and the variants defined so far (``_defined``); keeps the rows read of each key
    relation (``_key_rows``)."""

    def _decide(self, rules: list[int], n: int, new_keys: dict[str, int], accepted: dict[str, int],
                rejected: dict[str, dict[str, int]], part: str) -> None:
        """Decide every key not seen before; fill the tables of the accepted ones, mark the rejected ones,
        and define each new variant's rules of ``part`` ("direct" in a fast iteration, "apply" in a
        controlled one). Counts new and accepted keys per rule name into ``new_keys`` and ``accepted``,
        rejected ones per rule name and reason into ``rejected``."""
        eg = self.egraph
        commands = []
        # key relations only grow: one whose size is unchanged holds no key not seen
        sizes = eg.table_sizes()
        grown = [q for k in rules for q in self.queries[k]
                 if not q.disconnected and sizes.get(f"Key_{q.name}", 0) != self._key_rows.get(q.name, 0)]
        rows = dict(zip((q.name for q in grown), self._keys(*((f"Key_{q.name}", q.key_arity) for q in grown))))
        self._key_rows.update((name, len(keys)) for name, keys in rows.items())
        for k in rules:
            name = self.rules[k].name
            for q in self.queries[k]:
                if q.disconnected and not self._pairs(k, n):
                    continue
                keys = self._combinations(q) if q.disconnected else rows.get(q.name, ())
                fresh = [key for key in keys if key not in q.seen]
                new_keys[name] = new_keys.get(name, 0) + len(fresh)
                ok = 0
                for key in fresh:
                    if time.perf_counter() > self.deadline:
                        raise OutOfTime
                    q.seen.add(key)
                    args = [int_literal(v) for v in key]
                    decision = q.decide(eg, key)
                    if q.mirrors:
                        self._check_mirrors(q, key, decision)
                    if isinstance(decision, str):
                        reasons = rejected.setdefault(name, {})
                        reasons[decision] = reasons.get(decision, 0) + 1
                        if not q.disconnected:  # a rejected combination has no rows to drop
                            commands.append(egg.ActionCommand(egg.Expr_(SPAN, egg.Call(SPAN, f"Rej_{q.name}", args))))
                        continue
                    if q.disconnected:
                        commands.append(egg.ActionCommand(egg.Expr_(SPAN, egg.Call(SPAN, f"Pair_{q.name}", args))))
                    variant, payloads = decision
                    self._define(k, q, variant, ["tables", part])  # once per variant
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

    def _check_mirrors(self, q: Query, key: tuple[int, ...], decision: object) -> None:
        """A symmetric rule applies one of each set of mirrored matches: a match and each of its
        mirrors (two neighbouring outputs swapped) must be decided alike."""
        for mirror in q.mirrors:
            other = q.mirrored(key, mirror)
            if other == key:
                continue
            verdict = q.decide(self.egraph, other)
            if isinstance(verdict, str) != isinstance(decision, str):
                raise UnsupportedRuleError(
                    f"rule {q.rule.name} is symmetric, but of a match and its mirror (two outputs swapped) one is "
                    f"accepted and the other rejected ({decision if isinstance(decision, str) else verdict}): its "
                    "outputs are not interchangeable; build it without symmetric=True")

    def _keys(self, *relations: tuple[str, int]) -> list[list[tuple[int, ...]]]:
        """The rows of each (key relation, arity), in one egglog call (only they are read, not the e-graph)."""
        if not relations:
            return []
        outs = self.egraph.egg.run_program(
            *(egg.PrintFunction(SPAN, relation, None, None, egg.CSVPrintFunctionMode()) for relation, _ in relations))
        return [[tuple(int(v) for v in line.split(",")[1:1 + arity]) for line in str(out).splitlines() if line]
                for out, (_, arity) in zip(outs, relations)]

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
