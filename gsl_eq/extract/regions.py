"""Regions: an e-graph cut at the e-classes through which alone its lower part is reached.

TENSAT's e-graphs are chains of blocks: an Inception module, a recurrent cell. Each block
reads the one before it through a single e-class, its input, and nothing above that class
reaches below it except through it. The cheapest term of such a class does not depend on
what is chosen above it, so the exact extractor solves it on its own and the rest of the
e-graph sees the class as a leaf of that cost (:func:`~gsl_eq.extract.ilp.ilp_extract`):
Inception-v3's 7,200-e-node program under TENSAT's settings becomes five of 760 to 1,730.

A *separator* is an e-class ``s`` that dominates every class below it: in the graph of
e-classes (an edge from a class to each child class of its kept e-nodes, the roots hanging
from a virtual top), every path from the top to a class reachable from ``s`` passes through
``s``. Then every reader of a class below ``s`` is itself below ``s`` or is ``s``, and the
terms of ``s`` share nothing with the rest. The extraction is cut at a separator only when

- it is not a root, and no reader of it may run in its kernel (a fusion term, :mod:`.fusion`,
  whose child it is): what its chosen e-node is then does not change the cost above it;
- the region it heads (its classes down to the next cuts) holds at least ``min_nodes`` kept
  e-nodes: below that, a program of its own costs more to set up than it saves.

Dominators are networkx's (Cooper, Harvey and Kennedy's algorithm). :func:`solve_regions`
solves the regions with the exact extractor's search, and puts their answers together. Repeated
blocks (NasRNN's cells, a transformer's layers) make regions that pose the same problem: their
classes differ, their e-nodes' costs, wiring and fusion do not (:func:`problem`). Such a problem
is solved once, and its answer carried over to the others.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import networkx as nx

from ..run.bounded import run_parallel
from ..graph.walk import postorder
from .extractors import ENodeCost, ExtractGraph, ExtractionError, dag_cost, tree_extract
from .indexed import PART_OP, Indexed

__all__ = ["Region", "always_read", "problem", "repeated", "solve_regions", "split"]

_TOP = -1  # the virtual top class the roots hang from
MIN_REGION_SECONDS = 1.0
"""The least time a region is given (the deadline permitting), however small it is."""


@dataclass
class Region:
    """Classes solved together: ``head`` (a class position; None for the region of the roots),
    its ``classes`` (positions, the head's included) and ``below``, the heads of the regions it
    reads as leaves."""

    head: int | None
    classes: list[int] = field(default_factory=list)
    below: list[int] = field(default_factory=list)


def split(graph: Indexed, nodes: list[int], roots: list[int], min_nodes: int) -> list[Region]:
    """The regions of the kept e-nodes ``nodes`` below ``roots``, each after the regions it
    reads; the roots' region last. One region when no class qualifies as a cut."""
    edges = {(_TOP, root) for root in roots}
    count: dict[int, int] = defaultdict(int)
    for node in nodes:
        cls = graph.node_class[node]
        count[cls] += 1
        edges.update((cls, child) for child in graph.node_children[node])
    dag = nx.DiGraph()
    dag.add_edges_from(edges)
    idom = nx.immediate_dominators(dag, _TOP)
    kids: dict[int, list[int]] = defaultdict(list)
    for cls, dominator in idom.items():
        if cls != _TOP:
            kids[dominator].append(cls)

    order: list[int] = []  # the dominator tree, children first
    enter: dict[int, int] = {}
    leave: dict[int, int] = {}
    stack = [(_TOP, False)]
    while stack:
        cls, done = stack.pop()
        if done:
            leave[cls] = len(enter)
            order.append(cls)
            continue
        enter[cls] = len(enter)
        stack.append((cls, True))
        stack.extend((kid, False) for kid in kids[cls])

    def dominates(upper: int, lower: int) -> bool:
        return enter[upper] <= enter[lower] and leave[lower] <= leave[upper]

    # an edge u -> v leaves the dominator subtree of every class from u up to, not including,
    # the first dominator of u that dominates v: none of those is a separator
    leaky: set[int] = set()
    for parent, child in dag.edges:
        cls = parent
        while not dominates(cls, child):
            leaky.add(cls)
            cls = idom[cls]
    fused = {child for node in nodes for child, saving in graph.fusible.get(node, ()) if saving > 0}
    candidates = set(idom) - leaky - fused - set(roots) - {_TOP}

    size: dict[int, int] = {}
    cuts: list[int] = []
    for cls in order:
        size[cls] = count.get(cls, 0) + sum(size[kid] for kid in kids[cls])
        if cls in candidates and size[cls] >= min_nodes:
            cuts.append(cls)
            size[cls] = 0
    if not cuts:
        return [Region(None, sorted(count))]
    cut = set(cuts)

    def head(cls: int) -> int:
        while cls != _TOP and cls not in cut:
            cls = idom[cls]
        return cls

    regions = {cls: Region(cls) for cls in cuts}
    regions[_TOP] = Region(None)
    for cls in count:
        regions[head(cls)].classes.append(cls)
    for cls in cuts:
        regions[head(idom[cls])].below.append(cls)
    return [regions[cls] for cls in (*cuts, _TOP)]


Answer = tuple[list[tuple[Hashable, int]], str, float | None, int, str]


class Solved(NamedTuple):
    """One extraction solved region by region (:func:`solve_regions`)."""

    choice: dict[Hashable, int]  # the chosen e-node index per class of the e-graph
    status: str  # "optimal" if every region's is
    bound: float | None  # the lower bound
    cuts: int  # cycles cut off before the regions' solutions were acyclic
    solvers: str  # the solvers that ran
    programs: int  # programs solved: regions posing one problem are solved once
"""A search's answer: (the chosen e-node index per class, status, lower bound, cycle cuts, the
solvers that ran)."""


def solve_regions(
    egraph: ExtractGraph, graph: Indexed, nodes: list[int], parts: list[Region], roots: Sequence[Hashable],
    deadline: float, search: Callable[[ExtractGraph, Sequence[Hashable], float], Answer],
) -> Solved:
    """One extraction, region by region: ``search(sub, heads, until)`` answers each region's
    e-graph (its kept e-nodes ``nodes``, with the head of each region it reads as a leaf class)
    for its heads by time ``until``. Regions posing one problem (:func:`problem`) are solved once.

    Where every region's terms contain the heads it reads (its answer does not depend on what
    they cost: Inception's blocks, NasRNN's cells), the leaves cost nothing and the regions are
    solved at once, one per core, largest first, each within its share of the time by the size
    of its program; the lower bound is the regions' sum. Otherwise they are solved in order,
    each leaf costing its region's answer, each region within its share of the time left, and a
    region's lower bound is its own less what the regions it reads may have overpaid. No region
    gets less than :data:`MIN_REGION_SECONDS` but where the deadline is nearer."""
    kept = _by_class(graph, nodes)
    size = [sum(len(kept[cls]) for cls in part.classes) for part in parts]
    heads = [roots if part.head is None else [graph.classes[part.head]] for part in parts]
    solved: dict[tuple, Answer] = {}  # per problem, its answer in the key's numbers

    def region(index: int, leaf_cost: Mapping[int, float]) -> ExtractGraph:
        return _region_graph(egraph, graph, kept, parts[index], leaf_cost)

    def keyed(sub: ExtractGraph, index: int, own: list, until: float) -> Answer:
        """Region ``index``'s answer (its e-graph ``sub``, numbered by its key as ``own``), each class
        and e-node by its number in the key: so it crosses a process boundary and answers like regions."""
        chosen, *rest = search(sub, heads[index], until)
        number = {cls: (k, {i: p for p, i in enumerate(indices)}) for k, (cls, indices) in enumerate(own)}
        return [(number[cls][0], number[cls][1][i]) for cls, i in chosen], *rest

    def carried(index: int, sub: ExtractGraph, own: list, found: Answer) -> tuple:
        """(the chosen (class position, e-node index) pairs, leaves left out; cost; status; bound; cuts;
        solvers) of region ``index`` (its e-graph ``sub``, numbered by its key as ``own``), from the
        answer to its problem, ``found``."""
        numbered, status, bound, cuts, ran = found
        chosen = [(own[k][0], own[k][1][p]) for k, p in numbered]
        leaves = {graph.classes[head] for head in parts[index].below}
        pairs = [(graph.position[cls], graph.node_index[kept[graph.position[cls]][i]])
                 for cls, i in chosen if cls not in leaves]
        return pairs, dag_cost(sub, heads[index], dict(chosen)), status, bound, cuts, ran

    free = dict.fromkeys((head for part in parts for head in part.below), 0.0)
    subs = [region(index, free) for index in range(len(parts))]
    # only a region that may pose another's problem needs its classes put in a canonical order
    census = [_census(sub) for sub in subs]
    shared = Counter(census)
    alike = [shared[c] > 1 for c in census]
    if all(always_read(subs[index], heads[index], [graph.classes[h] for h in part.below])
           for index, part in enumerate(parts)):
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        key, own = zip(*(problem(subs[index], heads[index], alike[index]) for index in range(len(parts))))
        first: dict[tuple, int] = {}  # per problem, the first region posing it
        for index, problem_key in enumerate(key):
            first.setdefault(problem_key, index)
        began, total = time.perf_counter(), sum(size[index] for index in first.values())
        largest_first = sorted(first.values(), key=lambda index: -size[index])

        def task(rank: int) -> Answer:
            index = largest_first[rank]
            share = (deadline - began) * min(workers, len(first)) * size[index] / total
            return keyed(subs[index], index, own[index], _until(deadline, share))

        for rank, found in run_parallel(task, len(first), workers):
            solved[key[largest_first[rank]]] = found
        answers = [carried(index, subs[index], own[index], solved[key[index]]) for index in range(len(parts))]
        known = all(answer[3] is not None for answer in answers)
        lower = sum(answer[3] for answer in answers) if known else None
    else:
        paid: dict[int, float] = {}  # per region head: its answer's cost
        bounds: dict[int, float | None] = {}
        answers, left = [], sum(size)
        for index, part in enumerate(parts):
            sub = region(index, paid)
            key, own = problem(sub, heads[index], alike[index])
            if key not in solved:
                share = (deadline - time.perf_counter()) * size[index] / left
                solved[key] = keyed(sub, index, own, _until(deadline, share))
            left -= size[index]
            answers.append(carried(index, sub, own, solved[key]))
            at = -1 if part.head is None else part.head
            bound, known = answers[-1][3], all(bounds[head] is not None for head in part.below)
            paid[at] = answers[-1][1]
            bounds[at] = (bound - sum(paid[head] - bounds[head] for head in part.below)
                           if bound is not None and known else None)
        lower = bounds[-1]
    chosen = {graph.classes[cls]: index for answer in answers for cls, index in answer[0]}
    status = "optimal" if all(answer[2] == "optimal" for answer in answers) else "time limit"
    ran = ", ".join(dict.fromkeys(name for answer in answers for name in answer[5].split(", ")))
    cuts = sum(found[3] for found in solved.values())
    return Solved(chosen, status, lower, cuts, ran, len(solved))


def repeated(egraph: ExtractGraph, graph: Indexed, nodes: list[int], parts: Sequence[Region]) -> bool:
    """Whether two of the regions ``parts`` of the kept e-nodes ``nodes`` may pose one problem (their
    :func:`_census` is one): then :func:`solve_regions` may solve one program for both."""
    kept = _by_class(graph, nodes)
    free = dict.fromkeys((head for part in parts for head in part.below), 0.0)
    census = [_census(_region_graph(egraph, graph, kept, part, free)) for part in parts]
    return len(set(census)) < len(census)


def _by_class(graph: Indexed, nodes: list[int]) -> dict[int, list[int]]:
    kept: dict[int, list[int]] = defaultdict(list)
    for node in nodes:
        kept[graph.node_class[node]].append(node)
    return kept


def _region_graph(egraph: ExtractGraph, graph: Indexed, kept: Mapping[int, list[int]], part: Region,
                  leaf_cost: Mapping[int, float]) -> ExtractGraph:
    """The e-graph of region ``part``: its classes' kept e-nodes, and each head it reads a leaf of
    cost ``leaf_cost[head]``."""
    sub = {graph.classes[cls]: [egraph[graph.classes[cls]][graph.node_index[node]] for node in kept[cls]]
           for cls in part.classes}
    sub.update((graph.classes[head], [ENodeCost(leaf_cost[head])]) for head in part.below)
    return sub


def problem(sub: ExtractGraph, heads: Sequence[Hashable], canonical: bool = True,
            ) -> tuple[tuple, list[tuple[Hashable, list[int]]]]:
    """What an extraction of ``sub`` for ``heads`` depends on, up to the names of its classes and
    the order of their e-nodes, and how the key numbers them: per class reached from the heads,
    breadth first, its e-nodes' costs, whether they take a split's part, their fusion data and their
    children by number. Two regions with one key are one problem: the answer to one, its classes
    and e-nodes renumbered, answers the other. Returns the key and, in its order, each class with
    the indices of its e-nodes in key order.

    The e-nodes of a class come in the order the e-graph lists them, which differs between like
    blocks; the key takes them in the order of their colours (:func:`_colours`), the e-graph's order
    breaking ties. A key describes its problem whole: two keys are equal only for one problem;
    colouring only makes like regions find one key, and ``canonical=False`` leaves it out (for a
    region no other can be like: :func:`_census`)."""
    colour = _colours(sub) if canonical else dict.fromkeys(sub, 0)
    number: dict[Hashable, int] = {}
    order: list[tuple[Hashable, list[int]]] = []

    def numbered(cls: Hashable) -> int:
        if cls not in number:
            number[cls] = len(order)
            nodes = sub[cls]
            order.append((cls, sorted(range(len(nodes)), key=lambda index: _node_colour(nodes[index], colour))))
        return number[cls]

    for head in heads:
        numbered(head)
    shape = []
    for cls, indices in order:  # grows as children are numbered
        nodes = sub[cls]
        shape.append(tuple((*_own(nodes[index]), tuple(numbered(child) for child in nodes[index].children),
                            tuple((numbered(child), saving) for child, saving in nodes[index].fusible))
                           for index in indices))
    return (tuple(number[head] for head in heads), tuple(shape)), order


def _own(node: ENodeCost) -> tuple:
    """What an e-node is, apart from its children: its cost, whether it takes a split's part, its fusion data."""
    return node.cost, node.op == PART_OP, node.opens, node.prologue


def _node_colour(node: ENodeCost, colour: Mapping[Hashable, int]) -> int:
    """An e-node's colour: its own data and its children's ``colour``."""
    return hash((_own(node), tuple(colour[child] for child in node.children),
                 tuple((colour[child], saving) for child, saving in node.fusible)))


def _colours(sub: ExtractGraph) -> dict[Hashable, int]:
    """Per class of ``sub``, a colour that like regions give their like classes: what is below the
    class (its e-nodes' own data and their children's colours, children first), then what reads it
    (each reader's colour, e-node data and place, readers first), both passes over an acyclic
    region, each class once. A cyclic region has no such order: its classes are coloured by
    refinement instead (each round a class by its e-nodes and readers as they were coloured in the
    last, until the colours part the classes no further), a round per step of its depth: keying
    TENSAT's NasRNN cell under tensat() + default() (1,670 e-nodes) took 0.06-0.07 s so, 0.016-0.020 s
    with the two passes."""
    readers: dict[Hashable, list[tuple[Hashable, tuple, int]]] = defaultdict(list)
    for cls, nodes in sub.items():
        for node in nodes:
            for place, child in enumerate(node.children):
                readers[child].append((cls, _own(node), place))

    def below(cls: Hashable, colour: Mapping[Hashable, int]) -> tuple:
        return tuple(sorted(_node_colour(node, colour) for node in sub[cls]))

    def above(cls: Hashable, colour: Mapping[Hashable, int]) -> tuple:
        return tuple(sorted(hash((colour[reader], data, place)) for reader, data, place in readers[cls]))

    order, acyclic = postorder(list(sub), lambda cls: {child for node in sub[cls]
                                                       for child in (*node.children, *(c for c, _ in node.fusible))})
    if acyclic:
        up: dict[Hashable, int] = {}
        for cls in order:
            up[cls] = hash(below(cls, up))
        colour: dict[Hashable, int] = {}
        for cls in reversed(order):
            colour[cls] = hash((up[cls], above(cls, colour)))
        return colour
    colour, parted = dict.fromkeys(sub, 0), 1
    while True:
        colour = {cls: hash((below(cls, colour), above(cls, colour))) for cls in sub}
        parted, before = len(set(colour.values())), parted
        if parted <= before:
            return colour


def _census(sub: ExtractGraph) -> tuple:
    """What two regions posing one problem have in common, whatever their order: their e-nodes'
    own data and numbers of children, as a multiset: far quicker than :func:`problem`'s colours
    (under tensat() + default(), the root region of TENSAT's NasRNN: 0.6 ms)."""
    return tuple(sorted((*_own(node), len(node.children), len(node.fusible))
                        for nodes in sub.values() for node in nodes))


def _until(deadline: float, share: float) -> float:
    """When a region given ``share`` seconds from now stops: a share by size gives a region of a
    few e-nodes beside one of thousands milliseconds, less than a solver takes to start, so no
    region gets less than :data:`MIN_REGION_SECONDS`, and none runs past the deadline."""
    return min(deadline, time.perf_counter() + max(share, MIN_REGION_SECONDS))


def always_read(egraph: ExtractGraph, roots: Sequence[Hashable], leaves: Sequence[Hashable]) -> bool:
    """Whether every term of some root contains each class of ``leaves``: with the leaf made
    unusable (an infinite cost), that root has no term (:func:`~.extractors.tree_extract` finds none)."""

    def has_term(egraph: ExtractGraph, root: Hashable) -> bool:
        try:
            tree_extract(egraph, [root])
        except ExtractionError:
            return False
        return True

    return all(leaf in roots or any(not has_term({**egraph, leaf: [ENodeCost(math.inf)]}, root) for root in roots)
               for leaf in leaves)
