"""Greedy mode's proof: its recorded passes made steps, one rule application each.

A pass rewrites all its matches at once (:func:`~gsl_eq.greedy.rewriter.rewrite_once`); a proof applies
them one after another, each in the graph the one before made, which gives the same graph: the
matches do not overlap. Merges and folds between passes are steps of their own.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ..frontend import Subst
from ..graph import Graph, Node
from ..graph.diff import structural_key
from ..greedy.rewriter import Rebuilt, Rewrites
from .steps import ReplayError, Step, apply_rule, rule_step


def sequenced(graph: Graph, rule: Subst, batch: Iterable[Sequence[Node]], shared: bool = False) -> tuple[list[Step], Graph]:
    """The matches of one pass (each by its source outputs, nodes of ``graph``) applied one by one:
    their steps and the graph after the last."""
    steps: list[Step] = []
    memos: list[dict[Node, Node]] = []  # each application's: a node of the graph before -> its node after
    current = graph
    for outputs in batch:
        here = [_moved(o, memos) for o in outputs]
        applied = apply_rule(current, rule, here, shared)
        steps.append(rule_step(current, applied, rule, shared))
        memos.append(applied.memo)
        current = applied.after
    return steps, current


def _moved(node: Node, memos: list[dict[Node, Node]]) -> Node:
    for memo in memos:
        node = memo.get(node, node)
    return node


def of_history(start: Graph, history: Sequence[Rewrites | Rebuilt]) -> list[Step]:
    """The steps of a greedy run's ``history``, starting from ``start`` (its input's graph).

    Raises
    ------
    ReplayError
        A recorded pass does not come out the same applied one match at a time.
    """
    steps: list[Step] = []
    current = start
    for event in history:
        if isinstance(event, Rebuilt):
            steps.append(Step(event.kind, event.after, folded=event.folded))
            current = event.after
            continue
        if current is not event.graph:  # the pass's graph is the one the earlier steps made, node by node
            if structural_key(current) != structural_key(event.graph):
                raise ReplayError(f"the pass of {event.rule.name} starts from another graph than the steps before made")
            pairs = dict(zip(event.graph.rpo(), current.rpo()))
            outputs = [tuple(pairs[o] for o in match) for match in event.outputs]
        else:
            outputs = list(event.outputs)
        made, current = sequenced(current, event.rule, outputs)
        steps += made
    return steps
