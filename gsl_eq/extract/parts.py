"""A used tuple's parts are taken from it: the exact programs' parts rows.

TASO's merges give an e-class many ways to compute its value: its own conv, or a part
(``getitem``) of one of the splits of the merged convs it takes part in. Inception-v3's e-graph
under TENSAT's settings has classes with up to 18 such parts. The relaxation of the exact
program then covers a class a third by one split, a sixth by another and a third by its own
conv, and HiGHS needs thousands of cuts to close that gap.

The parts rows make the program take a used split's parts wherever their values are needed:
``chosen[part] = used[tuple]`` for a part e-node, its class and its tuple's class. A part whose
class nothing reads costs nothing and is left out of the graph. So the programs look for the
cheapest graph that computes no part of a used split a second time another way (a merged conv
computed for one part while another part's value is computed by a conv of its own, or by a
second merge). Such a graph can only be cheaper through the cost model's occupancy or fusion:

- fusion: a part's class gets no row when one of its other e-nodes opens a kernel a reader of
  the class may save more in than that e-node costs after its own savings; there, the class
  computed on its own can pay;
- occupancy: a second merge holding a part that one used split computes already can cost what
  its other parts alone cost, when the device is not filled. The rows leave that graph out.

No row goes to a part whose class is on one cycle with its tuple's (:mod:`.cyclic`: its class
may be needed below the tuple), nor to two parts of one tuple in one class, nor to a tuple class
a fusion reaches into. (Off a cycle the row never asks for a cycle: the part's class reads the
tuple's, so the tuple's cannot read it.)
"""

from __future__ import annotations

from .cyclic import cyclic_parts
from .indexed import Indexed
from .fusion import max_saving


def part_nodes(graph: Indexed, nodes: list[int], cycles: dict[int, tuple[int, int]] | None = None) -> list[int]:
    """The kept part e-nodes (of ``nodes``) that get a parts row: ``chosen[part] = used[graph.parts[part]]``.
    ``cycles``: the kept e-nodes' :func:`~.cyclic.cyclic_parts`, if known."""
    cycles = cyclic_parts(graph, nodes) if cycles is None else cycles
    kept = set(nodes)
    members: dict[int, list[int]] = {}
    for node in nodes:
        members.setdefault(graph.node_class[node], []).append(node)

    def in_kernels(cls: int) -> float:
        """The most a reader of class ``cls`` saves running in the kernel of the class's e-node."""
        return max((saving for reader in graph.parents[cls] if reader in kept
                    for child, saving in graph.fusible.get(reader, ()) if child == cls), default=0.0)

    by_tuple: dict[tuple[int, int], list[int]] = {}
    for node in nodes:
        tuple_class = graph.parts.get(node)
        if tuple_class is not None and graph.node_cost[node] == 0 and not _on_one_cycle(cycles, graph.node_class[node],
                                                                                         tuple_class):
            by_tuple.setdefault((graph.node_class[node], tuple_class), []).append(node)
    hosts_no_cheaper: dict[int, bool] = {}  # per class: no kernel of it may be cheaper than a part

    def part_is_cheapest(cls: int) -> bool:
        if cls not in hosts_no_cheaper:
            hosted = in_kernels(cls)
            hosts_no_cheaper[cls] = all(graph.node_cost[other] - max_saving(graph, other) >= hosted
                                        for other in members[cls] if other in graph.opens)
        return hosts_no_cheaper[cls]

    parts = []
    for (cls, tuple_class), same in by_tuple.items():
        if len(same) > 1 or in_kernels(tuple_class) > 0 or any(graph.prologue.get(n, 0.0) for n in members[tuple_class]):
            continue
        if part_is_cheapest(cls):
            parts.append(same[0])
    return parts


def _on_one_cycle(cycles: dict[int, tuple[int, int]], cls: int, other: int) -> bool:
    """Whether classes ``cls`` and ``other`` are on one cycle (the same strongly connected part)."""
    return cycles[cls][1] > 1 and cycles[cls][0] == cycles[other][0]


def with_parts(graph: Indexed, parts: list[int], choice: dict[int, int]) -> dict[int, int]:
    """A choice (class position -> e-node number) as a start for a program with parts rows: the
    parts of its used tuples whose classes it does not use are added (they cost nothing, and the
    graph from the roots is the same). A choice that computes a class another way than by a part
    of a used tuple still breaks a row: the solver repairs or drops that start."""
    extra = {graph.node_class[part]: part for part in parts
             if graph.parts[part] in choice and graph.node_class[part] not in choice}
    return {**choice, **extra}
