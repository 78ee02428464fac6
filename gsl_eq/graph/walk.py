"""The one walk of a graph given by its children: nodes children first, and whether it has a cycle
(an extraction's chosen classes; a target's new nodes above the loaded graph)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence


def postorder(roots: Sequence[Hashable], children: Callable[[Hashable], Iterable[Hashable]]
              ) -> tuple[list[Hashable], bool]:
    """The nodes reachable from ``roots`` through ``children(node)`` (for an extraction, a node is
    a chosen class and its children its chosen e-node's child classes), children before parents,
    and whether they form no cycle (iterative depth-first search)."""
    finished: dict[Hashable, bool] = {}  # False while the node is on the search stack
    order: list[Hashable] = []
    acyclic = True
    for root in roots:
        if root in finished:
            continue
        finished[root] = False
        stack = [(root, iter(children(root)))]
        while stack:
            node, below = stack[-1]
            for child in below:
                if child not in finished:
                    finished[child] = False
                    stack.append((child, iter(children(child))))
                    break
                acyclic = acyclic and finished[child]
            else:
                stack.pop()
                finished[node] = True
                order.append(node)
    return order, acyclic
