"""A proof's steps, and applying one to a graph with greedy mode's matcher and rewriter.

A rule step names the rule, where its source outputs are in the graph before it (their positions
in reverse post-order), every node its source matched there, and the nodes its target made in
the graph after it. Applying it matches the rule at those outputs and replaces them by the
target, as one greedy rewrite does (:func:`apply_rule`); a step of saturate mode may leave the
match's inner nodes to other readers (``shared``), as an e-graph keeps them. A rebuild step merges
computations done twice, or drops the parameters no longer read and folds the parameter
computations, as optimize() and greedy mode do between rewrites (:func:`rebuild`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import GslEqError
from ..frontend import Subst
from ..graph import Graph, Kind, Node
from ..graph.diff import merge_common
from ..greedy.match import Match, Matcher, matched_nodes
from ..greedy.rewriter import Rejection, TargetBuilder, build_target, to_workload
from ..workload import Workload

#: The kinds of step: a rule's rewrite; computations done twice merged; parameter computations folded.
KINDS = ("rule", "merge", "fold")


class ReplayError(GslEqError):
    """A step does not apply to the graph it is replayed on: the rule does not match where the step
    says, or its target cannot be built there."""


@dataclass(frozen=True)
class Step:
    """One step of a :class:`~gsl_eq.proof.Proof`: a rule's rewrite, a merge or a fold, and the graph after it.

    Attributes
    ----------
    kind
        ``"rule"``, ``"merge"`` or ``"fold"``.
    after
        The graph after the step.
    rule
        A rule step's rule.
    at
        The positions, in the reverse post-order of the graph before the step, of the source's outputs.
    matched
        The positions there of every node the source matched, its inputs left out.
    made
        The positions, in ``after``'s reverse post-order, of the nodes the target made.
    shared
        The match's inner nodes may have readers outside it, which keep them (saturate mode's steps).
    folded
        A fold step computed new parameters (else it only dropped the parameters no longer read).
    """

    kind: str
    after: Graph = field(repr=False)
    rule: Subst | None = field(default=None, repr=False)
    at: tuple[int, ...] = ()
    matched: tuple[int, ...] = ()
    made: tuple[int, ...] = ()
    shared: bool = False
    folded: bool = False

    @property
    def name(self) -> str:
        """The rule's name, or the step's kind."""
        return self.rule.name if self.rule is not None else self.kind

    @property
    def where(self) -> str | None:
        """The file and line the rule was written at (``conv.py:26``)."""
        if self.rule is None:
            return None
        return f"{os.path.basename(self.rule.loc.filename)}:{self.rule.loc.lineno}"

    def describe(self, before: Graph) -> dict[str, Any]:
        """The step as plain data: what it matched in ``before`` and made, by position and op."""
        entry: dict[str, Any] = {"kind": self.kind, "rule": self.name if self.rule else None, "where": self.where}
        if self.kind == "rule":
            old, new = before.rpo(), self.after.rpo()
            entry["at"] = list(self.at)
            entry["matched"] = [{"node": k, "op": _op(old[k])} for k in self.matched]
            entry["made"] = [{"node": k, "op": _op(new[k])} for k in self.made]
        elif self.kind == "fold":
            entry["folded"] = self.folded
        entry["nodes_after"] = len(self.after)
        return entry


def _op(node: Node) -> str:
    return node.op if node.kind is Kind.CALL else node.kind.value


@dataclass(frozen=True)
class Applied:
    """One rule application: the graph after it, the match, the target built, and each node of the
    graph before mapped to its node after."""

    after: Graph
    match: Match
    builder: TargetBuilder
    memo: dict[Node, Node]


def apply_rule(graph: Graph, rule: Subst, outputs: Sequence[Node], shared: bool = False) -> Applied:
    """Rewrite ``graph`` by ``rule`` where its source outputs are ``outputs``, as one greedy rewrite.

    Parameters
    ----------
    graph
        The graph; it is left as it is.
    rule
        The rule.
    outputs
        The nodes of ``graph`` its source outputs match, in order; a variadic source's group of
        instances (:meth:`~gsl_eq.greedy.match.Matcher.match_at`).
    shared
        Inner nodes of the match may have readers outside it (they keep them).

    Raises
    ------
    ReplayError
        The rule does not match there, its target cannot be built, or replacing the outputs by it
        makes a cycle.
    """
    matcher = Matcher(rule, graph, shared_inner=shared)
    if rule.variadic:
        m = matcher.match_at(outputs[0], group=outputs)
    elif len(outputs) > 1 or not rule.connected:  # the recorded partners, not the first the search finds
        m = matcher.match_outputs(outputs)
    else:
        m = matcher.match_at(outputs[0])
    if m is None or (len(outputs) > 1 and tuple(m.outputs) != tuple(outputs)):
        raise ReplayError(f"rule {rule.name} does not match at {_op(outputs[0])}")
    built = build_target(rule, m)
    if isinstance(built, Rejection):
        raise ReplayError(f"rule {rule.name}'s target cannot be built at {_op(outputs[0])}: {built}")
    memo: dict[Node, Node] = {}
    try:
        after = graph.replace(dict(zip(m.outputs, built.targets)), memo=memo)
    except ValueError as err:  # an inner node shared with a reader of an output: a cycle
        raise ReplayError(f"rule {rule.name} at {_op(outputs[0])}: {err}") from None
    return Applied(after, m, built, memo)


def rule_step(before: Graph, applied: Applied, rule: Subst, shared: bool) -> Step:
    """The :class:`Step` of ``applied``, a rewrite of ``before`` by ``rule``."""
    old = {node: k for k, node in enumerate(before.rpo())}
    new_order = applied.after.rpo()
    inputs = frozenset(rule.source.inputs)
    matched = sorted({old[node] for p, node in matched_nodes(applied.match) if p not in inputs and node in old})
    fresh, stack = set(), list(applied.builder.targets)
    while stack:
        node = stack.pop()
        if node not in old and node not in fresh:
            fresh.add(node)
            stack.extend(node.inputs)
    made = [k for k, node in enumerate(new_order) if node in fresh]
    return Step("rule", applied.after, rule, tuple(old[o] for o in applied.match.outputs), tuple(matched),
                tuple(made), shared)


def rebuild(kind: str, graph: Graph, wl: Workload, folded: bool = False) -> Workload:
    """The workload after a merge or fold step on ``graph``, whose parameters' values ``wl`` holds."""
    if kind == "merge":
        return to_workload(merge_common(graph), wl, fold_params=False)
    return to_workload(graph, wl, fold_params=folded)
