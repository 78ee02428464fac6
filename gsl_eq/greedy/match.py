"""Matching a rule's source pattern in a computation graph, from patterns to nodes and back.

* Single output: a bijection M from patterns
  to nodes grows while the pattern is walked against its inputs; a pattern in
  M must meet the same node again, a node in M's range cannot be matched twice;
  attribute constraints are checked as soon as a pattern's inputs are matched,
  so they may read every pattern matched before (reverse post-order).
* Variadic tuple fields: a ``pat.Variadic`` matches a tuple by instantiating
  its templates once per field, its index symbol bound to the field number.
* Several outputs (a multi-pattern rule's source): the first output is found by
  scanning the graph; each further one by a depth-first search over candidate
  (pattern, node) pairs pushed forward from the pairs already matched
  (``_push_successors``), backing M up before each try and restoring it on
  failure.
* Variadic outputs: like several outputs, with a fresh template instance per
  try, until a round finds no new output; at least ``min_len`` instances.
* Finally no matched node other than an input or an output may have a
  successor outside the match: the rewrite removes those nodes, and another reader would
  lose its input.

Templates are not copied: a template's node in instance k is kept in that
instance's own table, shared patterns in the main one.

A matcher can record why attempts fail (``failures``, for
:mod:`gsl_eq.greedy.explain`); messages are only formatted when it does.
"""

from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterator, Mapping, Sequence

import numpy as np

from ..frontend import Subst, spec
from ..frontend import attr as A
from ..frontend.errors import EvaluationError
from ..frontend.evaluation import Env, evaluate, meets, node_attr, satisfies
from ..frontend.pat import Alt, Call, Cond, Const, GetItem, OpWithTrait, Pattern, Tuple, Variable, Variadic, Wildcard
from ..graph import Graph, Kind, Node

Instance = dict  # template pattern -> node, for one instance of a variadic


@dataclass
class Match:
    """M: what each source pattern matched, plus the choices made on the way."""

    nodes: dict[Pattern, Node] = field(default_factory=dict)
    instances: dict[Variadic, list[Instance]] = field(default_factory=dict)
    used: set[Node] = field(default_factory=set)
    # Each op-with-trait stands for one op with one set of attributes: the first call it matched.
    trait_ops: dict[OpWithTrait, Node] = field(default_factory=dict)
    alt_choice: dict[Alt, int] = field(default_factory=dict)
    outputs: list[Node] = field(default_factory=list)

    def copy(self) -> "Match":
        return Match(
            dict(self.nodes),
            {v: [dict(i) for i in runs] for v, runs in self.instances.items()},
            set(self.used),
            dict(self.trait_ops),
            dict(self.alt_choice),
            list(self.outputs),
        )

    def env(self, scope: "Scope") -> Env:
        nodes: Mapping[Pattern, Node] = self.nodes if scope.instance is None else ChainMap(scope.instance, self.nodes)
        return Env(nodes, scope.symbols, self.instances)


@dataclass(frozen=True)
class Failure:
    """Where and why a match attempt stopped: the source pattern and graph node it was at (either
    may be None), the reason, and ``depth``, how many patterns were matched by then."""

    pattern: Pattern | None
    node: Node | None
    reason: str
    depth: int


@dataclass(frozen=True)
class Scope:
    """Where a pattern is matched: inside one instance of a variadic, with bound symbols."""

    instance: Instance | None = None
    templates: frozenset[Pattern] = frozenset()
    symbols: Mapping[A.Symbol, Any] = field(default_factory=dict)

    def table(self, p: Pattern, m: Match) -> dict[Pattern, Node]:
        return self.instance if self.instance is not None and p in self.templates else m.nodes

    def enter(self, v: Variadic, instance: Instance, k: int) -> "Scope":
        symbols = {**self.symbols, v.index: k} if v.index is not None else self.symbols
        return Scope(instance, frozenset(v.templates), symbols)


