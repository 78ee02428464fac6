"""Rewriting matched subgraphs through the target pattern, and the greedy drivers.

A match is rewritten by building the target pattern graph (seed 000, "改写"):
source patterns stand for the nodes they matched, target calls become new
nodes whose attributes are evaluated from the match, memoizing the expressions
the rule marked (referenced more than once, no free symbols: "记忆优化").
A match whose target TVM cannot type, or whose outputs would change type, is
left alone.

One pass finds every non-overlapping match in reverse post-order and replaces
them all at once (:meth:`Graph.replace`); passes repeat until none matches.
"""

from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..frontend import Subst
from ..frontend import attr as A
from ..frontend.errors import EvaluationError
from ..frontend.evaluation import Env, Memo, evaluate, node_of
from ..frontend.pat import Call, Cond, Const, GetItem, Instance, Match as MatchPattern, Pattern, Tuple, Variadic
from ..graph import Graph, Node
from ..workload import Workload
from .match import Match, Matcher, Scope

DEFAULT_MAX_PASSES = 64


class RewriteError(Exception):
    """The target of one match cannot be built; the match is skipped."""


class TargetBuilder:
    """Builds the target pattern graph of ``rule`` for one match."""

    def __init__(self, rule: Subst, m: Match):
        self.rule = rule
        self.m = m
        self.built: dict[Pattern, Node] = {}
        self.instances: dict[Variadic, list[dict[Pattern, Node]]] = dict(m.instances)
        self.memo = Memo(rule.memoizable)
        #: The branch each target ``pat.Cond`` took (True: then).
        self.choices: dict[Cond, bool] = {}

    def outputs(self) -> list[Node]:
        outs = self.rule.target.outputs
        if isinstance(outs[0], Variadic):
            return list(self._variadic(outs[0], Scope()).inputs)
        return [self.build(p, Scope()) for p in outs]

    def env(self, scope: Scope) -> Env:
        nodes = ChainMap(self.built, self.m.nodes) if scope.instance is None else ChainMap(scope.instance, self.built, self.m.nodes)
        return Env(nodes, scope.symbols, self.instances)

    def eval(self, expr: A.AttrExpr, scope: Scope) -> Any:
        return evaluate(expr, self.env(scope), self.memo if not scope.symbols else None)

    def build(self, p: Pattern, scope: Scope) -> Node:
        table = scope.instance if scope.instance is not None and p in scope.templates else self.built
        if p in table:
            return table[p]
        if p in self.rule.target.boundary:
            return self.m.nodes[p]
        node = self._make(p, scope)
        table[p] = node
        return node

    def _make(self, p: Pattern, scope: Scope) -> Node:
        if isinstance(p, Instance):
            return node_of(p, self.env(scope), self.memo)
        if isinstance(p, Call):
            inputs = [self.build(i, scope) for i in p.inputs]
            attrs = {name: _plain(self.eval(expr, scope)) for name, expr in p.attrs.items()}
            if isinstance(p.op, str):
                return Node.call(p.op, inputs, attrs)
            bound = self.m.trait_ops[p.op]  # the op and attributes the source matched
            return Node.call(bound.op, inputs, {**bound.attrs, **attrs})
        if isinstance(p, Tuple):
            return Node.tuple([self.build(i, scope) for i in p.inputs])
        if isinstance(p, GetItem):
            return Node.getitem(self.build(p.inputs[0], scope), self.eval(p.attrs["index"], scope))
        if isinstance(p, Const):
            dtype = self.eval(p.attrs["dtype"], scope) if "dtype" in p.attrs else _default_dtype(p.value)
            return Node.const(np.asarray(p.value, dtype=dtype))
        if isinstance(p, Variadic):
            return self._variadic(p, scope)
        if isinstance(p, Cond):
            taken = self.choices[p] = bool(self.eval(p.pred, scope))
            return self.build(p.then if taken else p.orelse, scope)
        if isinstance(p, MatchPattern):
            return self.build(p.targets[self.m.alt_choice[p.alt]], scope)
        raise RewriteError(f"{p!r} cannot be built in a target")

    def _variadic(self, v: Variadic, scope: Scope) -> Node:
        # Variadic target outputs pair up with the source's: as many as were matched.
        length = self.eval(v.attrs["length"], scope) if "length" in v.attrs else len(self.m.outputs)
        runs: list[dict[Pattern, Node]] = []
        self.instances[v] = runs
        fields = []
        for k in range(int(length)):
            instance: dict[Pattern, Node] = {}
            runs.append(instance)
            if k == 0 and v.first:
                fields.append(self.build(v.first[v.templates.index(v.field)], scope))
                instance.update({t: self.built[f] for t, f in zip(v.templates, v.first) if f in self.built})
                continue
            fields.append(self.build(v.field, scope.enter(v, instance, k)))
        return Node.tuple(fields)


