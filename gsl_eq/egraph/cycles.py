"""TENSAT's cycle filter: the e-nodes to leave out so that an e-graph is acyclic.

Rules such as ``split(concat(a, b))[0] = a`` put an e-class among its own descendants:
``a``'s e-class holds an e-node reading, through the split and the concat, ``a`` itself.
Such an e-graph holds every acyclic term it did, but an exact extractor must then
forbid cycles, and the forms that do it (order variables, cycle cuts) leave the linear
relaxation useless on e-graphs where cheap splits and concats close many cycles.

TENSAT does not let a cycle form: an e-node that would close one is not added, in the
order the e-nodes were made. :func:`closing_cycles` does the same on a snapshot, with
the iteration each e-node was first seen (:attr:`~.egraph.ENode.born`): e-nodes are
added iteration by iteration, and one that would close a cycle with those already
added is left out. What is left is acyclic and holds the loaded graph; every term it
holds is one the e-graph holds, so an extraction from it is sound, though perhaps dearer
than the best of the whole e-graph.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Hashable, Mapping, Sequence

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from .egraph import ENode


def closing_cycles(classes: Mapping[Hashable, Sequence[ENode]],
                   roots: Sequence[Hashable]) -> set[tuple[Hashable, int]] | None:
    """The e-nodes (e-class, index) that would close a cycle, latest born first; None if
    leaving them out would leave a root without a term.

    E-nodes are added one iteration of birth at a time (never-stamped ones last); within
    an iteration, those that close no cycle with the e-nodes already added go in at once
    and the others one by one, each left out if it would close one: first those of
    e-classes that have no e-node yet (so that a class keeps one where it can), then the
    rest, each in snapshot order.

        left_out = closing_cycles(snap.classes, root_classes)
    """
    position = {cls: k for k, cls in enumerate(classes)}
    by_birth: dict[int, list[tuple[Hashable, int]]] = defaultdict(list)
    for cls, enodes in classes.items():
        for i, e in enumerate(enodes):
            by_birth[e.born if e.born >= 0 else np.iinfo(np.int64).max].append((cls, i))
    left_out: set[tuple[Hashable, int]] = set()
    parents: list[int] = []
    children: list[int] = []
    has_node: set[Hashable] = set()

    def add(cls: Hashable, i: int) -> None:
        has_node.add(cls)
        for child in classes[cls][i].children:
            parents.append(position[cls])
            children.append(position[child])

    for birth in sorted(by_birth):
        level = by_birth[birth]
        start, before = len(parents), set(has_node)
        for cls, i in level:
            add(cls, i)
        labels = strong_components(parents, children, len(position)).tolist()
        suspects = {(cls, i) for cls, i in level
                    if any(labels[position[child]] == labels[position[cls]] for child in classes[cls][i].children)}
        if not suspects:
            continue
        # the level again without its suspects, then each suspect where it closes no cycle
        del parents[start:], children[start:]
        has_node.clear()
        has_node.update(before)
        for node in level:
            if node not in suspects:
                add(*node)
        inside: dict[int, list[int]] = defaultdict(list)  # edges within a component of all the level's edges
        for parent, child in zip(parents, children):
            if labels[parent] == labels[child]:
                inside[parent].append(child)
        for cls, i in sorted(suspects, key=lambda node: (node[0] in has_node, position[node[0]], node[1])):
            here = position[cls]
            reads = [position[child] for child in classes[cls][i].children]
            if here in reads or _reaches([c for c in reads if labels[c] == labels[here]], here, inside):
                left_out.add((cls, i))
                continue
            add(cls, i)
            inside[here].extend(c for c in reads if labels[c] == labels[here])
    return left_out if _have_terms(classes, left_out, roots) else None


def strong_components(parents: Sequence[int], children: Sequence[int], n: int) -> np.ndarray:
    """The strongly connected component of each of ``n`` positions, given the edges
    ``parents[k] -> children[k]`` (e-classes to the classes their e-nodes read)."""
    graph = sparse.csr_matrix((np.ones(len(parents)), (parents, children)), shape=(n, n))
    return csgraph.connected_components(graph, directed=True, connection="strong")[1]


def _reaches(starts: list[int], target: int, edges: Mapping[int, list[int]]) -> bool:
    """Whether ``target`` is reachable from one of ``starts`` along ``edges``."""
    stack, seen = list(starts), set(starts)
    while stack:
        node = stack.pop()
        if node == target:
            return True
        for child in edges.get(node, ()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return False


def _have_terms(classes: Mapping[Hashable, Sequence[ENode]], left_out: set[tuple[Hashable, int]],
                roots: Sequence[Hashable]) -> bool:
    """Whether every root has a term without the e-nodes ``left_out`` (bottom up, each e-node
    counted off once its children have terms)."""
    waiting: dict[tuple[Hashable, int], int] = {}
    readers: dict[Hashable, list[tuple[Hashable, int]]] = defaultdict(list)
    ready: list[Hashable] = []
    for cls, enodes in classes.items():
        for i, e in enumerate(enodes):
            if (cls, i) in left_out:
                continue
            children = set(e.children)
            waiting[cls, i] = len(children)
            for child in children:
                readers[child].append((cls, i))
            if not children:
                ready.append(cls)
    done: set[Hashable] = set()
    while ready:
        cls = ready.pop()
        if cls in done:
            continue
        done.add(cls)
        for node in readers[cls]:
            waiting[node] -= 1
            if not waiting[node]:
                ready.append(node[0])
    return all(root in done for root in roots)
