"""Rewriting matched subgraphs through the target pattern, and the greedy drivers.

A match is rewritten by building the target pattern graph: source patterns
stand for the nodes they matched, target calls become new nodes whose
attributes are evaluated from the match, memoizing the expressions the rule
marked (referenced more than once, no free symbols: computed once per match).
A match whose target TVM cannot type, or whose outputs would change type, is
left alone.

One pass finds every non-overlapping match in reverse post-order and replaces
them all at once (:meth:`Graph.replace`); passes repeat until none matches. A
:class:`Ledger` given to the drivers follows which rules' rewrites the graph still
holds and counts the matches left alone, for the report.
"""

from __future__ import annotations

import enum
import inspect
import time
from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..frontend import Subst
from ..frontend import attr as A
from ..frontend.errors import EvaluationError
from ..frontend.evaluation import Env, Memo, evaluate, node_of
from ..frontend.pat import Call, Cond, Const, GetItem, Instance, Match as MatchPattern, Pattern, Tuple, Variadic
from ..graph import Graph, Kind, Node
from ..graph.diff import merge_common, structural_key
from ..graph.ops import freeze
from ..run.limits import DEFAULT_NODE_LIMIT, StopReason, check_count, check_seconds
from ..workload import Workload
from .match import Match, Matcher, Scope, matched_nodes

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
        #: The target's output nodes, once :func:`build_target` built them.
        self.targets: list[Node] = []
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
            value = p.value
            if p.fill is not None:
                takes = inspect.signature(p.fill).parameters
                value = np.asarray(p.fill(**{name: self.eval(expr, scope) for name, expr in p.attrs.items()
                                             if name in takes}))
                if "shape" in p.attrs and value.shape != tuple(self.eval(p.attrs["shape"], scope)):
                    raise RewriteError(f"{p!r} computed a value of shape {value.shape}, not the shape it states")
            dtype = self.eval(p.attrs["dtype"], scope) if "dtype" in p.attrs else _default_dtype(value)
            return Node.const(np.asarray(value, dtype=dtype))
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


class Refusal(enum.Enum):
    """Why a match found by the matcher is not rewritten."""

    UNTYPED = "target cannot be typed"
    TYPE_CHANGE = "output type would change"
    CYCLE = "the result would read itself"


@dataclass(frozen=True)
class Rejection:
    """A match left alone: the reason and what TVM or the type check said."""

    reason: Refusal
    detail: str

    def __str__(self) -> str:
        return f"{self.reason.value}: {self.detail}"


def build_target(rule: Subst, m: Match) -> TargetBuilder | Rejection:
    """Build ``rule``'s target for match ``m``; the builder (its ``built`` nodes, outputs in
    ``targets``) or why the match must be left alone. Greedy and saturate mode both decide here.

    Parameters
    ----------
    rule
        The rule.
    m
        A match of its source.

    Returns
    -------
    TargetBuilder or Rejection
        The builder; or a :class:`Rejection`, when the target cannot be built and typed
        (``UNTYPED``) or its outputs' number or types differ from the source's (``TYPE_CHANGE``).
    """
    builder = TargetBuilder(rule, m)
    try:
        builder.targets = builder.outputs()
    except (RewriteError, EvaluationError, TypeError, KeyError, IndexError, ValueError) as err:
        return Rejection(Refusal.UNTYPED, str(err))
    if len(builder.targets) != len(m.outputs):
        return Rejection(Refusal.TYPE_CHANGE, f"{len(m.outputs)} source outputs, {len(builder.targets)} target outputs")
    for k, (s, t) in enumerate(zip(m.outputs, builder.targets)):
        if t.type != s.type:
            return Rejection(Refusal.TYPE_CHANGE, f"output {k} is {s.type} in the source, {t.type} in the target")
    return builder


