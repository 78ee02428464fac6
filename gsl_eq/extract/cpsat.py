"""The exact extractor's program for cyclic e-graphs, solved by OR-Tools' CP-SAT.

Rewrites such as TASO's split/concat pairs put e-classes on cycles: ``a`` holds
``split0(m)`` while ``m`` holds ``concat(a, b)``. A choice that follows such a cycle
computes nothing, and the plain program (:mod:`.ilp`) prices it at almost nothing, so
its relaxation is useless there and cutting cycles off one by one never ends on
TENSAT's e-graphs. Here acyclicity is part of the model, and only where it can be
violated: the e-classes of each strongly connected part of the class graph get an
order variable with the part's size as its range, and a chosen e-node must sit above
each child in its own part. Edges between parts cannot close a cycle and get nothing.

CP-SAT rather than HiGHS because it searches this model well (BENCHMARKS.md,
extraction): its portfolio of large-neighbourhood searches, started from the warm
start, reaches the best known costs of extraction-gym's TENSAT BERT, ResNet-50 and VGG
and proves some of them optimal, where HiGHS on the same model with big-M order rows
found nothing better than the warm start in the same time. Costs are scaled so that the
warm start costs ``SCALE`` and rounded down, so CP-SAT's bound is a lower bound on
the real cost as well.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from ..graph.walk import postorder
from .cyclic import cyclic_parts
from .indexed import Indexed
from .fusion import fusion_rows, fusion_terms, taken
from .implied import implied_rows
from .parts import part_nodes, with_parts

#: CP-SAT's workers. More than the cores: each worker runs another search strategy, and on two cores six
#: workers proved optima that two left open (BENCHMARKS.md, extraction-solvers).
WORKERS = 6
#: What the warm start costs once scaled: rounding each e-node's cost down loses at most 1 / SCALE of it.
SCALE = 1e9


class CpSatProgram:
    """The extraction model over the kept e-nodes (``nodes``, ascending e-node numbers) for CP-SAT.

    Booleans: ``chosen`` per e-node and ``used`` per class (the sum of its e-nodes);
    roots are used; a chosen e-node uses its child classes; in a cyclic part, a chosen
    e-node's class is ordered above its children in that part; what every term of a used
    class contains is used (:mod:`.implied`); a cost model's fusion savings as :mod:`.fusion`
    writes them. Same interface as the
    HiGHS program of :mod:`.ilp`: :meth:`start_from`, :meth:`solve`, :meth:`forbid`,
    :meth:`infeasible`.
    """

    def __init__(self, graph: Indexed, nodes: list[int], roots: list[int], bound: float, parts: bool = True):
        from ortools.sat.python import cp_model

        self.graph, self.nodes = graph, nodes
        self.model = model = cp_model.CpModel()
        self.chosen = {node: model.NewBoolVar(f"n{node}") for node in nodes}
        members: dict[int, list[int]] = {}
        for node in nodes:
            members.setdefault(graph.node_class[node], []).append(node)
        self.used = {cls: model.NewBoolVar(f"c{cls}") for cls in members}
        for cls, own in members.items():
            model.Add(sum(self.chosen[node] for node in own) == self.used[cls])
        for root in roots:
            model.Add(self.used[root] == 1)
        part = cyclic_parts(graph, nodes)
        self.part = part
        self.order = order = {cls: model.NewIntVar(0, size - 1, f"o{cls}") for cls, (_, size) in part.items() if size > 1}
        for node in nodes:
            cls = graph.node_class[node]
            for child in graph.node_children[node]:
                model.AddImplication(self.chosen[node], self.used[child])
                if cls in order and part[child][0] == part[cls][0]:
                    model.Add(order[cls] > order[child]).OnlyEnforceIf(self.chosen[node])
        pairs, partial = implied_rows(graph, nodes)
        for cls, inner in pairs:
            model.AddImplication(self.used[cls], self.used[inner])
        for containing, inner in partial:
            model.Add(sum(self.chosen[node] for node in containing) <= self.used[inner])
        self.parts = part_nodes(graph, nodes, part) if parts else []
        for node in self.parts:
            model.Add(self.chosen[node] == self.used[graph.parts[node]])
        self.scale = SCALE / bound if bound > 0 else 1.0
        self.roots, self.terms = roots, fusion_terms(graph, nodes, roots)
        self.fused = [model.NewBoolVar(f"f{k}") for k in range(len(self.terms))]
        for row in fusion_rows(self.terms):
            model.Add(sum(int(c) * self.fused[k] for k, c in row.terms) + sum(int(c) * self.chosen[n] for n, c in row.nodes)
                      <= int(row.upper))
        # savings rounded up, costs down: the scaled objective stays a lower bound on the real cost
        model.Minimize(sum(math.floor(graph.node_cost[node] * self.scale) * self.chosen[node] for node in nodes
                           if graph.node_cost[node] > 0)
                       - sum(math.ceil(term.saving * self.scale) * fused for term, fused in zip(self.terms, self.fused)))
        self.cyclic_classes = len(order)
        self.cuts = 0  # acyclic by construction: no cycle is ever cut off
        self._infeasible = False

    def start_from(self, choice: dict[int, int]) -> None:
        """The warm start as CP-SAT's hint: class position -> e-node number. The hint sets every
        variable, the order ones too, so that CP-SAT takes it as its first solution as it is (an
        incomplete hint must be completed by search first: on a 50,000-e-node inception block,
        CP-SAT had no solution at all after four seconds)."""
        self.model.ClearHints()
        choice = with_parts(self.graph, self.parts, choice)
        picked = set(choice.values())
        for node, var in self.chosen.items():
            self.model.AddHint(var, node in picked)
        for cls, var in self.used.items():
            self.model.AddHint(var, cls in choice)
        for var, on in zip(self.fused, taken(self.graph, self.terms, choice, self.roots)):
            self.model.AddHint(var, on)
        height = self._heights(choice)
        for cls, var in self.order.items():
            self.model.AddHint(var, height.get(cls, 0))

    def _heights(self, choice: dict[int, int]) -> dict[int, int]:
        """Per class of an acyclic choice in a cyclic part: the longest chain of chosen e-nodes
        below it within its part, an order that satisfies the model (a chain of distinct classes
        of a part of size k is shorter than k), so that the hint is complete and feasible."""
        order, _ = postorder(self.roots, lambda cls: self.graph.node_children[choice[cls]])
        height: dict[int, int] = {}
        for cls in order:
            if cls in self.order:
                same = [height[child] + 1 for child in self.graph.node_children[choice[cls]]
                        if child in self.order and self.part[child][0] == self.part[cls][0]]
                height[cls] = max(same, default=0)
        return height

    def solve(self, deadline: float) -> tuple[dict[int, int] | None, bool, float | None]:
        """(the chosen e-node per used class position, or None; optimality proved; lower bound)."""
        from ortools.sat.python import cp_model

        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = max(deadline - time.perf_counter(), 0.0)
        solver.parameters.num_workers = WORKERS
        status = solver.Solve(self.model)
        self._infeasible = status == cp_model.INFEASIBLE
        bound = solver.BestObjectiveBound() / self.scale if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None, False, bound
        choice = {self.graph.node_class[node]: node for node, var in self.chosen.items() if solver.Value(var)}
        return choice, status == cp_model.OPTIMAL, bound

    def cut(self, cycles: Sequence[Sequence[int]]) -> None:
        raise AssertionError("the CP-SAT model's solutions are acyclic")  # pragma: no cover

    def forbid(self, nodes: Sequence[int]) -> None:
        """The no-good cut: not all of these e-nodes again."""
        self.model.AddBoolOr([self.chosen[node].Not() for node in nodes])

    def infeasible(self) -> bool:
        return self._infeasible
