"""E-graph extraction: choose one e-node per e-class so that the terms at the roots are cheapest.

The e-graph is a plain mapping from e-class ids to their e-nodes (:class:`ENodeCost`:
own cost and child e-classes), so the extractors do not depend on the saturation
engine. This module holds what every extractor shares (the e-graph as integer
tables, the chosen graph and its DAG cost) and the two bottom-up extractors:

- :func:`tree_extract` — egg's default: optimal for *tree* cost, where a shared
  subterm is paid once per use;
- :func:`greedy_dag_extract` — the same bottom-up pass with *DAG* cost, where a
  shared e-node is paid once.

The exact extractor, :func:`~gsl_eq.extract.ilp.ilp_extract`, is in :mod:`.ilp`.
Every extractor returns an acyclic choice and reports its DAG cost
(:func:`dag_cost`), so that all of them compare on one measure.
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import math
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import immutables

from ..graph.walk import postorder
from .fusion import plan
from .indexed import Choice, ENodeCost, ExtractGraph, ExtractionError, Indexed

__all__ = [
    "ENodeCost", "ExtractGraph", "Extraction", "ExtractionError",
    "dag_cost", "greedy_dag_extract", "is_acyclic", "tree_extract",
]


@dataclass
class Extraction:
    """The result of an extractor.

    ``choice`` holds exactly the e-classes reachable from the roots through chosen
    e-nodes, children before parents; ``cost`` is their DAG cost (each chosen e-node
    paid once).

    Attributes
    ----------
    choice
        The index of the chosen e-node of each reachable e-class, by e-class.
    cost
        The choice's DAG cost (:func:`dag_cost`).
    extractor
        Which extractor chose it: ``"tree"``, ``"greedy_dag"`` or ``"ilp"``.
    time
        Seconds the extraction took.
    gap
        The exact extractor's relative gap to its lower bound (0.0: optimal); None when unknown.
    status
        ``"optimal"``, ``"heuristic"``, or what stopped the extractor and what it kept.
    cycle_cuts
        The exact extractor's cycles cut off before its solution was acyclic.
    solver
        The exact extractor's solver: ``"highs"`` or ``"cp-sat"``.
    regions
        The exact extractor's programs: 1, the whole e-graph, or one per region.
    """

    choice: Choice
    cost: float
    extractor: str
    time: float
    gap: float | None = None
    status: str = ""
    cycle_cuts: int | None = None  # the exact extractor's: cycles cut off before its solution was acyclic
    solver: str = ""  # the exact extractor's: "highs" or "cp-sat"
    regions: int | None = None  # the exact extractor's programs: 1, the whole e-graph, or one per region (like ones once)


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
    parents, and whether this chosen graph is acyclic."""
    return postorder(roots, lambda cls: _chosen(egraph, choice, cls).children)


def _sum_cost(egraph: ExtractGraph, roots: Sequence[Hashable], choice: Mapping[Hashable, int],
              classes: Sequence[Hashable]) -> float:
    """The chosen e-nodes of ``classes`` (the whole chosen graph, children first), each paid
    once, less the fusion savings that save most (:func:`.fusion.plan`)."""
    nodes = [egraph[cls][choice[cls]] for cls in classes]
    # fsum is exact before its single rounding: the same e-nodes cost the same in any order
    total = math.fsum(node.cost for node in nodes)
    if any(node.fusible for node in nodes):
        total -= plan(classes, lambda cls: egraph[cls][choice[cls]], roots).saving
    return total


def dag_cost(egraph: ExtractGraph, roots: Sequence[Hashable], choice: Mapping[Hashable, int]) -> float:
    """The cost of the chosen e-nodes of the e-classes reachable from ``roots``, each paid once
    (less the fusion savings they take, see :class:`ENodeCost`).

    Parameters
    ----------
    egraph
        Each e-class's e-nodes (:class:`ENodeCost`), by e-class.
    roots
        The e-classes to extract.
    choice
        The index of the chosen e-node in each e-class's list, by e-class.

    Raises
    ------
    ValueError
        A reachable e-class has no (valid) chosen e-node.
    """
    order, _ = _walk(egraph, roots, choice)
    return _sum_cost(egraph, roots, choice, order)