@dataclass(frozen=True)
class Rewrites:
    """One pass's rewrites, for a proof (:mod:`gsl_eq.proof`): the rule, and each match's source outputs
    by their positions in the reverse post-order of the graph the pass matched in, in the order the pass
    took them. No graph is kept: the proof replays the history to rebuild them."""

    rule: Subst
    outputs: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Rebuilt:
    """A change of the graph that no rule made, for a proof: ``kind`` ``"merge"`` (computations done
    twice merged, :func:`~gsl_eq.graph.diff.merge_common`) or ``"fold"`` (parameters no longer read
    dropped, then parameter computations folded where ``folded``, :func:`to_workload`)."""

    kind: str
    folded: bool = False


class Ledger:
    """What a greedy run's rewrites left in its graph, and which matches it left alone: the report's
    "rules used" and "rejected" come from here.

    ``origins`` maps each node of the current graph a rewrite created to the rules whose rewrites
    created it. :meth:`carry` moves it to the next graph after each change (a pass's replacements,
    the trip through Relax, folding), so a rule whose nodes later rules rewrote away, or that were
    dropped, no longer has any. Folding turns a parameter-only computation into a new parameter:
    the parameter inherits the origins of everything it was computed from, since the rewrite's
    result survives in its value. A rewrite that creates no node (its target is a node it matched,
    ``transpose(transpose(x)) -> x``) only removes nodes, which no later rewrite brings back: its
    rule is in ``removals`` and counts as used.

    ``rejected``: rule name -> reason (:class:`Refusal` value) -> distinct keys refused, a key being
    the matched subgraph's ops, attributes, types and constants (saturate mode counts its keys the
    same way), so a match refused again at every pass counts once.
    """

    def __init__(self, record: bool = False) -> None:
        #: With ``record``: every batch of rewrites and every rebuild of the graph, in order, for a proof.
        self.history: list[Rewrites | Rebuilt] | None = [] if record else None
        self.origins: dict[Node, frozenset[str]] = {}
        self.removals: set[str] = set()
        self.rejected: dict[str, dict[str, int]] = {}
        self._refused: set[tuple[str, tuple[Any, ...]]] = set()

    def used(self) -> set[str]:
        """The rules whose rewrites the current graph holds."""
        return set().union(*self.origins.values(), self.removals)

    def created(self, rule: Subst, graph: set[Node], targets: Sequence[Node]) -> None:
        """Record one rewrite of ``rule``: the nodes under ``targets`` that are not in ``graph``."""
        mark, stack, fresh = frozenset([rule.name]), list(targets), set()
        while stack:
            node = stack.pop()
            if node not in graph and node not in fresh:
                fresh.add(node)
                self.origins[node] = self.origins.get(node, frozenset()) | mark
                stack.extend(node.inputs)
        if not fresh:
            self.removals.add(rule.name)

    def refused(self, rule: Subst, m: Match, rejection: Rejection) -> None:
        """Count ``rejection`` of match ``m``, once per rule, reason and key."""
        key = (rule.name, rejection.reason.value, tuple((p, _form(n)) for p, n in matched_nodes(m)))
        if key not in self._refused:
            self._refused.add(key)
            reasons = self.rejected.setdefault(rule.name, {})
            reasons[rejection.reason.value] = reasons.get(rejection.reason.value, 0) + 1

    def carry(self, old: Graph, new: Graph, mapping: Mapping[Node, Node] | None = None) -> None:
        """Move ``origins`` from ``old``'s nodes to ``new``'s, ``new`` being ``old.replace(mapping)``
        or ``old`` after a trip through Relax or folding: outputs pair up, then each pair's inputs
        in order (a replaced node pairs through its replacement). A variable of ``new`` paired with
        a computation of ``old`` is that computation folded."""
        mapping = mapping or {}
        olds, news = old.outputs, new.outputs
        if len(olds) != len(news) and len(olds) == 1 and olds[0].kind is Kind.TUPLE:
            olds = olds[0].inputs  # a returned tuple node becomes the returned values
        origins: dict[Node, frozenset[str]] = {}
        stack, seen = list(zip(olds, news)), set()
        while stack:
            o, n = stack.pop()
            while o in mapping:
                o = mapping[o]
            if (o, n) in seen:
                continue
            seen.add((o, n))
            if n.kind is Kind.VAR and o.kind is not Kind.VAR:
                marks = self._computed_from(o)
            else:
                marks = self.origins.get(o, frozenset())
                stack.extend(zip(o.inputs, n.inputs))
            if marks:
                origins[n] = origins.get(n, frozenset()) | marks
        self.origins = origins

    def _computed_from(self, node: Node) -> frozenset[str]:
        """The origins of ``node`` and of everything it reads."""
        marks: set[str] = set()
        stack, seen = [node], set()
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                marks |= self.origins.get(n, frozenset())
                stack.extend(n.inputs)
        return frozenset(marks)


