"""The e-graph as every extractor reads it: e-classes mapped to priced e-nodes (:class:`ENodeCost`),
and the same as flat integer tables (:class:`Indexed`), built once per extraction."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import GslEqError

__all__ = ["PART_OP", "Choice", "ENodeCost", "ExtractGraph", "ExtractionError", "Indexed"]


class ExtractionError(GslEqError, ValueError):
    """No acyclic term of finite cost can be extracted; the message names the e-class at fault."""


@dataclass(frozen=True)
class ENodeCost:
    """One e-node as the extractors see it: its own cost, its child e-classes in order,
    and a label (its op) for people and for files.

    A cost of ``math.inf`` marks an e-node that must never be extracted.

    Fusion, for cost models that price it (the gpu model's kernels, :mod:`.fusion`): ``opens``
    says the e-node's kernel can take an epilogue; ``fusible`` lists (child e-class, saving): the
    e-node costs ``saving`` less when it runs inside the kernel of that child's chosen e-node,
    which it may when that e-node ``opens`` and this e-node is the child's only reader (no other
    chosen e-node reads it and it is not a root), one such saving per e-node. ``prologue``: the
    e-node costs that much less when it runs inside the kernel of its only reader instead, a
    reader listing its class as ``fusible``, and then takes no epilogue itself.
    :func:`dag_cost` prices a choice with the fusions that save most.
    """

    cost: float
    children: tuple[Hashable, ...] = ()
    op: str = ""
    opens: bool = False
    fusible: tuple[tuple[Hashable, float], ...] = ()
    prologue: float = 0.0

    def __post_init__(self) -> None:
        if not self.cost >= 0:  # also rejects NaN
            raise ValueError(f"an e-node's cost must be >= 0, got {self.cost!r}")
        if not 0 <= self.prologue <= self.cost:
            raise ValueError(f"a prologue saving needs 0 <= saving <= cost ({self.cost!r}), got {self.prologue!r}")
        for child, saving in self.fusible:
            if child not in self.children or not 0 <= saving <= self.cost:
                raise ValueError(f"a fusion saving needs a child e-class and 0 <= saving <= cost ({self.cost!r}), "
                                 f"got {(child, saving)!r}")


ExtractGraph = Mapping[Hashable, Sequence[ENodeCost]]
"""An e-graph: e-class id -> its e-nodes. Every child of an e-node must be a key."""

Choice = dict[Hashable, int]
"""E-class id -> index of its chosen e-node."""


#: The label of an e-node that takes one part of a tuple (gsl_eq's e-graphs label TupleGetItem so).
PART_OP = "getitem"


class Indexed:
    """An e-graph as flat integer tables, built once per extraction: e-classes numbered
    in mapping order, e-nodes numbered class by class.

    ``node_class[n]``, ``node_index[n]`` (its position in its class), ``node_cost[n]`` and
    ``node_children[n]`` (its distinct child classes, first occurrence order) describe
    e-node ``n``; ``class_nodes[c]`` is the range of class ``c``'s e-nodes and
    ``parents[c]`` the e-nodes that have ``c`` as a child. ``opens`` is the set of e-nodes
    that open a kernel, ``fusible[n]`` e-node ``n``'s (child class, saving) pairs and
    ``prologue[n]`` its prologue saving, for the cost models that price fusion (:class:`ENodeCost`).
    ``parts[n]`` is the class of the tuple an e-node labelled ``getitem`` takes a part of (a
    split's output). Raises ExtractionError for a child e-class that is not in the e-graph.
    """

    def __init__(self, egraph: ExtractGraph):
        self.classes: list[Hashable] = list(egraph)
        self.position: dict[Hashable, int] = {cls: k for k, cls in enumerate(self.classes)}
        self.node_class: list[int] = []
        self.node_index: list[int] = []
        self.node_cost: list[float] = []
        self.node_children: list[tuple[int, ...]] = []
        self.class_nodes: list[range] = []
        self.parents: list[list[int]] = [[] for _ in self.classes]
        self.opens: set[int] = set()
        self.fusible: dict[int, tuple[tuple[int, float], ...]] = {}
        self.prologue: dict[int, float] = {}
        self.parts: dict[int, int] = {}
        position = self.position
        node_class, node_index, node_cost, node_children = (
            self.node_class, self.node_index, self.node_cost, self.node_children)
        for c, (cls, nodes) in enumerate(egraph.items()):
            first = len(node_class)
            for index, node in enumerate(nodes):
                try:
                    children = tuple(dict.fromkeys(map(position.__getitem__, node.children)))
                except KeyError as missing:
                    raise ExtractionError(f"e-node {index} of e-class {cls!r} has a child e-class "
                                          f"{missing.args[0]!r} that is not in the e-graph") from None
                if node.opens:
                    self.opens.add(len(node_cost))
                if node.fusible:
                    self.fusible[len(node_cost)] = tuple((position[child], saving) for child, saving in node.fusible)
                if node.prologue:
                    self.prologue[len(node_cost)] = node.prologue
                if node.op == PART_OP and len(children) == 1:
                    self.parts[len(node_cost)] = children[0]
                node_children.append(children)
                node_cost.append(node.cost)
            node_class.extend(itertools.repeat(c, len(nodes)))
            node_index.extend(range(len(nodes)))
            self.class_nodes.append(range(first, len(node_class)))
        parents = self.parents
        for node, children in enumerate(node_children):
            for child in children:
                parents[child].append(node)

    def root_positions(self, roots: Sequence[Hashable]) -> list[int]:
        for root in roots:
            if root not in self.position:
                raise ExtractionError(f"root e-class {root!r} is not in the e-graph")
        return [self.position[root] for root in roots]

    def choice(self, chosen: Mapping[int, int]) -> Choice:
        """Class position -> e-node number, as e-class id -> e-node index."""
        return {self.classes[c]: self.node_index[n] for c, n in chosen.items()}
