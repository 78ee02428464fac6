"""Which e-classes the kept e-nodes of an exact program put on a cycle.

TASO's split/concat pairs make cycles of e-classes (``a`` holds ``split0(m)``, ``m`` holds
``concat(a, b)``): the exact programs treat the strongly connected parts of the class graph
their kept e-nodes make apart (:mod:`.cpsat` orders their classes; :mod:`.parts` gives a part
no row where its tuple is on one cycle with it).
"""

from __future__ import annotations

import numpy as np

from ..egraph.cycles import strong_components
from .indexed import Indexed


def cyclic_parts(graph: Indexed, nodes: list[int]) -> dict[int, tuple[int, int]]:
    """Per class position of the kept e-nodes ``nodes``: (its strongly connected part of the
    class graph those e-nodes make, that part's size). A part of size 1 is on no cycle: the
    kept e-nodes never have their own class as a child."""
    row = {cls: k for k, cls in enumerate(dict.fromkeys(graph.node_class[node] for node in nodes))}
    pairs = np.asarray([(row[graph.node_class[node]], row[child]) for node in nodes
                        for child in graph.node_children[node]], dtype=np.int64).reshape(-1, 2)
    labels = strong_components(pairs[:, 0], pairs[:, 1], len(row))
    size = np.bincount(labels)
    return {cls: (int(labels[k]), int(size[labels[k]])) for cls, k in row.items()}


def is_cyclic(graph: Indexed, nodes: list[int]) -> bool:
    """Whether the kept e-nodes ``nodes`` put some e-classes on a cycle."""
    return any(size > 1 for _, size in cyclic_parts(graph, nodes).values())