def _form(node: Node) -> tuple[Any, ...]:
    """What a refused match's key holds of one node: kind, op, attributes, types, a constant's value."""
    value = None if node.value is None else (node.value.dtype.str, node.value.shape, node.value.tobytes())
    return node.kind, node.op, freeze(node.attrs), node.type, tuple(i.type for i in node.inputs), value


class _Stop(Exception):
    """A limit ended the pass: the matches taken so far are applied."""


def rewrite_once(
    graph: Graph, rule: Subst, room: int | None = None, deadline: float | None = None, ledger: Ledger | None = None
) -> tuple[Graph, int, StopReason | None]:
    """One pass: replace every non-overlapping match of ``rule``.

    ``room`` caps how many nodes the pass may add to the graph (target nodes built
    minus matched nodes replaced; a match that adds none is always taken);
    ``deadline`` (a ``time.perf_counter()`` value) ends it. The matches taken before
    either is reached are applied. Returns the graph, the count, and the limit that
    ended the pass early (None if none did). A ``ledger`` records what the rewrites
    created and the matches refused.

    Parameters
    ----------
    graph
        The graph; it is left as it is.
    rule
        The rule.
    room
        Nodes the pass may add at the most; None: no limit.
    deadline
        A ``time.perf_counter()`` time; None: none.
    ledger
        A :class:`Ledger` to record the rewrites in; None: none.
    """
    mapping: dict[Node, Node] = {}
    inputs = frozenset(rule.source.inputs)
    existing = set(graph.rpo()) if ledger is not None else set()
    # a single output's inputs come before it, so only a source of several outputs (or a variadic one) can read itself
    several = rule.variadic or len(rule.source.outputs) > 1
    position = {node: k for k, node in enumerate(graph.rpo())} if several else {}
    read_by: dict[Node, list[Node]] = {}  # a taken match's output -> what its target reads: the match's inputs
    added = 0
    taken: list[tuple[Node, ...]] = []

    def reads_itself(m: Match, bound: list[Node]) -> bool:
        """Whether ``m``'s target, reading ``bound``, would read one of ``m``'s outputs, through
        the graph and the targets of the matches taken before: one output of a multi-output
        source feeding another's input (an RNN's two steps), or two matches each feeding the other."""
        outputs = set(m.outputs)
        first = min(position[o] for o in outputs)  # an ancestor comes before what it feeds
        stack, seen = list(bound), set()
        while stack:
            node = stack.pop()
            if node in outputs:
                return True
            if node not in seen and position.get(node, -1) >= first:
                seen.add(node)
                stack.extend(read_by.get(node, node.inputs))
        return False

    def accept(m: Match) -> bool:
        nonlocal added
        if deadline is not None and time.perf_counter() > deadline:
            raise _Stop(StopReason.TIME_LIMIT)
        builder = build_target(rule, m)
        bound = [node for p, node in matched_nodes(m) if p in inputs] if several else []
        if several and not isinstance(builder, Rejection) and reads_itself(m, bound):
            builder = Rejection(Refusal.CYCLE, "an input of the match is computed from one of its outputs")
        if isinstance(builder, Rejection):
            if ledger is not None:
                ledger.refused(rule, m, builder)
            return False
        growth = len(builder.built) - len({node for p, node in matched_nodes(m) if p not in inputs})
        if room is not None and growth > 0 and added + growth > room:
            raise _Stop(StopReason.NODE_LIMIT)
        added += growth
        mapping.update(zip(m.outputs, builder.targets))
        if several:
            read_by.update((output, bound) for output in m.outputs)
        if ledger is not None:
            ledger.created(rule, existing, builder.targets)
            taken.append(tuple(m.outputs))
        return True

    count, stopped = 0, None
    try:
        for _ in Matcher(rule, graph).matches(accept):
            count += 1
    except _Stop as stop:
        stopped = stop.args[0]
    if not mapping:
        return graph, count, stopped
    rewritten = graph.replace(mapping)
    if ledger is not None:
        ledger.carry(graph, rewritten, mapping)
        if ledger.history is not None:
            position = {node: k for k, node in enumerate(graph.rpo())}
            ledger.history.append(Rewrites(rule, tuple(tuple(position[o] for o in outputs) for outputs in taken)))
    return rewritten, count, stopped