def is_acyclic(egraph: ExtractGraph, roots: Sequence[Hashable], choice: Mapping[Hashable, int]) -> bool:
    """Whether the graph of chosen e-nodes reachable from ``roots`` has no cycle.

    Parameters
    ----------
    egraph, roots, choice
        As in :func:`dag_cost`.

    Raises
    ------
    ValueError
        A reachable e-class has no (valid) chosen e-node.
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
        {cls: choice[cls] for cls in order}, _sum_cost(egraph, roots, choice, order), name, time.perf_counter() - start,
        **result,
    )


# --- bottom-up extraction --------------------------------------------------------------------


Combine = Callable[[list[Any], int], tuple[float, Any]]
"""(settled values per class position, e-node number) -> (key, value) of that e-node, from
the values of its children, all settled. A key is never below a child's key."""


def _tree_values(graph: Indexed) -> Combine:
    """Key and value: the tree cost, own cost plus the children's tree costs."""
    costs, children = graph.node_cost, graph.node_children

    def combine(best: list[Any], node: int) -> tuple[float, float]:
        cost = costs[node]
        for child in children[node]:
            cost += best[child]
        return cost, cost

    return combine


def _dag_values(graph: Indexed) -> Combine:
    """Value: the term's classes (each with its chosen e-node, fixed once settled) as a
    persistent map, ``immutables.Map``, that shares structure with its children's; key:
    the sum of their e-nodes' costs.

    A settled class's map holds the maps of the classes in it, so a child's classes are
    added by a walk down chosen e-nodes that stops at classes already in the term: an
    e-node costs the classes it adds to its largest child's term, not the size of the term.
    The values of settled classes are ``(map, cost, chosen e-node)``; a candidate's value
    is its largest child and the classes it adds.
    """
    costs, children, node_class = graph.node_cost, graph.node_children, graph.node_class

    def combine(best: list[Any], node: int) -> tuple[float, Any]:
        kids = children[node]
        if len(kids) <= 1:  # the common case: the child's term plus this e-node
            return (best[kids[0]][1] + costs[node], (kids[0], ())) if kids else (costs[node], (None, ()))
        base = kids[0]
        members, total, _ = best[base]
        for child in kids:
            if len(best[child][0]) > len(members):
                base = child
                members, total, _ = best[child]
        total += costs[node]
        added: set[int] = set()
        for child in kids:
            if child in members:
                continue
            stack = [child]
            while stack:
                cls = stack.pop()
                if cls in members or cls in added:
                    continue
                added.add(cls)
                chosen = best[cls][2]
                total += costs[chosen]
                stack.extend(children[chosen])
        return total, (base, added)

    def settle(best: list[Any], node: int, key: float, value: Any) -> Any:
        base, added = value
        members = immutables.Map() if base is None else best[base][0]
        if added:
            mutation = members.mutate()
            for cls in added:
                mutation[cls] = True
            members = mutation.finish()
        return members.set(node_class[node], True), key, node

    combine.settle = settle  # type: ignore[attr-defined]
    return combine


