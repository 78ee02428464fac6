"""E-graph extractors: choose one e-node per e-class so that the terms at the roots are cheapest.

The e-graph is a plain mapping from e-class ids to their e-nodes (:class:`ENodeCost`:
own cost and child e-classes), so the extractors do not depend on the saturation
engine. Three extractors, from fastest to best:

- :func:`tree_extract` — egg's default: optimal for *tree* cost, where a shared
  subterm is paid once per use;
- :func:`greedy_dag_extract` — the same bottom-up pass with *DAG* cost, where a
  shared e-node is paid once;
- :func:`ilp_extract` — the optimal DAG cost, as an integer linear program
  solved by HiGHS through :func:`scipy.optimize.milp`.

Every extractor returns an acyclic choice and reports its DAG cost
(:func:`dag_cost`), so that all of them compare on one measure.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse.csgraph import connected_components

from ..errors import GslEqError
from .bounded import run_bounded

__all__ = [
    "ENodeCost", "ExtractGraph", "Extraction", "ExtractionError",
    "dag_cost", "greedy_dag_extract", "ilp_extract", "is_acyclic", "tree_extract",
]


class ExtractionError(GslEqError, ValueError):
    """No acyclic term of finite cost can be extracted; the message names the e-class at fault."""


@dataclass(frozen=True)
class ENodeCost:
    """One e-node as the extractors see it: its own cost and its child e-classes, in order.

    A cost of ``math.inf`` marks an e-node that must never be extracted.
    """

    cost: float
    children: tuple[Hashable, ...] = ()

    def __post_init__(self) -> None:
        if not self.cost >= 0:  # also rejects NaN
            raise ValueError(f"an e-node's cost must be >= 0, got {self.cost!r}")


ExtractGraph = Mapping[Hashable, Sequence[ENodeCost]]
"""An e-graph: e-class id -> its e-nodes. Every child of an e-node must be a key."""

Choice = dict[Hashable, int]
"""E-class id -> index of its chosen e-node."""


@dataclass
class Extraction:
    """The result of an extractor.

    ``choice`` holds exactly the e-classes reachable from the roots through chosen
    e-nodes, children before parents; ``cost`` is their DAG cost (each chosen e-node
    paid once).
    """

    choice: Choice
    cost: float
    extractor: str
    time: float
    gap: float | None = None
    status: str = ""


# --- the chosen graph ------------------------------------------------------------------------


def _chosen(egraph: ExtractGraph, choice: Mapping[Hashable, int], cls: Hashable) -> ENodeCost:
    if cls not in choice:
        raise ValueError(f"e-class {cls!r} is reachable from the roots but has no chosen e-node")
    nodes = egraph.get(cls, ())
    if not 0 <= choice[cls] < len(nodes):
        raise ValueError(f"e-class {cls!r} has {len(nodes)} e-nodes: no e-node {choice[cls]!r} to choose")
    return nodes[choice[cls]]


def _walk(
    egraph: ExtractGraph, roots: Sequence[Hashable], choice: Mapping[Hashable, int]
) -> tuple[list[Hashable], bool]:
    """The e-classes reachable from ``roots`` through chosen e-nodes, children before
    parents, and whether this chosen graph is acyclic (iterative depth-first search)."""
    finished: dict[Hashable, bool] = {}  # False while the class is on the search stack
    order: list[Hashable] = []
    acyclic = True
    for root in roots:
        if root in finished:
            continue
        finished[root] = False
        stack = [(root, iter(_chosen(egraph, choice, root).children))]
        while stack:
            cls, children = stack[-1]
            for child in children:
                if child not in finished:
                    finished[child] = False
                    stack.append((child, iter(_chosen(egraph, choice, child).children)))
                    break
                acyclic = acyclic and finished[child]
            else:
                stack.pop()
                finished[cls] = True
                order.append(cls)
    return order, acyclic


def _sum_cost(egraph: ExtractGraph, choice: Mapping[Hashable, int], classes: Sequence[Hashable]) -> float:
    # fsum is exact before its single rounding: the same e-nodes cost the same in any order
    return math.fsum(egraph[cls][choice[cls]].cost for cls in classes)


def dag_cost(egraph: ExtractGraph, roots: Sequence[Hashable], choice: Mapping[Hashable, int]) -> float:
    """The cost of the chosen e-nodes of the e-classes reachable from ``roots``, each paid once.

    Raises ValueError if a reachable e-class has no (valid) chosen e-node.
    """
    order, _ = _walk(egraph, roots, choice)
    return _sum_cost(egraph, choice, order)


def is_acyclic(egraph: ExtractGraph, roots: Sequence[Hashable], choice: Mapping[Hashable, int]) -> bool:
    """Whether the graph of chosen e-nodes reachable from ``roots`` has no cycle.

    Raises ValueError if a reachable e-class has no (valid) chosen e-node.
    """
    return _walk(egraph, roots, choice)[1]


def _extraction(
    name: str, egraph: ExtractGraph, roots: Sequence[Hashable], choice: Mapping[Hashable, int], start: float,
    **result: Any,
) -> Extraction:
    order, acyclic = _walk(egraph, roots, choice)
    if not acyclic:  # a bug: every extractor chooses acyclic terms by construction
        raise ExtractionError(f"the {name} extractor chose a cyclic term")
    return Extraction(
        {cls: choice[cls] for cls in order}, _sum_cost(egraph, choice, order), name, time.perf_counter() - start,
        **result,
    )


# --- bottom-up extraction --------------------------------------------------------------------

Combine = Callable[[dict[Hashable, Any], Hashable, int], tuple[float, Any]]
"""(settled values, e-class, e-node index) -> (key, value) of that e-node, from the
values of its children, all settled. A key is never below a child's key."""