def rewrite_graph(
    graph: Graph, rule: Subst, max_passes: int = DEFAULT_MAX_PASSES, node_limit: int | None = None,
    deadline: float | None = None, ledger: Ledger | None = None,
) -> tuple[Graph, int, int, StopReason]:
    """Apply ``rule`` pass after pass until no match is left, or a limit: ``max_passes``
    passes (iteration limit), a graph of ``node_limit`` nodes, ``deadline`` (a
    ``time.perf_counter()`` value), or a pass giving back a graph an earlier one gave (the
    rule's ``cycle``: x + y -> y + x undoes itself every second pass). A ``ledger`` follows the
    rewrites (:class:`Ledger`).

    Returns the graph, how many times the rule fired, the passes run, and why it
    stopped (``saturated``: nothing matched any more).

    Parameters
    ----------
    graph
        The graph; it is left as it is.
    rule
        The rule.
    max_passes
        Passes at the most.
    node_limit
        Nodes the graph may grow to; None: no limit.
    deadline
        A ``time.perf_counter()`` time; None: none.
    ledger
        A :class:`Ledger` to follow the rewrites in; None: none.

    Examples
    --------
    ::

        graph, fired, passes, why = rewrite_graph(wl.graph, rule, node_limit=10_000)
        wl2 = to_workload(graph, wl, fold_params=True)
    """
    total, start = 0, graph
    seen: set[int] = set()  # the graphs' keys, once a pass has changed the graph: most rules match nothing
    for passes in range(max_passes):
        if deadline is not None and time.perf_counter() > deadline:
            return graph, total, passes, StopReason.TIME_LIMIT
        room = None if node_limit is None else node_limit - len(graph)
        graph, count, stopped = rewrite_once(graph, rule, room, deadline, ledger)
        total += count
        if stopped is not None:
            return graph, total, passes + 1, stopped
        if not count:
            return graph, total, passes + 1, StopReason.SATURATED
        if not seen:
            seen.add(structural_key(start))
        key = structural_key(graph)
        if key in seen:
            return graph, total, passes + 1, StopReason.CYCLE
        seen.add(key)
    return graph, total, max_passes, StopReason.ITERATION_LIMIT


def to_workload(graph: Graph, wl: Workload, fold_params: bool, deadline: float | None = None) -> Workload:
    """The workload of a rewritten graph: parameters no longer read are dropped, then folded if
    asked, and if the fold is predicted to end before ``deadline`` (:meth:`~gsl_eq.workload.Workload.predicted_fold_seconds`).

    Parameters
    ----------
    graph
        The rewritten graph.
    wl
        The workload it was rewritten from: its parameters' values.
    fold_params
        Fold the parameters (:meth:`~gsl_eq.workload.Workload.fold_params`).
    deadline
        A ``time.perf_counter()`` time a fold must be predicted to end by; None: none.
    """
    reachable = set(graph.rpo())
    inputs = [v for v in graph.inputs if v.name not in wl.params or v in reachable]
    result = Workload.from_graph(Graph(inputs, graph.outputs, graph.returns_tuple), wl.params)
    result.derived = wl.derived  # the parameters its folds made, as computed from the input's
    if not fold_params or (deadline is not None and time.perf_counter() + result.predicted_fold_seconds() > deadline):
        return result
    return result.fold_params()


