"""Regions: an e-graph cut at the e-classes through which alone its lower part is reached.

TENSAT's e-graphs are chains of blocks: an Inception module, a recurrent cell. Each block
reads the one before it through a single e-class, its input, and nothing above that class
reaches below it except through it. The cheapest term of such a class does not depend on
what is chosen above it, so the exact extractor solves it on its own and the rest of the
e-graph sees the class as a leaf of that cost (:func:`~gsl_eq.extract.ilp.ilp_extract`):
Inception-v3's 24,000-e-node program under TENSAT's settings becomes ten of about 2,600.

A *separator* is an e-class ``s`` that dominates every class below it: in the graph of
e-classes (an edge from a class to each child class of its kept e-nodes, the roots hanging
from a virtual top), every path from the top to a class reachable from ``s`` passes through
``s``. Then every reader of a class below ``s`` is itself below ``s`` or is ``s``, and the
terms of ``s`` share nothing with the rest. The extraction is cut at a separator only when

- it is not a root, and no reader of it may run in its kernel (a fusion term, :mod:`.fusion`,
  whose child it is): what its chosen e-node is then does not change the cost above it;
- the region it heads (its classes down to the next cuts) holds at least ``min_nodes`` kept
  e-nodes: below that, a program of its own costs more to set up than it saves.

Dominators are networkx's (Cooper, Harvey and Kennedy's algorithm).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import networkx as nx

from .extractors import Indexed

__all__ = ["Region", "split"]

_TOP = -1  # the virtual top class the roots hang from


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