def _tree_values(egraph: ExtractGraph) -> Combine:
    """Key and value: the tree cost, own cost plus the children's tree costs."""

    def combine(best: dict[Hashable, Any], cls: Hashable, index: int) -> tuple[float, float]:
        node = egraph[cls][index]
        cost = math.fsum([node.cost, *(best[child] for child in node.children)])
        return cost, cost

    return combine


def _dag_values(egraph: ExtractGraph) -> Combine:
    """Value: the set of e-nodes of the term, as a bitset (a Python int: one bit per
    e-node, n^2/8 bytes for n e-nodes at worst); key: the sum of their costs."""
    bit = {node: k for k, node in enumerate((cls, index) for cls, nodes in egraph.items() for index in range(len(nodes)))}
    costs = np.array([node.cost for nodes in egraph.values() for node in nodes])
    n_bytes = (len(costs) + 7) // 8

    def combine(best: dict[Hashable, Any], cls: Hashable, index: int) -> tuple[float, int]:
        members = 1 << bit[cls, index]
        for child in egraph[cls][index].children:
            members |= best[child]
        mask = np.unpackbits(
            np.frombuffer(members.to_bytes(n_bytes, "little"), np.uint8), count=len(costs), bitorder="little"
        )
        return float(costs[mask.view(bool)].sum()), members

    return combine