def rewrite(
    wl: Workload, rule: Subst, fold_params: bool = True, max_passes: int = DEFAULT_MAX_PASSES,
    node_limit: int = DEFAULT_NODE_LIMIT,
) -> tuple[Workload, int]:
    """Apply one rule until no match is left (at most ``max_passes`` passes, never growing the
    graph past ``node_limit`` nodes); returns the new workload and how often it fired.

    Parameters
    ----------
    wl
        The workload to rewrite; it is left as it is.
    rule
        The rule.
    fold_params
        Fold the parameters afterwards (:meth:`~gsl_eq.workload.Workload.fold_params`).
    max_passes
        Passes at the most.
    node_limit
        Nodes the graph may grow to.
    """
    graph, count, _, _ = rewrite_graph(wl.graph, rule, max_passes, node_limit)
    if not count:
        return (wl.fold_params() if fold_params else wl), 0
    return to_workload(graph, wl, fold_params), count


@dataclass
class GreedyResult:
    """What :func:`greedy` did: the workload; rewrites done per rule (``fired``, whether or not they
    survive); the rules whose rewrites ``workload`` holds (``used``, in rule order; see :class:`Ledger`);
    matches left alone per rule and reason (``rejected``, distinct keys); rounds, passes, and why it stopped.
    ``origins``: the nodes of ``workload``'s graph that rewrites made, each with the rules that made it.

    Attributes
    ----------
    workload
        The rewritten workload.
    fired
        Rewrites done, by rule name, whether or not they survive.
    used
        The rules whose rewrites ``workload`` holds, in rule order.
    rejected
        Matches left alone: rule name -> reason (a :class:`Refusal` value) -> distinct keys.
    rounds
        Rounds run.
    passes
        Passes run, all rules together.
    stop_reason
        Why it stopped (:class:`~gsl_eq.run.limits.StopReason`).
    origins
        The nodes of ``workload``'s graph that rewrites made, each with the rules that made it.
    """

    workload: Workload
    fired: dict[str, int] = field(default_factory=dict)
    used: list[str] = field(default_factory=list)
    rejected: dict[str, dict[str, int]] = field(default_factory=dict)
    rounds: int = 0
    passes: int = 0
    stop_reason: StopReason = StopReason.SATURATED
    origins: dict[Node, frozenset[str]] = field(default_factory=dict)
    #: With ``record``: the passes' rewrites and the graph's rebuilds, in order (:class:`Rewrites`,
    #: :class:`Rebuilt`), from ``wl``'s graph to ``workload``'s; :func:`gsl_eq.proof.of_greedy` makes them a proof.
    history: list[Rewrites | Rebuilt] | None = None

    @property
    def converged(self) -> bool:
        """Whether no rule matched any more (rather than a limit stopping it)."""
        return self.stop_reason is StopReason.SATURATED


#: Seconds per node a rewritten graph takes to become a workload (its Relax module built and typed,
#: unfolded): a little above what it was measured to take, as a margin for the pass's growth.
CONVERT_SECONDS_PER_NODE = 60e-6


