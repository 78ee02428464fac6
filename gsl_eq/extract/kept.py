"""Which e-nodes an exact program gets a column for (:mod:`.ilp`, :mod:`.cpsat`): those of finite cost
that can be part of an acyclic term, reachable from the roots, and not dominated in their class.

Dominance is what keeps TASO's e-graphs tractable: commutative twins (``a + b``, ``b + a``), and,
for a single extraction, the forms that only read other *free* classes (parameters and what folds
from them) at a higher cost, such as the conv of a grouped kernel merged by TASO's merge_gconv.
"""

from __future__ import annotations

import itertools
import math

from .extractors import Indexed, _bottom_up, _tree_values
from .fusion import hosting, max_saving

__all__ = ["DOMINANCE_CLASS_LIMIT", "free_classes", "kept_nodes", "undominated"]

#: Classes with more e-nodes than this are only checked for exact duplicates (dominance is quadratic).
DOMINANCE_CLASS_LIMIT = 64


def kept_nodes(graph: Indexed, roots: list[int], cheapest_only: bool = False) -> list[int]:
    """The e-nodes that get a column: finite cost, no child that is their own class or has no
    acyclic term of finite cost, not dominated in their class; reachable from the roots
    through such e-nodes. ``cheapest_only``: only the cheapest graph is wanted, so an e-node is
    dominated by a cheaper one reading other free classes too (:func:`undominated`); the next
    best graphs may differ in those alone."""
    extractable = _bottom_up(graph, roots, _tree_values, stop_at_roots=False)
    free = free_classes(graph) if cheapest_only else set()
    kept_in: dict[int, list[int]] = {}

    def kept(cls: int) -> list[int]:
        if cls not in kept_in:
            candidates = [node for node in graph.class_nodes[cls]
                          if graph.node_cost[node] < math.inf and cls not in graph.node_children[node]
                          and all(child in extractable for child in graph.node_children[node])]
            kept_in[cls] = undominated(graph, candidates, free)
        return kept_in[cls]

    nodes, seen, todo = [], set(roots), list(dict.fromkeys(roots))
    while todo:
        for node in kept(todo.pop()):
            nodes.append(node)
            for child in graph.node_children[node]:
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
    return sorted(nodes)


def free_classes(graph: Indexed) -> set[int]:
    """The classes whose every e-node of finite cost costs nothing, opens no kernel, saves nothing and
    reads only such classes (the parameters, constants and inputs, and what is folded or viewed from
    them), but for tuples and their parts (the parts rows constrain those): using one more of them
    adds no cost, and no reader of theirs can spoil a fusion."""
    def finite(cls: int) -> list[int]:
        return [n for n in graph.class_nodes[cls] if graph.node_cost[n] < math.inf]

    tuples = set(graph.parts.values())
    free = {cls for cls in range(len(graph.classes))
            if cls not in tuples and finite(cls) and all(
                graph.node_cost[n] == 0 and n not in graph.opens and n not in graph.prologue
                and n not in graph.parts for n in finite(cls))}
    paying = [cls for cls in range(len(graph.classes)) if cls not in free]
    while paying:  # a class reading one that is not free is not free
        for reader in graph.parents[paying.pop()]:
            cls = graph.node_class[reader]
            if cls in free and graph.node_cost[reader] < math.inf:
                free.discard(cls)
                paying.append(cls)
    return free


def undominated(graph: Indexed, nodes: list[int], free: set[int] = frozenset()) -> list[int]:
    """Drop an e-node when another, earlier in (cost, number) order, costs no more and uses a
    subset of its child classes (only identical sets for classes above DOMINANCE_CLASS_LIMIT).
    Under fusion "no more" is against the e-node's cost less the most it may save
    (:func:`.fusion.max_saving`), and an e-node is dropped only for another that hosts its readers'
    epilogues wherever it does (:func:`.fusion.hosting`); there an e-node is also dropped for a twin
    alike in all extraction sees (its cost, savings and hosting, its child classes as a set: ``b + a``
    beside ``a + b``), which would otherwise stay, its cost above the other's less its saving.
    (Under TASO's rules or algebraic() a sum of biased convs has many such twins: both stayed, each
    with its fusion terms, and the LP relaxation mixed them, which made HiGHS several times slower.)

    In a class that is not ``free`` itself (:func:`free_classes`), an e-node is also dropped for one
    that costs strictly less than it may (its cost less its most possible saving) and reads the same
    classes but free ones: reading a free class costs nothing, so a conv of a kernel folded from parameters (TASO's merged groups: twice the FLOPs) is
    dropped for the conv of the parameter. (Strictly: graphs of equal cost stay, and like regions,
    their e-nodes listed in orders of their own, stay alike.)"""
    ranked = sorted(nodes, key=lambda node: graph.node_cost[node])
    keep: dict[frozenset[int], list[int]] = {}
    beside: dict[frozenset[int], list[int]] = {}  # the kept ones, by the classes read but free ones
    # Not inside free classes: there a view of a view of a parameter would drop the parameter itself.
    aside = free if nodes and graph.node_class[nodes[0]] not in free else frozenset()

    def dominates(other: int, node: int) -> bool:
        return (graph.node_cost[other] <= graph.node_cost[node] - max_saving(graph, node)
                and hosting(graph, other) >= hosting(graph, node))

    def alike(node: int) -> tuple | None:
        """What extraction sees of an e-node besides its child classes (None for a part of a tuple)."""
        if node in graph.parts:
            return None
        return (graph.node_cost[node], frozenset(graph.fusible.get(node, ())), graph.prologue.get(node, 0.0),
                hosting(graph, node))

    for node in ranked:
        children = frozenset(graph.node_children[node])
        same = alike(node)
        if any(dominates(other, node) or same is not None and alike(other) == same for other in keep.get(children, ())):
            continue
        if len(ranked) <= DOMINANCE_CLASS_LIMIT and any(
                subset <= children and any(dominates(other, node) for other in others)
                for subset, others in keep.items()):
            continue
        if aside:
            paid = children - aside
            if any(graph.node_cost[other] < graph.node_cost[node] - max_saving(graph, node)
                   and hosting(graph, other) >= hosting(graph, node) for other in beside.get(paid, ())):
                continue
            beside.setdefault(paid, []).append(node)
        keep.setdefault(children, []).append(node)
    kept = set(itertools.chain.from_iterable(keep.values()))
    return [node for node in ranked if node in kept]
