"""What every term of an e-class contains, and the rows of the exact extractor that follow from it.

If every term of e-class ``c`` contains e-class ``d``, a solution that uses ``c`` uses ``d``:
``used(c) <= used(d)``. The program's own rows only say that a chosen e-node uses its
children, so the relaxation may use ``d`` less than ``c`` whenever ``c``'s e-nodes reach
``d`` along different paths, each at a fraction. TASO's merges make that the rule: the
output of ``x @ w`` holds ``split(x @ concat(w, v))[0]`` through several split e-classes of
the same merged matmul, and the relaxation paid for the merged matmul once per path at a
fraction, not once: on NasRNN's e-graph under ``tensat() + default()`` the relaxation gave
a small fraction of the optimum, and HiGHS needed minutes to prove it (BENCHMARKS.md,
taso-full).

:func:`contained` finds, per e-class, the classes every one of its terms contains; the
greatest fixpoint of "a class contains what each of its e-nodes reaches through some
child", found by iterating down from "everything" (a term is finite, so cycles add
nothing). :func:`implied_rows` turns it into rows:

- ``used(c) <= used(d)`` for ``d`` contained in ``c`` and not already contained in
  another class ``c`` contains (those follow by transitivity): the transitive reduction;
- for a class whose e-nodes disagree, the e-nodes containing ``d``, summed, at most
  ``used(d)``: they exclude each other, so at most one of them is chosen. Written only
  where two or more of them contain ``d`` (one follows from its child's row), and only
  for the first ``d`` of those contained in each other with the same e-nodes.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from dataclasses import dataclass

from .indexed import Indexed

#: Above this many e-classes no implied rows are written: the sets take up to classes^2 / 16 bytes.
IMPLIED_CLASS_LIMIT = 30_000


@dataclass
class Contained:
    """Per e-class (by position), the classes every term of it contains, as a bitset over
    ``tracked`` (bit ``k`` stands for class ``tracked[k]``); ``members``: the kept e-nodes per class;
    ``leaves``: the classes all of whose kept e-nodes have no children."""

    tracked: list[int]
    sets: dict[int, int]
    members: dict[int, list[int]]
    leaves: set[int]

    def __post_init__(self) -> None:
        self.index = {cls: k for k, cls in enumerate(self.tracked)}

    def reached(self, graph: Indexed, node: int) -> int:
        """What every term whose top e-node is ``node`` contains: its children and theirs."""
        found = 0
        for child in graph.node_children[node]:
            found |= self.sets[child]
            if child in self.index:
                found |= 1 << self.index[child]
        return found

    def topmost(self, bits: int) -> int:
        """The bits of ``bits`` whose class no other class of ``bits`` contains: take the highest
        left, drop all it contains, repeat. A dropped class's own contents are inside what dropped
        it (containment is transitive), so only the classes taken are looked at; bits run children
        first, so those are mostly the ones kept (on cycles a kept one may be taken after the
        one it contains, which it then drops all the same)."""
        left, below = bits, 0
        while left:
            top = left.bit_length() - 1
            below |= self.sets[self.tracked[top]]
            left &= ~below & ~(1 << top)
        return bits & ~below

    def classes(self, bits: int) -> Iterator[int]:
        """The tracked classes of a bitset."""
        while bits:
            low = bits & -bits
            yield self.tracked[low.bit_length() - 1]
            bits ^= low


def contained(graph: Indexed, nodes: list[int], leaves_only: bool = False) -> Contained:
    """The classes every term of each class built from the kept e-nodes ``nodes`` contains,
    tracking every class, or only the leaf classes (all of whose e-nodes have no children)."""
    members: dict[int, list[int]] = {}
    for node in nodes:
        members.setdefault(graph.node_class[node], []).append(node)
    leaves = {cls for cls, own in members.items() if all(not graph.node_children[node] for node in own)}
    parents: dict[int, set[int]] = collections.defaultdict(set)
    waiting: dict[int, int] = {}
    for cls, own in members.items():
        children = {child for node in own for child in graph.node_children[node]}
        waiting[cls] = len(children)
        for child in children:
            parents[child].add(cls)
    order = [cls for cls, count in waiting.items() if count == 0]  # children first (Kahn); cycles last
    for cls in order:
        for parent in parents[cls]:
            waiting[parent] -= 1
            if waiting[parent] == 0:
                order.append(parent)
    order.extend(cls for cls, count in waiting.items() if count > 0)
    result = Contained([cls for cls in order if cls in leaves] if leaves_only else order, {}, members, leaves)
    everything = (1 << len(result.tracked)) - 1
    result.sets.update((cls, 0 if cls in leaves else everything) for cls in members)
    queue = collections.deque(cls for cls in order if cls not in leaves)
    queued = set(queue)
    while queue:
        cls = queue.popleft()
        queued.discard(cls)
        found = everything
        for node in members[cls]:
            found &= result.reached(graph, node)
        if found != result.sets[cls]:
            result.sets[cls] = found
            for parent in parents[cls]:
                if parent not in queued:
                    queued.add(parent)
                    queue.append(parent)
    return result


def tracks_all(graph: Indexed, nodes: list[int]) -> bool:
    """Whether :func:`implied_rows` works on these kept e-nodes: at most :data:`IMPLIED_CLASS_LIMIT` classes."""
    return len({graph.node_class[node] for node in nodes}) <= IMPLIED_CLASS_LIMIT


def implied_rows(graph: Indexed, nodes: list[int], found: Contained | None = None,
                 ) -> tuple[list[tuple[int, int]], list[tuple[list[int], int]]]:
    """The rows containment implies (see the module's notes), over the kept e-nodes ``nodes``:
    ``(c, d)`` pairs for ``used(c) <= used(d)``, and ``(e-nodes, d)`` for
    ``sum(chosen(e-nodes)) <= used(d)``. None above :data:`IMPLIED_CLASS_LIMIT` classes.
    ``found``: ``contained(graph, nodes)``, where the caller has it already."""
    if found is None:
        if not tracks_all(graph, nodes):
            return [], []
        found = contained(graph, nodes)
    sets = found.sets
    pairs = [(cls, inner) for cls, bits in sets.items() for inner in found.classes(found.topmost(bits))]
    partial = []
    for cls, own in found.members.items():
        if len(own) < 2:
            continue
        reached = {node: found.reached(graph, node) for node in own}
        once = twice = 0
        for bits in reached.values():
            twice |= once & bits
            once |= bits
        groups = {(): twice & ~sets[cls]}  # the e-nodes containing a class -> those classes, as bits
        for node in own:
            split = {}
            for containing, bits in groups.items():
                for key, part in (((*containing, node), bits & reached[node]), (containing, bits & ~reached[node])):
                    if part:
                        split[key] = part
            groups = split
        for containing, bits in groups.items():
            if len(containing) >= 2:
                partial.extend((list(containing), inner) for inner in found.classes(found.topmost(bits)))
    return pairs, partial
