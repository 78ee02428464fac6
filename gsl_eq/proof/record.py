"""Greedy mode's proof: its recorded passes made steps, one rule application each.

A pass rewrites all its matches at once (:func:`~gsl_eq.greedy.rewriter.rewrite_once`); a proof applies
them one after another, each in the graph the one before made, which gives the same graph: the
matches do not overlap. Merges and folds between passes are steps of their own.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ..frontend import Subst
from ..graph import Graph, Node
from ..greedy.rewriter import Rebuilt, Rewrites
from ..workload import Workload
from .steps import ReplayError, Step, apply_rule, rebuild, rule_step


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


def of_history(start: Workload, history: Sequence[Rewrites | Rebuilt]) -> list[Step]:
    """The steps of a greedy run's ``history``, starting from ``start`` (its input): the history holds
    positions only, so the graphs are rebuilt here, each pass's matches applied one by one and each
    merge and fold redone on the values the steps before gave.

    Raises
    ------
    ReplayError
        A recorded pass's match is not in the graph the steps before made.
    """
    steps: list[Step] = []
    wl, current = start, start.graph
    for event in history:
        if isinstance(event, Rebuilt):
            wl = rebuild(event.kind, current, wl, event.folded)
            current = wl.graph
            steps.append(Step(event.kind, current, folded=event.folded))
            continue
        order = current.rpo()
        try:
            outputs = [tuple(order[k] for k in match) for match in event.outputs]
        except IndexError:
            raise ReplayError(f"the pass of {event.rule.name} names a node past the {len(order)} of its graph") from None
        made, current = sequenced(current, event.rule, outputs)
        steps += made
    return steps