def _bottom_up(
    egraph: ExtractGraph,
    roots: Sequence[Hashable],
    values: Callable[[ExtractGraph], Combine],
    *,
    stop_at_roots: bool = True,
    deadline: float | None = None,
) -> Choice:
    """Settle the e-classes cheapest first: Knuth's generalisation of Dijkstra's algorithm.

    An e-node becomes a candidate once all its children are settled, with the key and
    value that ``values(egraph)`` gives it; an e-class settles on the first of its
    candidates popped from the heap, the one of least key. As a key is never below its
    children's keys, no e-node of a settled class can get a lower key later: the result
    is a fixpoint of "each class takes its cheapest e-node given its children's values",
    what a worklist would iterate to, reached in one pass (for tree cost, the least
    fixpoint: optimal tree costs). Children settle before their parents, so the choice
    is acyclic; a class that never settles has no acyclic term of finite cost.

    Returns the choice of the settled classes: all that can settle, or with
    ``stop_at_roots`` only as many as needed to settle the roots. Raises
    ExtractionError for a root that cannot be settled, and TimeoutError once
    ``time.perf_counter()`` passes ``deadline``.
    """
    for root in roots:
        if root not in egraph:
            raise ExtractionError(f"root e-class {root!r} is not in the e-graph")
    parents: dict[Hashable, list[tuple[Hashable, int]]] = {cls: [] for cls in egraph}
    waiting: dict[tuple[Hashable, int], int] = {}  # e-node -> number of its children not settled yet
    for cls, nodes in egraph.items():
        for index, node in enumerate(nodes):
            children = dict.fromkeys(node.children)  # distinct, in a deterministic order
            for child in children:
                if child not in parents:
                    raise ExtractionError(
                        f"e-node {index} of e-class {cls!r} has a child e-class {child!r} that is not in the e-graph"
                    )
                parents[child].append((cls, index))
            waiting[cls, index] = len(children)

    combine = values(egraph)
    best: dict[Hashable, Any] = {}
    choice: Choice = {}
    heap: list[tuple[float, int, Hashable, int, Any]] = []
    ties = itertools.count()  # first come, first served among equal keys; values never compared

    def offer(cls: Hashable, index: int) -> None:
        key, value = combine(best, cls, index)
        if key < math.inf:
            heapq.heappush(heap, (key, next(ties), cls, index, value))

    for (cls, index), count in waiting.items():
        if count == 0:
            offer(cls, index)
    unsettled = set(roots if stop_at_roots else egraph)
    pops = 0
    while heap and unsettled:
        pops += 1
        if deadline is not None and pops % 1024 == 0 and time.perf_counter() > deadline:
            raise TimeoutError("the extraction's deadline passed")
        _, _, cls, index, value = heapq.heappop(heap)
        if cls in choice:
            continue
        choice[cls], best[cls] = index, value
        unsettled.discard(cls)
        for parent in parents[cls]:
            waiting[parent] -= 1
            if waiting[parent] == 0 and parent[0] not in choice:
                offer(*parent)

    for root in roots:
        if root not in choice:
            raise ExtractionError(
                f"root e-class {root!r} has no acyclic term of finite cost: each of its e-nodes has an "
                "infinite cost or depends on a cycle or on an e-class without such a term"
            )
    return choice


def tree_extract(egraph: ExtractGraph, roots: Sequence[Hashable]) -> Extraction:
    """egg's default extractor: each e-class takes the e-node of least tree cost (its own
    cost plus its children's tree costs, a shared subterm paid once per use).

    Fast and optimal for tree cost, blind to sharing: the baseline, and a good first
    choice when the terms share little. The reported ``cost`` is the DAG cost of the
    choice, like every extractor's.
    """
    start = time.perf_counter()
    return _extraction("tree", egraph, roots, _bottom_up(egraph, roots, _tree_values), start, status="heuristic")


def greedy_dag_extract(egraph: ExtractGraph, roots: Sequence[Hashable], deadline: float | None = None) -> Extraction:
    """DAG-aware greedy extractor: each e-class takes the e-node whose term, as a set of
    e-nodes, costs least — the union of its children's sets plus itself, so that
    e-nodes shared below it are paid once.

    Still greedy (each class is settled on its own, not jointly with its siblings), so
    it is not optimal; it also evaluates the tree extraction's choice and keeps the
    cheaper of the two, so its cost is never above :func:`tree_extract`'s. The fast
    choice when sharing matters and an ILP is too slow; also a warm start for it.
    If ``time.perf_counter()`` passes ``deadline`` first, the tree extraction's choice
    is returned and ``status`` says so.
    """
    start = time.perf_counter()
    tree = _bottom_up(egraph, roots, _tree_values)
    try:
        dag = _bottom_up(egraph, roots, _dag_values, deadline=deadline)
    except TimeoutError:
        return _extraction("greedy_dag", egraph, roots, tree, start, status="time limit: kept the tree extraction")
    choice = min([dag, tree], key=lambda candidate: dag_cost(egraph, roots, candidate))
    return _extraction("greedy_dag", egraph, roots, choice, start, status="heuristic")


# --- integer linear programming ---------------------------------------------------------------