def greedy(
    wl: Workload,
    rules: Sequence[Subst],
    fold_params: bool = True,
    max_rounds: int = 16,
    max_passes: int = DEFAULT_MAX_PASSES,
    node_limit: int | None = DEFAULT_NODE_LIMIT,
    time_limit: float | None = None,
    record: bool = False,
) -> GreedyResult:
    """Apply ``rules`` in order, each until it no longer matches, repeating the sequence (a
    round) until nothing changes. Computations done twice are merged first
    (:func:`~gsl_eq.graph.diff.merge_common`), as saturate mode's e-graph merges them.

    With ``fold_params`` the parameters are folded after every rule that fired, as a
    sequence of ``subst(wl)`` calls would, so a rule can match the parameters
    another rule computed.

    The limits are saturate mode's: at most ``max_rounds`` rounds (iteration limit; a
    rule runs at most ``max_passes`` passes a round, then the next rule has its turn);
    a pass never grows the graph past ``node_limit`` nodes (it applies the matches
    that fit, then greedy stops); no pass starts and no match is taken after
    ``time_limit`` seconds less the time the graph takes to become a workload
    (:data:`CONVERT_SECONDS_PER_NODE`), nor is a fold predicted to end past it (:meth:`~gsl_eq.workload.Workload.predicted_fold_seconds`):
    the graph of such a rule is returned, or rewritten further, with its parameter computations
    unfolded (:meth:`~gsl_eq.workload.Workload.fold_params` folds them: ``optimize`` does, as its
    final build, for a result it returns, if the fold is predicted to end within its time limit).
    ``stop_reason`` says which limit stopped it, ``saturated`` when no rule
    matched any more, or ``cycle`` when a round ended on a graph the input or an earlier
    round was (rules that undo one another; a rule's passes that come back to a graph an
    earlier pass gave end its turn, not the round).

    Parameters
    ----------
    wl
        The workload to rewrite; it is left as it is.
    rules
        The rules, applied in this order.
    fold_params
        Fold the parameters after every rule that fired.
    max_rounds
        Rounds at the most (saturate mode's iteration limit).
    max_passes
        Passes of one rule in a round at the most.
    node_limit
        Nodes the graph may grow to; None: no limit.
    time_limit
        Seconds; None: no limit.
    record
        Keep every rewrite, in order, for a proof (``history``).

    Returns
    -------
    GreedyResult
        The workload, the rules that fired and how often, and ``stop_reason``.

    Examples
    --------
    ::

        result = greedy(wl, [expanding_rule], node_limit=10_000, time_limit=5)
        result.stop_reason   # StopReason.NODE_LIMIT
    """
    max_rounds, max_passes = check_count("max_rounds", max_rounds), check_count("max_passes", max_passes)
    node_limit = None if node_limit is None else check_count("node_limit", node_limit)
    for rule in rules:  # before any work
        rule.require_connected()
    deadline = None if time_limit is None else time.perf_counter() + check_seconds("time_limit", time_limit)
    merged = merge_common(wl.graph)
    result = GreedyResult(wl if merged is wl.graph else to_workload(merged, wl, False), {rule.name: 0 for rule in rules})
    ledger = Ledger(record)
    if record and merged is not wl.graph:
        ledger.history.append(Rebuilt("merge"))
    reason = None
    seen = {structural_key(merged)}  # the graph at the end of each round
    while reason is None:
        if result.rounds == max_rounds:
            reason = StopReason.ITERATION_LIMIT
            break
        result.rounds += 1
        changed = False
        for rule in rules:
            graph = result.workload.graph
            # the passes leave the time the rewritten graph takes to become a workload
            passes_deadline = None if deadline is None else deadline - CONVERT_SECONDS_PER_NODE * len(graph)
            graph, count, passes, stopped = rewrite_graph(graph, rule, max_passes, node_limit, passes_deadline, ledger)
            result.passes += passes
            if count:
                result.workload = to_workload(graph, result.workload, fold_params, deadline)
                ledger.carry(graph, result.workload.graph)
                if record:
                    names = {v.name for v in graph.inputs}
                    made = any(v.name not in names for v in result.workload.graph.inputs)
                    ledger.history.append(Rebuilt("fold", folded=made))
                result.fired[rule.name] += count
                changed = True
            if stopped in (StopReason.NODE_LIMIT, StopReason.TIME_LIMIT):
                reason = stopped
                break
        if reason is None and not changed:
            reason = StopReason.SATURATED
        elif reason is None:
            key = structural_key(result.workload.graph)
            reason = StopReason.CYCLE if key in seen else None
            seen.add(key)
    result.stop_reason = reason
    used = ledger.used()
    result.used = [rule.name for rule in rules if rule.name in used]
    result.rejected = ledger.rejected
    result.origins = dict(ledger.origins)
    result.history = ledger.history
    return result
