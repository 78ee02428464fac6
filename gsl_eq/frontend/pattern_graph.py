"""Pattern graphs (*pattern graph* in the documentation's glossary): the structure an executor walks.

A pattern graph is given by its output patterns; its vertices are every pattern
reachable backwards through ``inputs``. The reverse post-order and the
successor lists are as in a computation graph (:class:`~gsl_eq.graph.graph.Graph`): outputs in
order, predecessors in order, and each successor list a subsequence of the
reverse post-order. A target graph stops at source patterns (its ``boundary``):
they are matched, not built.
"""

from __future__ import annotations

from typing import Collection, Iterator, Sequence

from .pat import Instance, Pattern, Variadic


class PatternGraph:
    """A source or target pattern graph with what execution needs precomputed.

    ``outputs``: the output patterns, in order. ``rpo``: every vertex in
    reverse post-order. ``succ``: each vertex's successors, in ``rpo`` order.
    ``inputs``: the vertices the graph reads but does not compute, in ``rpo``
    order: the leaves of a source; the source patterns and instance accesses of
    a target. ``variadics``: the variadic patterns among the vertices.
    """

    def __init__(self, outputs: Sequence[Pattern], boundary: Collection[Pattern] = frozenset()):
        self.outputs: tuple[Pattern, ...] = tuple(outputs)
        self.boundary = frozenset(boundary)
        self.rpo: tuple[Pattern, ...] = self._reverse_post_order()
        self.vertices: frozenset[Pattern] = frozenset(self.rpo)
        self.succ: dict[Pattern, tuple[Pattern, ...]] = self._successors()
        self.inputs: tuple[Pattern, ...] = tuple(
            p for p in self.rpo if p in self.boundary or isinstance(p, Instance) or (not self.boundary and not p.inputs)
        )
        self.variadics: tuple[Variadic, ...] = tuple(p for p in self.rpo if isinstance(p, Variadic))

    def preds(self, p: Pattern) -> tuple[Pattern, ...]:
        """The ordered predecessors of ``p`` in this graph (none for a boundary pattern)."""
        return () if p in self.boundary else p.inputs

    def reach(self, p: Pattern) -> frozenset[Pattern]:
        """R(p): the vertices with a path to ``p``, ``p`` included."""
        seen: set[Pattern] = set()
        stack = [p]
        while stack:
            q = stack.pop()
            if q not in seen:
                seen.add(q)
                stack.extend(self.preds(q))
        return frozenset(seen)

    def _reverse_post_order(self) -> tuple[Pattern, ...]:
        order: list[Pattern] = []
        seen: set[Pattern] = set()
        for out in self.outputs:
            if out in seen:
                continue
            seen.add(out)
            stack = [(out, iter(self.preds(out)))]
            while stack:
                p, preds = stack[-1]
                for q in preds:
                    if q not in seen:
                        seen.add(q)
                        stack.append((q, iter(self.preds(q))))
                        break
                else:
                    stack.pop()
                    order.append(p)
        return tuple(order)

    def _successors(self) -> dict[Pattern, tuple[Pattern, ...]]:
        succ: dict[Pattern, list[Pattern]] = {p: [] for p in self.rpo}
        for p in self.rpo:
            for q in self.preds(p):
                users = succ[q]
                if not users or users[-1] is not p:
                    users.append(p)
        return {p: tuple(users) for p, users in succ.items()}

    def __contains__(self, p: object) -> bool:
        return p in self.vertices

    def __iter__(self) -> Iterator[Pattern]:
        return iter(self.rpo)

    def __len__(self) -> int:
        return len(self.rpo)