def ilp_extract(
    egraph: ExtractGraph, roots: Sequence[Hashable], time_limit: float = 60.0, warm_start: Extraction | None = None
) -> Extraction:
    """The extraction of least DAG cost, by an integer linear program solved by HiGHS.

    Variables: a binary per e-node (chosen) and per e-class (used), and a continuous
    topological order per e-class. The roots are used; a used class chooses one of its
    e-nodes; a chosen e-node uses its children; and along every chosen edge that lies on
    a cycle of the e-graph, ``order[child] + 1 <= order[parent] + M * (1 - chosen)``, so
    the chosen graph is acyclic. The objective is the cost of the chosen e-nodes.

    The e-graph is pruned first: only e-classes reachable from the roots are kept, and
    only e-nodes that can be part of an acyclic term of finite cost; order constraints
    are only written for edges inside a strongly connected component.

    scipy's ``milp`` takes no initial solution, so ``warm_start`` (a choice for the same
    roots, e.g. :func:`greedy_dag_extract`'s) bounds the objective instead; without one,
    the tree extraction's choice does. If HiGHS finds no better solution within
    ``time_limit`` seconds, that choice is returned and ``status`` says so: building
    and solving the program run in a child process that is stopped at the limit,
    since HiGHS may overrun it. ``status`` is
    ``"optimal"`` (``gap`` 0.0) when HiGHS proved optimality, else it starts with
    ``"time limit"`` and ``gap`` is the relative gap to HiGHS's lower bound (None if it
    has none).
    """
    start = time.perf_counter()
    if warm_start is None:
        fallback, fallback_name = _bottom_up(egraph, roots, _tree_values), "tree extraction"
    else:
        fallback, fallback_name = warm_start.choice, "warm start"
    if not is_acyclic(egraph, roots, fallback):
        raise ValueError("the warm start's choice is cyclic")
    bound = dag_cost(egraph, roots, fallback)
    if not roots:
        return _extraction("ilp", egraph, roots, {}, start, gap=0.0, status="optimal")

    deadline = start + time_limit
    # HiGHS overruns its time limit (presolve, the first relaxation): the solver runs where it can be stopped,
    # told to finish a little early so that its answer arrives before the deadline.
    solved = run_bounded(lambda: _solve_ilp(egraph, roots, bound, deadline - 0.1 * time_limit),
                         deadline - time.perf_counter())
    found, status, dual_bound = None, "time limit", None
    if solved is not None:
        chosen, code, message, dual_bound = solved
        status = {0: "optimal", 1: "time limit"}.get(code, f"HiGHS: {message}")
        if chosen is not None:
            classes = list(egraph)
            found = {classes[position]: index for position, index in chosen}
    if found is None:
        choice, status = fallback, f"{status}, no ILP solution: kept the {fallback_name}"
    else:  # the ILP's cost may exceed the bound by its tolerance
        choice = min([found, fallback], key=lambda candidate: dag_cost(egraph, roots, candidate))
    extraction = _extraction("ilp", egraph, roots, choice, start, status=status)
    extraction.gap = 0.0 if status == "optimal" else _relative_gap(extraction.cost, dual_bound)
    return extraction


def _solve_ilp(
    egraph: ExtractGraph, roots: Sequence[Hashable], bound: float, deadline: float
) -> tuple[list[tuple[int, int]] | None, int, str, float | None]:
    """Build and solve the extraction ILP: (the choice as (class position, e-node index) pairs, or
    None; HiGHS's status code, message and dual bound). Positions index ``list(egraph)``, so the
    answer crosses a process boundary."""
    extractable = _bottom_up(egraph, roots, _tree_values, stop_at_roots=False)
    nodes = _prune(egraph, roots, extractable)
    problem = _ilp_problem(egraph, roots, nodes, bound)
    result = milp(**problem, options={"time_limit": max(0.0, deadline - time.perf_counter()), "mip_rel_gap": 0.0})
    found = _decode(egraph, roots, nodes, result.x)
    if found is None:
        return None, result.status, result.message, result.mip_dual_bound
    position = {cls: k for k, cls in enumerate(egraph)}
    return [(position[cls], index) for cls, index in found.items()], result.status, result.message, result.mip_dual_bound


_Node = tuple[Hashable, int, list[Hashable]]
"""An e-node of the ILP: its class, its index there, its distinct children."""


def _prune(egraph: ExtractGraph, roots: Sequence[Hashable], extractable: Mapping[Hashable, int]) -> list[_Node]:
    """The e-nodes that may be part of an acyclic term of finite cost (finite own cost,
    no child that is its own class or has no such term), reachable from the roots
    through such e-nodes."""
    classes = list(dict.fromkeys(roots))
    seen = set(classes)
    nodes: list[_Node] = []
    for cls in classes:  # grows while we go
        for index, node in enumerate(egraph[cls]):
            children = list(dict.fromkeys(node.children))
            if node.cost < math.inf and cls not in children and all(child in extractable for child in children):
                nodes.append((cls, index, children))
                classes.extend(child for child in children if child not in seen)
                seen.update(children)
    return nodes