class Matcher:
    """Finds non-overlapping matches of one rule in one graph, in reverse post-order.

    With ``shared_inner`` a match's inner nodes may have readers outside it (condition 4 is not
    asked): its rewrite replaces only its outputs and leaves the inner nodes to those readers, as
    an e-graph keeps them. A proof's steps replay saturate mode's results so (:mod:`gsl_eq.proof`).
    """

    def __init__(self, rule: Subst, graph: Graph, shared_inner: bool = False):
        self.rule = rule
        self.graph = graph
        self.succ = graph.successors()
        self.graph_outputs = set(graph.outputs)
        self.inputs = frozenset(rule.source.inputs)
        self.consumed: set[Node] = set()  # non-input nodes of earlier matches
        self.m = Match()
        self.shared_inner = shared_inner
        #: When a list, every failed attempt is recorded in it (see :class:`Failure`).
        self.failures: list[Failure] | None = None

    def _fail(self, p: Pattern | None, e: Node | None, reason: str, *details: Any) -> bool:
        """Record why matching ``p`` against ``e`` failed (if recording); always False."""
        if self.failures is not None:
            depth = sum(1 for _ in matched_nodes(self.m))
            self.failures.append(Failure(p, e, reason.format(*details), depth))
        return False

    # --- search -------------------------------------------------------------------
    def matches(self, accept: Callable[[Match], bool]) -> Iterator[Match]:
        """Every match ``accept`` takes, none overlapping another but at its inputs."""
        self.rule.require_connected()
        first = self.first_output()
        for node in self.graph.rpo():
            if node in self.consumed or not may_match(first, node):
                continue
            m = self.match_at(node, first)
            if m is not None and accept(m):
                self.consumed.update(n for p, n in matched_nodes(m) if p not in self.inputs)
                yield m

    def first_output(self) -> Pattern:
        """The source pattern a match starts from: the first output (a variadic's first field)."""
        return first_output(self.rule)

    def match_at(self, node: Node, first: Pattern | None = None, group: Sequence[Node] | None = None) -> Match | None:
        """The match whose first source output is ``node``, if there is one; with ``group`` (``node``
        first), a variadic source's match whose outputs are those nodes, in that order (an e-graph
        merges groups of fixed sizes)."""
        self.rule.require_connected()
        first = first or self.first_output()
        self.m = Match()
        source_out = self.rule.source.outputs[0]
        if isinstance(source_out, Variadic):
            return self._match_variadic_outputs(source_out, node, group)
        if not self.match(first, node, Scope()):
            return None
        self.m.outputs.append(node)
        for k, out in enumerate(self.rule.source.outputs[1:], 1):
            if not self._search_output(out, Scope()):
                self._fail(out, None, "no node for source output {} among the successors of the nodes matched", k)
                return None
        return self.m if self._guarded() and self._closed() else None

    def match_outputs(self, nodes: Sequence[Node]) -> Match | None:
        """The match whose source outputs are ``nodes``, in order, if there is one: the whole
        match is given, so the source need not be connected (saturate mode pairs e-classes)."""
        if self.rule.variadic or len(nodes) != len(self.rule.source.outputs):
            raise ValueError(f"rule {self.rule.name}: match_outputs takes one node per (non-variadic) source output")
        self.m = Match()
        for out, node in zip(self.rule.source.outputs, nodes):
            if not self.match(out, node, Scope()):
                return None
            self.m.outputs.append(node)
        return self.m if self._guarded() and self._closed() else None

    def _search_output(self, target: Pattern, scope: Scope, among: Collection[Node] | None = None) -> bool:
        """Find ``target``'s node (one ``among`` those, where given) from the pairs matched so far
        (depth-first over candidate pairs)."""
        stack: list[tuple[Pattern, Node]] = []
        for p, node in list(self._pairs(scope)):
            self._push_successors(p, node, stack, scope)
        tried: set[tuple[Pattern, Node]] = set()
        while stack:
            p, node = stack.pop()
            if (p, node) in tried:
                continue
            tried.add((p, node))
            if p is not target:
                self._push_successors(p, node, stack, scope)
                continue
            if among is not None and node not in among:
                continue
            if self._attempt(lambda: self.match(p, node, scope), scope):
                self.m.outputs.append(scope.table(p, self.m)[p])
                return True
        return False

    def _attempt(self, try_match: Callable[[], bool], scope: Scope) -> bool:
        """Run one match attempt; on failure restore M (and the open instance) as they were."""
        backup = self.m.copy()
        open_instance = dict(scope.instance) if scope.instance is not None else None
        if try_match():
            return True
        self.m = backup
        if scope.instance is not None:
            scope.instance.clear()
            scope.instance.update(open_instance)
        return False

    def _pairs(self, scope: Scope) -> Iterator[tuple[Pattern, Node]]:
        yield from self.m.nodes.items()
        if scope.instance is not None:
            yield from scope.instance.items()

    def _push_successors(self, p: Pattern, node: Node, stack: list, scope: Scope) -> None:
        """PushSucc: p's first unmatched successor, paired with node's corresponding successor(s)."""
        succ_p = self._pattern_successors(p, scope)
        table = scope.table
        pos = next((i for i, s in enumerate(succ_p) if s not in table(s, self.m)), None)
        if pos is None:
            return
        nxt = succ_p[pos]
        free = [s for s in self.succ.get(node, ()) if s not in self.m.used]
        if p in self.inputs or scope.instance is not None:
            stack.extend((nxt, s) for s in reversed(free))
        else:
            graph_succ = self.succ.get(node, ())
            if pos < len(graph_succ) and graph_succ[pos] not in self.m.used:
                stack.append((nxt, graph_succ[pos]))

    def _pattern_successors(self, p: Pattern, scope: Scope) -> tuple[Pattern, ...]:
        succ = self.rule.source.succ.get(p, ())
        if scope.instance is not None:  # inside a fresh instance only its templates are new
            return tuple(s for s in succ if s in scope.templates)
        return tuple(s for s in succ if not isinstance(s, Variadic))

    def _match_variadic_outputs(self, v: Variadic, node: Node, group: Sequence[Node] | None) -> Match | None:
        runs: list[Instance] = []
        if v.first:
            if not self.match(v.first[v.templates.index(v.field)], node, Scope().enter(v, {}, 0)):
                return None
            runs.append({t: self.m.nodes[f] for t, f in zip(v.templates, v.first) if f in self.m.nodes})
        else:
            first: Instance = {}
            if not self.match(v.field, node, Scope().enter(v, first, 0)):
                return None
            runs.append(first)
        self.m.outputs.append(node)
        self.m.instances[v] = runs
        while group is None or len(runs) < len(group):
            instance: Instance = {}
            wanted = None if group is None else (group[len(runs)],)
            found = self._search_output(v.field, Scope().enter(v, instance, len(runs)), wanted)
            runs = self.m.instances[v]  # a failed attempt restores M from a copy, runs included
            if not found:
                if group is not None:
                    return None
                break
            runs.append(instance)
        if len(runs) < (v.min_len or 1):
            self._fail(v, None, "{} instances of the variadic output found, at least {} needed", len(runs), v.min_len)
            return None
        return self.m if self._guarded() and self._closed() else None

    def _guarded(self) -> bool:
        """The rule's ``where`` guards, over the whole match."""
        for guard in self.rule.where:
            try:
                if bool(self._eval(guard, Scope())):
                    continue
            except EvaluationError as err:
                return self._fail(None, None, "where {!r} cannot be evaluated: {}", guard, err)
            return self._fail(None, None, "where {!r} is false{}", guard, self._operands(guard))
        return True

    def _operands(self, guard: A.AttrExpr) -> str:
        """For a failure message: the values a false comparison compared."""
        if self.failures is None or not isinstance(guard, A.Binary):
            return ""
        try:
            return f": {evaluate(guard.lhs, self.m.env(Scope()))!r} against {evaluate(guard.rhs, self.m.env(Scope()))!r}"
        except EvaluationError:
            return ""

    def _closed(self) -> bool:
        """Condition 4 of f: inner nodes have no successor outside the match, and are not returned."""
        if self.shared_inner:
            return True
        outputs = set(self.m.outputs)
        for p, node in matched_nodes(self.m):
            if p in self.inputs or node in outputs:
                continue
            if node in self.graph_outputs:
                return self._fail(p, node, "condition 4: the inner node is an output of the graph")
            outside = next((s for s in self.succ.get(node, ()) if s not in self.m.used), None)
            if outside is not None:
                return self._fail(p, node, "condition 4: the inner node has a successor outside the match ({})",
                                  _show(outside))
        return True

    # --- one pattern against one node -------------------------------------------------
    def match(self, p: Pattern, e: Node, scope: Scope) -> bool:
        table = scope.table(p, self.m)
        if p in table:
            return table[p] is e or self._fail(p, e, "the pattern already matched {}, here it meets another node", _show(table[p]))
        if isinstance(p, Alt):
            return self._match_alt(p, e, scope)
        if isinstance(p, Cond):
            branch = p.then if self._eval(p.pred, scope) else p.orelse
            if not self.match(branch, e, scope):
                return False
            table[p] = e
            return True
        if e in self.m.used:
            return self._fail(p, e, "the node is already matched by another pattern")
        if e in self.consumed and p not in self.inputs:
            return self._fail(p, e, "the node is part of an earlier match")
        if not self._match_structure(p, e, scope):
            return False
        for name, expr in p.attrs.items():
            if isinstance(p, Variadic):
                continue  # its length is checked where it is matched
            try:
                expected = self._eval(expr, scope)
                actual = node_attr(e, name)
            except (KeyError, EvaluationError) as err:
                return self._fail(p, e, "guard {}={!r} cannot be evaluated: {}", name, expr, err)
            if not meets(actual, expr, expected):
                return self._fail(p, e, "guard {}={!r} is false: expected {!r}, the node has {!r}", name, expr, expected, actual)
        scope.table(p, self.m)[p] = e  # self.m may be a restored copy by now
        self.m.used.add(e)
        return True

    def _match_structure(self, p: Pattern, e: Node, scope: Scope) -> bool:
        if isinstance(p, Wildcard):
            return True
        if isinstance(p, Variable):
            return e.kind is Kind.VAR or self._fail(p, e, "a variable (function parameter) is expected, the node is {}", _show(e))
        if isinstance(p, Const):
            if e.kind is not Kind.CONST:
                return self._fail(p, e, "a constant is expected, the node is {}", _show(e))
            return p.value is None or same_value(e.value, p.value) or self._fail(p, e, "the constant's value differs")
        if isinstance(p, Call):
            if e.kind is not Kind.CALL:
                return self._fail(p, e, "a call is expected, the node is {}", _show(e))
            if len(e.inputs) != len(p.inputs) or not self._same_op(p, e):
                return self._fail(p, e, "{} with {} inputs is expected, the node calls {} with {}",
                                  p.describe().removeprefix("Call "), len(p.inputs), e.op, len(e.inputs))
        elif isinstance(p, Tuple):
            if e.kind is not Kind.TUPLE or len(e.inputs) != len(p.inputs):
                return self._fail(p, e, "a tuple of {} fields is expected, the node is {}", len(p.inputs), _show(e))
        elif isinstance(p, GetItem):
            if e.kind is not Kind.GETITEM:
                return self._fail(p, e, "a tuple item is expected, the node is {}", _show(e))
        elif isinstance(p, Variadic):
            return self._match_variadic_tuple(p, e, scope)
        else:
            return self._fail(p, e, "{} cannot be matched", p.describe())
        return all(self.match(pi, ei, scope) for pi, ei in zip(p.inputs, e.inputs))

    def _same_op(self, p: Call, e: Node) -> bool:
        if isinstance(p.op, str):
            return p.op == e.op
        bound = self.m.trait_ops.get(p.op)
        if bound is not None:
            return bound.op == e.op and bound.attrs == e.attrs
        if not spec.has_trait(e.op, p.op.trait):
            return False
        self.m.trait_ops[p.op] = e
        return True

    def _match_alt(self, p: Alt, e: Node, scope: Scope) -> bool:
        for k, alt in enumerate(p.alts):
            if self._attempt(lambda: self.match(alt, e, scope), scope):
                self.m.alt_choice[p] = k
                scope.table(p, self.m)[p] = e
                return True
        return False

    def _match_variadic_tuple(self, v: Variadic, e: Node, scope: Scope) -> bool:
        if e.kind is not Kind.TUPLE or len(e.inputs) < (v.min_len or 0):
            return self._fail(v, e, "a tuple of at least {} fields is expected, the node is {}", v.min_len or 0, _show(e))
        runs: list[Instance] = []
        for k, item in enumerate(e.inputs):
            if k == 0 and v.first:
                symbols = {**scope.symbols, v.index: 0} if v.index is not None else scope.symbols
                if not self.match(v.first[v.templates.index(v.field)], item, Scope(scope.instance, scope.templates, symbols)):
                    return False
                runs.append({t: self.m.nodes[f] for t, f in zip(v.templates, v.first) if f in self.m.nodes})
                continue
            instance: Instance = {}
            if not self.match(v.field, item, scope.enter(v, instance, k)):
                return False
            runs.append(instance)
        self.m.instances[v] = runs
        if "length" in v.attrs:
            try:
                expected = self._eval(v.attrs["length"], scope)
            except EvaluationError as err:
                return self._fail(v, e, "guard length={!r} cannot be evaluated: {}", v.attrs["length"], err)
            return satisfies(len(runs), expected) or self._fail(
                v, e, "guard length={!r} is false: expected {!r}, the tuple has {}", v.attrs["length"], expected, len(runs))
        return True

    def _eval(self, expr: A.AttrExpr, scope: Scope) -> Any:
        return evaluate(expr, self.m.env(scope))


