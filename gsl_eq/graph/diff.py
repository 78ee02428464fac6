"""What a rewrite changed: two graphs compared node by node, for drawings of an optimization.

    diff = compare(before, after)
    diff.new        # nodes of ``after`` with no counterpart in ``before``
    diff.rewired    # nodes of ``after`` whose counterpart read other nodes
    diff.removed    # nodes of ``before`` with no counterpart in ``after``

No rewrite history is needed: nodes are paired by structure. First, nodes that compute the
same thing from the same inputs (same kind, op, attributes, type, name for variables, value for
constants, and inputs paired the same way, bottom-up) are paired; then pairs spread to
nodes of the same label that read a paired node in the same input slot (forward) and to the
same input slots of paired nodes, from the outputs up (backward), until nothing changes. What
is left unpaired was made or dropped by the rewrite.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Hashable, Mapping

from .graph import Graph, Kind, Node

__all__ = ["GraphDiff", "compare", "label", "merge_common", "node_key", "node_keys", "structural_key"]

#: The most rounds of forward and backward pairing; each round pairs along a whole graph.
ROUNDS = 8


@dataclass
class GraphDiff:
    """Which nodes of ``after`` are new or read other inputs than their counterparts, and which
    nodes of ``before`` are gone; ``pairs`` maps each paired node of ``after`` to its
    counterpart in ``before``.

    Attributes
    ----------
    pairs
        Each paired node of ``after``, to its counterpart in ``before``.
    new
        The nodes of ``after`` with no counterpart.
    rewired
        The paired nodes of ``after`` whose inputs are not paired with their counterpart's.
    removed
        The nodes of ``before`` with no counterpart.
    """

    pairs: dict[Node, Node] = field(default_factory=dict)
    new: set[Node] = field(default_factory=set)
    rewired: set[Node] = field(default_factory=set)
    removed: set[Node] = field(default_factory=set)

    @property
    def changed(self) -> set[Node]:
        """The nodes of ``after`` a drawing marks: new or rewired."""
        return self.new | self.rewired

    def mark(self, node: Node) -> str | None:
        """``"new"``, ``"rewired"`` or ``"removed"`` for a node of either graph, else None.

        Parameters
        ----------
        node
            A node of ``before`` or ``after``.
        """
        if node in self.new:
            return "new"
        if node in self.rewired:
            return "rewired"
        if node in self.removed:
            return "removed"
        return None

    def summary(self) -> str:
        """One line: how many nodes are new, rewired and removed."""
        return f"{len(self.new)} new, {len(self.rewired)} rewired, {len(self.removed)} removed"


def label(node: Node) -> Hashable:
    """What a node is apart from its inputs: kind, op, attributes and type; a variable's name,
    a constant's value (by digest).

    Parameters
    ----------
    node
        The node.
    """
    if node._label is None:  # a node is not changed once built: its label is made once
        node._label = _label(node)
    return node._label


def _label(node: Node) -> Hashable:
    if node.kind is Kind.VAR:
        return ("var", node.name, node.type)
    if node.kind is Kind.CONST:
        value = node.value
        digest = hashlib.sha1(value.tobytes()).hexdigest() if value is not None else ""
        return ("const", node.type, digest)
    return (node.kind.value, node.op, _frozen(node.attrs), node.type)


def structural_key(graph: Graph) -> int:
    """A hash of what ``graph`` computes, node by node (:func:`label`, inputs by their keys), from
    its parameters to its outputs: graphs built apart but alike have one key; nodes' identities
    do not count.

    Parameters
    ----------
    graph
        The graph.
    """
    key = _node_keys(graph, {node: label(node) for node in graph.rpo()})
    return hash((tuple(label(v) for v in graph.inputs), tuple(key[o] for o in graph.outputs), graph.returns_tuple))


def merge_common(graph: Graph) -> Graph:
    """``graph`` with each computation done once: a node that computes what an earlier one does
    (same :func:`label`, same inputs once merged) is replaced by it, as an e-graph merges them on
    load and TVM's EliminateCommonSubexpr does (a model TVM imports from PyTorch reshapes its input
    once per ``nn.Linear``). ``graph`` itself where nothing is computed twice.

    Parameters
    ----------
    graph
        The graph; it is left as it is.
    """
    first: dict[tuple[Hashable, tuple[int, ...]], Node] = {}
    mapping: dict[Node, Node] = {}
    for node in graph.rpo():
        inputs = tuple(id(mapping.get(i, i)) for i in node.inputs)
        twin = first.setdefault((label(node), inputs), node)
        if twin is not node and node.kind is not Kind.VAR:
            mapping[node] = twin
    return graph.replace(mapping) if mapping else graph


def node_keys(graph: Graph) -> dict[Node, int]:
    """Each node's :func:`structural_key`-style hash: its :func:`label` and its inputs' hashes, so
    nodes built apart but alike, in one graph or two, have one key.

    Parameters
    ----------
    graph
        The graph.
    """
    return _node_keys(graph, {node: label(node) for node in graph.rpo()})


def node_key(node: Node, keys: dict[Node, int]) -> int:
    """The :func:`node_keys` hash of ``node``, a node built on nodes ``keys`` has, filling ``keys``
    with it and with the new nodes it reads.

    Parameters
    ----------
    node
        The node.
    keys
        Hashes of nodes known already (filled further).
    """
    stack = [node]
    while stack:
        top = stack[-1]
        if top in keys:
            stack.pop()
            continue
        missing = [i for i in top.inputs if i not in keys]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        keys[top] = hash((label(top), tuple(keys[i] for i in top.inputs)))
    return keys[node]


def _node_keys(graph: Graph, labels: Mapping[Node, Hashable]) -> dict[Node, int]:
    """Each node's hash of its label and its inputs' hashes, bottom-up."""
    key: dict[Node, int] = {}
    for node in graph.rpo():
        key[node] = hash((labels[node], tuple(key[i] for i in node.inputs)))
    return key


def compare(before: Graph, after: Graph) -> GraphDiff:
    """Pair the nodes of ``after`` with those of ``before`` (see the module's docstring); neither
    graph is changed.

    Parameters
    ----------
    before
        The graph before the rewrite.
    after
        The graph after it.

    Examples
    --------
    ::

        diff = compare(wl.graph, result.workload.graph)
        diff.summary()                                        # "3 new, 1 rewired, 4 removed"
        draw(result.workload.graph, marks={n: diff.mark(n) for n in diff.changed})
    """
    labels = {n: label(n) for g in (before, after) for n in g.rpo()}
    pairs: dict[Node, Node] = {}  # after -> before
    taken: dict[Node, Node] = {}  # before -> after
    _pair_identical(before, after, labels, pairs, taken)
    users = before.successors()
    for _ in range(ROUNDS):
        grown = _forward(after, users, labels, pairs, taken) + _backward(before, after, labels, pairs, taken)
        if not grown:
            break
    diff = GraphDiff(pairs=pairs)
    for node in after.rpo():
        twin = pairs.get(node)
        if twin is None:
            diff.new.add(node)
        elif len(node.inputs) != len(twin.inputs) or any(pairs.get(a) is not b for a, b in zip(node.inputs, twin.inputs)):
            diff.rewired.add(node)
    diff.removed = {n for n in before.rpo() if n not in taken}
    return diff


def _frozen(value: object) -> Hashable:
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _pair(a: Node, b: Node, pairs: dict[Node, Node], taken: dict[Node, Node]) -> None:
    pairs[a], taken[b] = b, a


def _pair_identical(before: Graph, after: Graph, labels: dict, pairs: dict, taken: dict) -> None:
    """Pair nodes computing the same thing from the same inputs (a bottom-up structural hash)."""
    old, new = _node_keys(before, labels), _node_keys(after, labels)
    by_key: dict[int, list[Node]] = {}
    for n in before.rpo():
        by_key.setdefault(old[n], []).append(n)
    for n in after.rpo():
        for twin in by_key.get(new[n], ()):
            if twin not in taken and labels[twin] == labels[n]:
                _pair(n, twin, pairs, taken)
                break


def _forward(after: Graph, users: dict[Node, list[Node]], labels: dict, pairs: dict, taken: dict) -> int:
    """Pair each unpaired node of ``after`` with an unpaired node of ``before`` of its label that
    reads, in the same slots, the counterparts of its paired inputs; returns how many were paired."""
    grown = 0
    for node in after.rpo():
        if node in pairs or not node.inputs:
            continue
        candidates: list[Node] | None = None
        for slot, source in enumerate(node.inputs):
            twin = pairs.get(source)
            if twin is None:
                continue
            here = [u for u in users.get(twin, ()) if u not in taken and labels[u] == labels[node]
                    and slot < len(u.inputs) and u.inputs[slot] is twin]
            candidates = here if candidates is None else [u for u in candidates if u in here]
            if not candidates:
                break
        if candidates:
            _pair(node, candidates[0], pairs, taken)
            grown += 1
    return grown


def _backward(before: Graph, after: Graph, labels: dict, pairs: dict, taken: dict) -> int:
    """Pair unpaired outputs by position, then the unpaired inputs of paired nodes slot by slot
    when their labels agree, from the outputs up; returns how many were paired."""
    grown = 0
    for a, b in zip(after.outputs, before.outputs):
        if a not in pairs and b not in taken and labels[a] == labels[b]:
            _pair(a, b, pairs, taken)
            grown += 1
    for node in reversed(after.rpo()):
        twin = pairs.get(node)
        if twin is None:
            continue
        for a, b in zip(node.inputs, twin.inputs):
            if a not in pairs and b not in taken and labels[a] == labels[b]:
                _pair(a, b, pairs, taken)
                grown += 1
    return grown