def _ilp_problem(
    egraph: ExtractGraph, roots: Sequence[Hashable], nodes: list[_Node], bound: float
) -> dict[str, Any]:
    """The arguments of ``milp`` for the extraction ILP over ``nodes``, with an objective not above ``bound``.

    Variables: chosen (binary) per e-node, then used (binary) and order (continuous) per e-class.
    """
    class_ids = {cls: k for k, cls in enumerate(dict.fromkeys(cls for cls, _, _ in nodes))}
    n_nodes, n_classes = len(nodes), len(class_ids)
    used = range(n_nodes, n_nodes + n_classes)
    order = range(n_nodes + n_classes, n_nodes + 2 * n_classes)

    edges = [(class_ids[cls], class_ids[child]) for cls, _, children in nodes for child in children]
    sources, targets = zip(*edges) if edges else ((), ())
    adjacency = sparse.csr_matrix((np.ones(len(edges)), (sources, targets)), shape=(n_classes, n_classes))
    _, component = connected_components(adjacency, directed=True, connection="strong")
    component_size = np.bincount(component)[component]  # per class

    entries: list[tuple[int, int, float]] = []  # (row, variable, coefficient)
    lower: list[float] = []
    upper: list[float] = []

    def constrain(terms: Sequence[tuple[int, float]], low: float, high: float) -> None:
        entries.extend((len(lower), var, coef) for var, coef in terms)
        lower.append(low)
        upper.append(high)

    chosen_in: list[list[tuple[int, float]]] = [[(var, -1.0)] for var in used]
    for var, (cls, _, children) in enumerate(nodes):
        parent = class_ids[cls]
        chosen_in[parent].append((var, 1.0))
        for child in map(class_ids.__getitem__, children):
            constrain([(used[child], 1.0), (var, -1.0)], 0.0, math.inf)  # a chosen e-node uses its children
            if component[child] == component[parent]:  # the edge is on a cycle: order it
                big_m = float(component_size[parent])
                constrain([(order[child], 1.0), (order[parent], -1.0), (var, big_m)], -math.inf, big_m - 1)
    for terms in chosen_in:
        constrain(terms, 0.0, 0.0)  # a used e-class chooses one of its e-nodes (none if unused)
    costs = [egraph[cls][index].cost for cls, index, _ in nodes]
    constrain(list(enumerate(costs)), -math.inf, bound * (1 + 1e-9) + 1e-9)  # no worse than the fallback

    low = np.zeros(n_nodes + 2 * n_classes)
    low[[used[class_ids[root]] for root in roots]] = 1.0  # the roots are used
    high = np.concatenate([np.ones(n_nodes + n_classes), component_size - 1.0])
    rows, cols, coefs = zip(*entries)
    return {
        "c": np.concatenate([costs, np.zeros(2 * n_classes)]),
        "integrality": np.concatenate([np.ones(n_nodes + n_classes), np.zeros(n_classes)]),
        "bounds": Bounds(low, high),
        "constraints": LinearConstraint(sparse.csr_matrix((coefs, (rows, cols)), shape=(len(lower), len(low))), lower, upper),
    }


def _decode(egraph: ExtractGraph, roots: Sequence[Hashable], nodes: list[_Node], x: np.ndarray | None) -> Choice | None:
    """The choice of an ILP solution: each used e-class's chosen e-node; None if there is
    no solution, or if it is numerically off (a class without e-node, a cycle)."""
    if x is None:
        return None
    choice: Choice = {}
    for var in np.flatnonzero(x[: len(nodes)] > 0.5):
        choice.setdefault(nodes[var][0], nodes[var][1])
    try:
        return choice if is_acyclic(egraph, roots, choice) else None
    except ValueError:
        return None


def _relative_gap(cost: float, lower_bound: float | None) -> float | None:
    if lower_bound is None or not math.isfinite(lower_bound):
        return None
    return max(cost - lower_bound, 0.0) / cost if cost > 0 else 0.0
