"""Saturate mode's proof: rule applications found on the input that lead, step by step, to the extracted graph.

The extracted graph (the goal) is a set of nodes, each known by its structural key
(:func:`~gsl_eq.graph.diff.node_keys`). Starting from the input, a pass of each rule takes the matches
that replace nodes the goal does not hold by nodes it does (the targets' outputs are goal nodes), as
greedy mode's matcher finds them, inner nodes left to their other readers as an e-graph keeps them;
passes repeat until the graph is the goal, or no rule brings it closer. Each match is one step. Every
node of the goal is an e-node some rule's target built, or the input's, so the rules that built the
goal's nodes find them again, in an order where each match exists in the graph the steps before made.
"""

from __future__ import annotations

import time
from typing import Sequence

from ..frontend import Subst
from ..graph import Graph, Node
from ..graph.diff import label, merge_common, node_key, node_keys, structural_key
from ..greedy.match import Match, Matcher
from ..greedy.rewriter import Rejection, build_target
from .record import sequenced
from .steps import Step


def derive(start: Graph, goal: Graph, rules: Sequence[Subst], deadline: float | None = None
           ) -> tuple[list[Step], Graph, str | None]:
    """The steps from ``start`` toward ``goal`` by ``rules``, the graph they reach, and what is left
    (None when it is ``goal``, node by node).

    Parameters
    ----------
    start
        The graph rewriting starts from.
    goal
        The graph to reach.
    rules
        The rules the steps may apply (those with a connected source).
    deadline
        A ``time.perf_counter()`` time past which no pass starts.
    """
    aim = _Goal(goal)
    steps: list[Step] = []
    current = merge_common(start)
    if current is not start:
        steps.append(Step("merge", current))
    runnable = [rule for rule in rules if rule.connected]
    seen: set[int] = set()
    while True:
        if structural_key(current) in seen:
            return steps, current, "the rules came back to a graph the steps had made before"
        seen.add(structural_key(current))
        keys = node_keys(current)
        places = aim.places(current, keys)
        if not places:
            merged = merge_common(current)
            return (steps if merged is current else [*steps, Step("merge", merged)]), merged, None
        progressed = False
        for rule in runnable:
            if deadline is not None and time.perf_counter() > deadline:
                return steps, current, "the time limit ended the search for the steps"
            batch = _toward(current, rule, keys, places, aim)
            if batch:
                made, current = sequenced(current, rule, batch, shared=True)
                steps += made
                keys, progressed = node_keys(current), True
                places = aim.places(current, keys)
                if not places:
                    break
        if not progressed:
            return steps, current, (f"no rule's match brings the graph closer to the extracted one at "
                                    f"{len(places)} places where they differ")


class _Goal:
    """The graph to reach, and how close a node is to the goal node in its place: the nodes that agree
    with the goal's, from that node down (a node equal to the goal's, with everything it reads, counts
    as the nodes of its tree)."""

    def __init__(self, goal: Graph):
        self.graph = goal
        self.keys = node_keys(goal)
        self.held = set(self.keys.values())
        self.size: dict[Node, int] = {}
        for node in goal.rpo():
            self.size[node] = min(1 + sum(self.size[i] for i in node.inputs), 1 << 30)

    def places(self, graph: Graph, keys: dict[Node, int]) -> dict[Node, Node | None]:
        """Each node of ``graph`` that differs from the goal's node in its place, with that node: places
        pair from the outputs down, through nodes alike but for their inputs. Below a node unlike the
        goal's, the nodes the goal does not hold anywhere are places of no goal node (None)."""
        found: dict[Node, Node | None] = {}
        stack: list[tuple[Node, Node | None]] = list(zip(graph.outputs, self.graph.outputs))
        while stack:
            node, want = stack.pop()
            if node in found or (keys[node] == self.keys[want] if want is not None else keys[node] in self.held):
                continue
            found[node] = want
            if want is not None and label(node) == label(want) and len(node.inputs) == len(want.inputs):
                stack.extend(zip(node.inputs, want.inputs))
            else:
                stack.extend((i, None) for i in node.inputs)
        return found

    def gain(self, node: Node, target: Node, want: Node | None, keys: dict[Node, int], existing: dict[Node, int]) -> int:
        """How much closer ``target`` is than ``node`` to ``want``; in a place of no goal node, how many
        of the nodes ``target`` newly builds the goal holds."""
        if want is not None:
            return self.closeness(target, want, keys) - self.closeness(node, want, keys)
        made, stack, seen = 0, [target], set()
        while stack:
            n = stack.pop()
            if n in seen or n in existing:  # a node of the graph: not built
                continue
            seen.add(n)
            made += node_key(n, keys) in self.held
            stack.extend(n.inputs)
        return made

    def closeness(self, node: Node, want: Node, keys: dict[Node, int]) -> int:
        """How much of ``want``'s tree ``node`` agrees with, from the top down."""
        total, stack = 0, [(node, want)]
        while stack:
            a, b = stack.pop()
            if node_key(a, keys) == self.keys[b]:
                total += self.size[b]
            elif label(a) == label(b) and len(a.inputs) == len(b.inputs):
                total += 1
                stack.extend(zip(a.inputs, b.inputs))
        return total


def _toward(graph: Graph, rule: Subst, keys: dict[Node, int], places: dict[Node, Node], aim: _Goal
            ) -> list[tuple[Node, ...]]:
    """The matches of ``rule`` in ``graph`` (none overlapping) whose targets agree more with the goal, in
    the places of their outputs, than the outputs did; each by its source outputs."""
    scratch = dict(keys)

    def accept(m: Match) -> bool:
        placed = [(o, k) for k, o in enumerate(m.outputs) if o in places]
        if not placed:
            return False
        built = build_target(rule, m)
        if isinstance(built, Rejection):
            return False
        gains = [aim.gain(o, built.targets[k], places[o], scratch, keys) for o, k in placed]
        return sum(gains) > 0 and min(gains) >= 0

    return [tuple(m.outputs) for m in Matcher(rule, graph, shared_inner=True).matches(accept)]