def _bottom_up(
    graph: Indexed,
    roots: Sequence[int],
    values: Callable[[Indexed], Combine],
    *,
    stop_at_roots: bool = True,
    deadline: float | None = None,
) -> dict[int, int]:
    """Settle the e-classes cheapest first: Knuth's generalisation of Dijkstra's algorithm.

    An e-node becomes a candidate once all its children are settled, with the key and
    value that ``values(graph)`` gives it; an e-class settles on the first of its
    candidates popped from the heap, the one of least key. As a key is never below its
    children's keys, no e-node of a settled class can get a lower key later: the result
    is a fixpoint of "each class takes its cheapest e-node given its children's values",
    what a worklist would iterate to, reached in one pass (for tree cost, the least
    fixpoint: optimal tree costs). Children settle before their parents, so the choice
    is acyclic; a class that never settles has no acyclic term of finite cost.

    Returns class position -> chosen e-node number for the settled classes: all that
    can settle, or with ``stop_at_roots`` only as many as needed to settle the roots.
    Raises ExtractionError for a root that cannot be settled, and TimeoutError once
    ``time.perf_counter()`` passes ``deadline``.
    """
    combine = values(graph)
    settle = getattr(combine, "settle", None)
    node_class, parents = graph.node_class, graph.parents
    waiting = [len(children) for children in graph.node_children]
    best: list[Any] = [None] * len(graph.classes)
    chosen = [-1] * len(graph.classes)
    heap: list[tuple[float, int, Any]] = []  # (key, e-node, value): e-nodes are distinct, values never compared
    push, pop = heapq.heappush, heapq.heappop
    for node, count in enumerate(waiting):
        if count == 0:
            key, value = combine(best, node)
            if key < math.inf:
                push(heap, (key, node, value))
    targets = set(roots) if stop_at_roots else None
    settled = 0
    while heap:
        key, node, value = pop(heap)
        cls = node_class[node]
        if chosen[cls] >= 0:
            continue
        chosen[cls] = node
        best[cls] = value if settle is None else settle(best, node, key, value)
        settled += 1
        if deadline is not None and settled & 1023 == 0 and time.perf_counter() > deadline:
            raise TimeoutError("the extraction's deadline passed")
        if targets is not None and cls in targets:
            targets.discard(cls)
            if not targets:
                break
        for parent in parents[cls]:
            left = waiting[parent] - 1
            waiting[parent] = left
            if left == 0 and chosen[node_class[parent]] < 0:
                key, value = combine(best, parent)
                if key < math.inf:
                    push(heap, (key, parent, value))

    for root in roots:
        if chosen[root] < 0:
            raise ExtractionError(
                f"root e-class {graph.classes[root]!r} has no acyclic term of finite cost: each of its e-nodes has "
                "an infinite cost or depends on a cycle or on an e-class without such a term"
            )
    return {cls: node for cls, node in enumerate(chosen) if node >= 0}


@contextlib.contextmanager
def without_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: extraction allocates millions of small objects
    that live to its end, and collections that traverse them all would double its time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def tree_extract(egraph: ExtractGraph, roots: Sequence[Hashable]) -> Extraction:
    """egg's default extractor: each e-class takes the e-node of least tree cost (its own
    cost plus its children's tree costs, a shared subterm paid once per use).

    Fast and optimal for tree cost, blind to sharing: the baseline, and a good first
    choice when the terms share little. The reported ``cost`` is the DAG cost of the
    choice, like every extractor's.

    Parameters
    ----------
    egraph, roots
        As in :func:`dag_cost`.
    """
    start = time.perf_counter()
    with without_gc():
        graph = Indexed(egraph)
        choice = graph.choice(_bottom_up(graph, graph.root_positions(roots), _tree_values))
    return _extraction("tree", egraph, roots, choice, start, status="heuristic")


def greedy_dag_extract(egraph: ExtractGraph, roots: Sequence[Hashable], deadline: float | None = None, *,
                       indexed: Indexed | None = None) -> Extraction:
    """DAG-aware greedy extractor: each e-class takes the e-node whose term, as a set of
    e-nodes, costs least — the union of its children's sets plus itself, so that
    e-nodes shared below it are paid once.

    Still greedy (each class is settled on its own, not jointly with its siblings), so
    it is not optimal; it also evaluates the tree extraction's choice and keeps the
    cheaper of the two, so its cost is never above :func:`tree_extract`'s. The fast
    choice when sharing matters and an ILP is too slow; also a warm start for it.
    Near-linear in practice: a term shares its largest child's set (a persistent map)
    and pays only for the classes it adds. If ``time.perf_counter()`` passes
    ``deadline`` first, the tree extraction's choice is returned and ``status`` says so.

    Parameters
    ----------
    egraph, roots
        As in :func:`dag_cost`.
    deadline
        A ``time.perf_counter()`` time; None: none.
    indexed
        ``egraph``'s :class:`Indexed` tables, where the caller has built them already.
    """
    start = time.perf_counter()
    with without_gc():
        graph = Indexed(egraph) if indexed is None else indexed
        positions = graph.root_positions(roots)
        tree = graph.choice(_bottom_up(graph, positions, _tree_values))
        try:
            dag = graph.choice(_bottom_up(graph, positions, _dag_values, deadline=deadline))
        except TimeoutError:
            return _extraction("greedy_dag", egraph, roots, tree, start, status="time limit: kept the tree extraction")
    choice = min([dag, tree], key=lambda candidate: dag_cost(egraph, roots, candidate))
    return _extraction("greedy_dag", egraph, roots, choice, start, status="heuristic")