def _show(node: Node) -> str:
    """A node in a message: its op (or kind) and type."""
    what = node.op if node.kind is Kind.CALL else f"variable {node.name}" if node.kind is Kind.VAR else node.kind.value
    return f"{what}: {node.type}"


def first_output(rule: Subst) -> Pattern:
    """The source pattern a match of ``rule`` starts from: the first output (a variadic's first field)."""
    out = rule.source.outputs[0]
    if isinstance(out, Variadic):
        return out.first[out.templates.index(out.field)] if out.first else out.field
    return out


def may_match(p: Pattern, node: Node) -> bool:
    """A cheap test before a full match: the op of a call pattern."""
    if isinstance(p, Call) and isinstance(p.op, str):
        return node.op == p.op
    return True


def same_value(actual: np.ndarray, expected: np.ndarray) -> bool:
    if np.ndim(expected) == 0 and actual.size == 1:  # a scalar pattern matches a scalar of any rank
        return bool(actual.reshape(()) == expected)
    return actual.shape == np.shape(expected) and bool(np.all(actual == expected))


def matched_nodes(m: Match) -> Iterator[tuple[Pattern, Node]]:
    """Every (source pattern, node) pair of a match, variadic instances included."""
    yield from m.nodes.items()
    for runs in m.instances.values():
        for instance in runs:
            yield from instance.items()