def _default_dtype(value: Any) -> str:
    # A Python float in a rule means the model's float32, as everywhere in Relax models.
    dtype = np.asarray(value).dtype
    return "float32" if dtype == np.float64 else "int64" if dtype.kind == "i" else str(dtype)


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def rewrite_once(graph: Graph, rule: Subst) -> tuple[Graph, int]:
    """One pass: replace every non-overlapping match of ``rule``; returns the graph and the count."""
    mapping: dict[Node, Node] = {}

    def accept(m: Match) -> bool:
        try:
            targets = TargetBuilder(rule, m).outputs()
        except (RewriteError, EvaluationError, TypeError, KeyError, IndexError, ValueError):
            return False
        if len(targets) != len(m.outputs) or any(t.type != s.type for s, t in zip(m.outputs, targets)):
            return False
        mapping.update(zip(m.outputs, targets))
        return True

    count = sum(1 for _ in Matcher(rule, graph).matches(accept))
    return (graph.replace(mapping) if mapping else graph), count


def rewrite_graph(graph: Graph, rule: Subst, max_passes: int = DEFAULT_MAX_PASSES) -> tuple[Graph, int, bool]:
    """Apply ``rule`` until no match is left (or ``max_passes`` passes).

    Returns the graph, how many times the rule fired, and whether it stopped
    because nothing matched any more.
    """
    total = 0
    for _ in range(max_passes):
        graph, count = rewrite_once(graph, rule)
        if not count:
            return graph, total, True
        total += count
    return graph, total, False


def to_workload(graph: Graph, wl: Workload, fold_params: bool) -> Workload:
    """The workload of a rewritten graph: parameters no longer read are dropped, then folded if asked."""
    reachable = set(graph.rpo())
    inputs = [v for v in graph.inputs if v.name not in wl.params or v in reachable]
    result = Workload.from_graph(Graph(inputs, graph.outputs, graph.returns_tuple), wl.params)
    return result.fold_params() if fold_params else result


def rewrite(wl: Workload, rule: Subst, fold_params: bool = True, max_passes: int = DEFAULT_MAX_PASSES) -> tuple[Workload, int]:
    """Apply one rule until no match is left; returns the new workload and how often it fired."""
    graph, count, _ = rewrite_graph(wl.graph, rule, max_passes)
    if not count:
        return (wl.fold_params() if fold_params else wl), 0
    return to_workload(graph, wl, fold_params), count


@dataclass
class GreedyResult:
    """What :func:`greedy` did: the workload, rule firings by name, rounds, and whether it converged."""

    workload: Workload
    fired: dict[str, int] = field(default_factory=dict)
    rounds: int = 0
    converged: bool = True


def greedy(
    wl: Workload, rules: Sequence[Subst], fold_params: bool = True, max_rounds: int = 16, max_passes: int = DEFAULT_MAX_PASSES
) -> GreedyResult:
    """Apply ``rules`` in order, each until it no longer matches, repeating the sequence until
    nothing changes (at most ``max_rounds`` times).

    With ``fold_params`` the parameters are folded after every rule that fired, as a
    sequence of ``subst(wl)`` calls would, so a rule can match the parameters
    another rule computed.
    """
    fired = {rule.name: 0 for rule in rules}
    rounds, converged = 0, False
    while rounds < max_rounds:
        rounds += 1
        changed = False
        for rule in rules:
            graph, count, _ = rewrite_graph(wl.graph, rule, max_passes)
            if count:
                wl = to_workload(graph, wl, fold_params)
                fired[rule.name] += count
                changed = True
        if not changed:
            converged = True
            break
    return GreedyResult(wl, fired, rounds, converged)
