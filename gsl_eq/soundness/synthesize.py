"""Drawing small concrete graphs that a rule's source matches.

The source pattern graph is instantiated node by node, inputs before their
users (so a guard can read what it needs, as when matching):

* a call's attributes take the value of their constraint when it can be
  evaluated already (``strides=conv1.strides``), else a value drawn from
  :mod:`.domains`; TVM types the call; the call's own constraints (its shape,
  a guard on what came before) and the rule's ``where`` guards that can be
  evaluated by then are checked at once. A call that TVM cannot
  type or that breaks a constraint is drawn again, with fresh leaves, a few
  times; then the call that made its inputs draws again, and so on up, within
  a budget of calls per draw;
* a leaf (wildcard, variable, constant) takes the shape, rank and dtype its
  constraints give and draws the rest close to the values it is combined with;
* a convolution's or a pool's data, when a leaf, takes the one rank TVM types it at
  (:data:`.domains.FIXED_RANKS`), but now and then any;
* a matmul's left operand or a transpose's input, when a leaf (or the first leaf reached from it
  through first inputs), takes its rank by turns (:data:`.domains.LEFT_RANKS`: a matrix, stacks of
  matrices, a vector): each draw the rank with the fewest instances so far, a rank left out once it
  gave none in :data:`.domains.RANK_TRIES` draws (the rule's guards forbid it); a guard
  ``p.shape[-k:] == q.shape[-k:]`` gives a leaf its last ``k`` sizes;
* a variadic takes a drawn number of instances (its ``length`` constraint, or
  ``min_len`` up to a few more), an alternative a drawn branch, a condition the
  branch its predicate picks.

Every draw is then matched by greedy mode's matcher, so an instance is one the
rule really applies to, with every guard evaluated as the executors do.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ..frontend import Subst, spec
from ..frontend import attr as A
from ..frontend.errors import EvaluationError
from ..frontend.evaluation import evaluate, meets, node_attr
from ..frontend.pat import Alt, Call, Cond, Const, GetItem, Pattern, Tuple, Variable, Variadic, Wildcard
from ..graph import Graph, Kind, Node
from ..graph.types import TensorType, TupleType
from ..greedy.match import Match, Matcher, Scope
from . import domains

#: Fresh draws of one call (with its new leaves) before the whole instance is abandoned.
CALL_ATTEMPTS = 24
#: ... fewer for a call nested in another's attempt: its failure may be its inputs' fault, which the
#: enclosing call redraws; retrying the same inputs at every depth would spend the budget at once.
NESTED_ATTEMPTS = 4
#: Calls typed per instance, at most: the budget of one draw.
CALLS_PER_DRAW = 600
#: Instances of a variadic beyond its least number.
EXTRA_INSTANCES = 2


@dataclass
class Instance:
    """A concrete source graph the rule matches: its inputs are the rule's leaves
    (wildcards become runtime inputs ``x*``, variables parameters ``w*``)."""

    graph: Graph
    params: frozenset[str]
    match: Match

    @property
    def size(self) -> int:
        """Elements over every input: what "smallest" means for a counterexample."""
        return sum(math.prod(v.type.shape) for v in self.graph.inputs)

    def shapes(self) -> tuple[tuple[str, tuple[int, ...], str], ...]:
        """Each input's name, shape and dtype."""
        return tuple((v.name, v.type.shape, v.type.dtype) for v in self.graph.inputs)

    def attributes(self) -> list[tuple[str, dict[str, Any]]]:
        """Each call of the instance with the attributes it carries (not its op's defaults)."""
        return [(n.op, dict(n.attrs)) for n in self.graph.rpo() if n.kind is Kind.CALL]

    def lengths(self) -> tuple[int, ...]:
        """Instance counts of the rule's variadics, in order."""
        return tuple(len(runs) for runs in self.match.instances.values())


class _Retry(Exception):
    """This call cannot be completed as drawn; draw it again."""


class _Miss(Exception):
    """This instance cannot be completed; start another."""


class Synthesizer:
    """Draws :class:`Instance` s of ``rule``'s source from ``rng`` (deterministic for a seed)."""

    def __init__(self, rule: Subst, rng: random.Random):
        self.rule = rule
        self.rng = rng
        #: Why draws failed, by reason: what "no instance found" explains.
        self.misses: dict[str, int] = {}
        #: Per rank of the turns (:func:`.domains.rank_turns`): instances found with it and draws
        #: that failed with it.
        self.rank_found: dict[int, int] = {}
        self.rank_failed: dict[int, int] = {}

    def draws(self, tries: int) -> Iterator[Instance]:
        """The instances found in ``tries`` draws."""
        for _ in range(tries):
            instance = self.draw()
            if instance is not None:
                yield instance

    def draw(self) -> Instance | None:
        """One instance, or None when this draw failed (its reason is counted in ``misses``)."""
        self.turn: Node | None = None  # the leaf that took this draw's rank turn
        self.turn_rank: int | None = None  # its rank, once a leaf was offered it
        self.handed: TensorType | None = None
        instance = self._draw()
        if self.turn_rank is not None:
            counts = self.rank_found if instance is not None else self.rank_failed
            counts[self.turn_rank] = counts.get(self.turn_rank, 0) + 1
        return instance

    def _rank(self, ranks: tuple[int, ...]) -> int | None:
        """The rank whose turn it is among ``ranks``: the one with the fewest instances so far (the
        first of them), leaving out a rank that never gave one in ``RANK_TRIES`` draws."""
        open_ = [r for r in ranks if self.rank_found.get(r, 0) or self.rank_failed.get(r, 0) < domains.RANK_TRIES]
        return min(open_, key=lambda r: (self.rank_found.get(r, 0), ranks.index(r)), default=None)

    def _draw(self) -> Instance | None:
        self.m = Match()
        self.leaves: list[Node] = []
        self.names = itertools.count()
        self.budget = CALLS_PER_DRAW
        self.depth = 0  # of nested attempts
        try:
            outputs = self._outputs()
        except (_Miss, _Retry) as miss:
            return self._missed(str(miss.args[0]) if miss.args else "no typable draw")  # a _Retry has no args
        reachable = set(Graph([], outputs).rpo())
        inputs = [leaf for leaf in self.leaves if leaf in reachable]
        graph = Graph(inputs, outputs)
        try:
            matcher = Matcher(self.rule, graph)
            m = matcher.match_at(outputs[0]) if self.rule.variadic else matcher.match_outputs(outputs)
        except (EvaluationError, KeyError, TypeError):
            m = None
        if m is None or set(m.outputs) != set(outputs):
            return self._missed("the matcher refused the draw (a guard)")
        params = frozenset(leaf.name for leaf in inputs if leaf.name.startswith("w"))
        return Instance(graph, params, m)

    def _missed(self, reason: str) -> None:
        self.misses[reason] = self.misses.get(reason, 0) + 1
        return None

    # --- the source's outputs ----------------------------------------------------------
    def _outputs(self) -> list[Node]:
        outs = self.rule.source.outputs
        if isinstance(outs[0], Variadic):
            return list(self._variadic(outs[0], Scope(), (), most=None).inputs)
        return [self.make(p, Scope(), ()) for p in outs]

    # --- one pattern -------------------------------------------------------------------
    def make(self, p: Pattern, scope: Scope, hints: tuple[TensorType, ...], proposal: TensorType | None = None,
             always: bool = False) -> Node:
        """The node of ``p`` in this instance, made now if it is not yet; a leaf is drawn close to
        ``hints`` or, most of the time (``always``: every time), takes the type ``proposal`` its
        user's op suggests."""
        table = scope.table(p, self.m)
        if p in table:
            return table[p]
        if proposal is not None and isinstance(p, (Wildcard, Variable)) and (always or self.rng.random() < 0.9):
            node = self._leaf(p, scope, (proposal,), "w" if isinstance(p, Variable) else "x", proposal)
        else:
            node = self._make(p, scope, hints)
        scope.table(p, self.m)[p] = node  # self.m may be a restored copy by now
        return node

    def _make(self, p: Pattern, scope: Scope, hints: tuple[TensorType, ...]) -> Node:
        if isinstance(p, (Wildcard, Variable)):
            return self._leaf(p, scope, hints, "w" if isinstance(p, Variable) else "x")
        if isinstance(p, Const):
            return self._const(p, scope, hints)
        if isinstance(p, Call):
            return self._attempts(lambda: self._call(p, scope, hints), scope)
        if isinstance(p, Tuple):
            return Node.tuple(self._inputs(p.inputs, scope, hints))
        if isinstance(p, GetItem):
            return self._attempts(lambda: self._getitem(p, scope, hints), scope)
        if isinstance(p, Alt):
            k = self.rng.randrange(len(p.alts))
            self.m.alt_choice[p] = k
            return self.make(p.alts[k], scope, hints)
        if isinstance(p, Cond):
            taken = self._value(p.pred, scope)
            if taken is _UNKNOWN:
                taken = self.rng.random() < 0.5
            return self.make(p.then if taken else p.orelse, scope, hints)
        if isinstance(p, Variadic):
            return self._variadic(p, scope, hints, most=4)
        raise _Miss(f"{p.describe()} cannot be drawn")

    def _inputs(self, patterns: tuple[Pattern, ...], scope: Scope, hints: tuple[TensorType, ...],
                op: str | None = None) -> list[Node]:
        """Make ``patterns`` in order, each leaf drawn to fit the inputs of ``op`` made before it.

        The draw's first leaf that is a matmul's left operand, or reached from one through first
        inputs (``matmul(add(x, ...), w)``), takes the rank whose turn this draw is
        (:func:`.domains.first_input_type`); the like operands made after it are drawn as usual."""
        handed, self.handed = self.handed, None  # the turn the user of this call hands down to it
        try:
            made: list[Node] = []
            for k, q in enumerate(patterns):
                types = tuple(t for n in made for t in _tensors(n.type))
                turn = None
                if k == 0 and (op is not None or handed is not None) and self._turn_open():
                    ranks = domains.rank_turns(op) if op is not None else ()
                    if ranks and self.turn_rank is None:
                        self.turn_rank = self._rank(ranks)
                    if ranks and self.turn_rank is not None:  # nothing made before it: close to the hints
                        turn = domains.first_input_type(self.turn_rank, hints, self.rng)
                    proposal = turn = turn or handed
                elif op is None:
                    proposal = None
                else:
                    proposal = domains.input_type(op, k, types, self.rng)
                if proposal is None and k == 0 and op is not None:
                    proposal = domains.fixed_rank_type(op, hints, self.rng)
                near = types[-1:] if types and self.rng.random() < 0.5 else types
                if turn is None:
                    made.append(self.make(q, scope, near or hints, proposal))
                elif isinstance(q, (Wildcard, Variable)) and q not in scope.table(q, self.m):
                    made.append(self.make(q, scope, hints, turn, always=True))
                    self.turn = made[-1]
                else:  # not a new leaf: its first leaf takes the turn, its others are drawn close to it
                    self.handed = turn
                    made.append(self.make(q, scope, (turn,)))
                    self.handed = None
            return made
        finally:
            self.handed = handed

    def _turn_open(self) -> bool:
        """Whether no leaf of this draw (as it stands after retries) has taken the rank turn yet."""
        return self.turn is None or all(leaf is not self.turn for leaf in self.leaves)

    def _call(self, p: Call, scope: Scope, hints: tuple[TensorType, ...]) -> Node:
        self.budget -= 1
        if self.budget < 0:
            raise _Miss("no typable draw")
        bound = self.m.trait_ops.get(p.op) if not isinstance(p.op, str) else None
        op = p.op if isinstance(p.op, str) else bound.op if bound is not None else self.rng.choice(spec.ops_with_trait(p.op.trait))
        inputs = self._inputs(p.inputs, scope, hints, op)
        types = [t for n in inputs for t in _tensors(n.type)]
        sig = spec.signature(op)
        if bound is not None:
            attrs = dict(bound.attrs)
        else:
            fixed = {name: value for name, expr in p.attrs.items() if name in sig.attrs
                     for value in [self._value(expr, scope)] if _complete(value)}
            free = {name: d for name, d in sig.attrs.items() if name not in fixed}
            try:
                attrs = {**domains.op_attrs(op, free, self.rng, types), **fixed}
            except LookupError as err:
                raise _Miss(str(err)) from None
        try:
            node = Node.call(op, inputs, attrs)
        except (TypeError, ValueError):
            raise _Retry from None
        if any(d <= 0 for t in _tensors(node.type) for d in t.shape):
            raise _Retry  # an empty result (a kernel larger than its input) is no test
        self._check(p, node, scope)
        if not isinstance(p.op, str) and bound is None:
            self.m.trait_ops[p.op] = node
        return node

    def _getitem(self, p: GetItem, scope: Scope, hints: tuple[TensorType, ...]) -> Node:
        tup = self.make(p.inputs[0], scope, hints)
        if not isinstance(tup.type, TupleType):
            raise _Retry
        index = self._value(p.attrs["index"], scope)
        if index is _UNKNOWN or index is None:
            index = self.rng.randrange(len(tup.type.fields))
        try:
            return Node.getitem(tup, int(index))
        except (TypeError, IndexError, ValueError):
            raise _Retry from None

    def _leaf(self, p: Pattern, scope: Scope, hints: tuple[TensorType, ...], prefix: str,
              proposal: TensorType | None = None) -> Node:
        constraint = {name: self._value(expr, scope) for name, expr in p.attrs.items()}
        constraint.update((name, v) for name, v in self._implied(p) if name not in constraint)
        known = {name: v for name, v in constraint.items() if v is not _UNKNOWN and v is not None}
        shape, ndim, dtype = known.get("shape"), known.get("ndim"), known.get("dtype")
        if not (shape is None or isinstance(shape, (tuple, list))):
            raise _Retry
        if shape is None and "trailing" in known:  # the last axes fixed, the rest not
            trailing, other = known["trailing"]
            # the leading axes: the proposal's, else the other's (all of its shape) or none
            lead = proposal.shape[:-len(trailing)] if proposal is not None and len(proposal.shape) >= len(trailing) \
                else other[:-len(trailing)] if other is not None and self.rng.random() < 0.5 else ()
            if ndim is not None and len(lead) + len(trailing) != ndim:
                lead = (None,) * max(0, ndim - len(trailing))
            shape, proposal = (*lead, *trailing), None
        if proposal is not None and shape is None and ndim in (None, len(proposal.shape)):
            ty = TensorType(proposal.shape, proposal.dtype if dtype is None else str(dtype))
        else:
            ty = domains.leaf_type(self.rng, hints, ndim=ndim, dtype=None if dtype is None else str(dtype),
                                   shape=None if shape is None else tuple(shape))
        node = Node.var(f"{prefix}{next(self.names)}", ty)
        self.leaves.append(node)
        return node

    def _const(self, p: Const, scope: Scope, hints: tuple[TensorType, ...]) -> Node:
        dtype = self._value(p.attrs["dtype"], scope) if "dtype" in p.attrs else _UNKNOWN
        dtype = str(dtype) if dtype not in (_UNKNOWN, None) else hints[0].dtype if hints else "float32"
        if p.value is not None:
            return Node.const(np.asarray(p.value, dtype=dtype))
        ty = domains.leaf_type(self.rng, hints, dtype=dtype)
        rng = np.random.default_rng(self.rng.randrange(2**32))
        return Node.const(rng.uniform(0.5, 1.5, ty.shape).astype(ty.dtype))

    def _variadic(self, v: Variadic, scope: Scope, hints: tuple[TensorType, ...], most: int | None) -> Node:
        least = max(v.min_len or 0, 1)
        length = self._value(v.attrs["length"], scope) if "length" in v.attrs else _UNKNOWN
        n = int(length) if isinstance(length, (int, np.integer)) else self.rng.randint(least, least + EXTRA_INSTANCES)
        runs: list[dict[Pattern, Node]] = []
        self.m.instances[v] = runs
        fields: list[Node] = []
        for k in range(n):
            near = tuple(t for f in fields for t in _tensors(f.type)) or hints
            if k == 0 and v.first:
                symbols = {**scope.symbols, v.index: 0} if v.index is not None else scope.symbols
                first = v.first[v.templates.index(v.field)]
                fields.append(self.make(first, Scope(scope.instance, scope.templates, symbols), near))
                runs.append({t: self.m.nodes[f] for t, f in zip(v.templates, v.first) if f in self.m.nodes})
                continue
            instance: dict[Pattern, Node] = {}
            fields.append(self.make(v.field, scope.enter(v, instance, k), near))
            runs.append(instance)
        self.m.instances[v] = runs  # self.m may be a restored copy by now
        return Node.tuple(fields)

    # --- attempts and constraints --------------------------------------------------------
    def _attempts(self, make: Callable[[], Node], scope: Scope) -> Node:
        """``make()``, drawn again (from the state before it) while it asks for a retry."""
        self.depth += 1
        try:
            return self._attempt_loop(make, scope, CALL_ATTEMPTS if self.depth == 1 else NESTED_ATTEMPTS)
        finally:
            self.depth -= 1

    def _attempt_loop(self, make: Callable[[], Node], scope: Scope, attempts: int) -> Node:
        for _ in range(attempts):
            backup, leaves = self.m.copy(), len(self.leaves)
            open_instance = dict(scope.instance) if scope.instance is not None else None
            try:
                return make()
            except _Retry:
                self.m = backup
                del self.leaves[leaves:]
                if scope.instance is not None:
                    scope.instance.clear()
                    scope.instance.update(open_instance)
        raise _Retry  # perhaps what an enclosing call drew before (a shared leaf) is at fault: it draws again

    def _check(self, p: Pattern, node: Node, scope: Scope) -> None:
        """Retry unless ``node`` meets every constraint of ``p`` that can be evaluated now."""
        scope.table(p, self.m)[p] = node  # a constraint may read the call's own attributes
        try:
            for name, expr in p.attrs.items():
                expected = self._value(expr, scope)
                if expected is _UNKNOWN:
                    continue
                try:
                    ok = meets(node_attr(node, name), expr, expected)
                except (KeyError, TypeError, ValueError):
                    ok = False
                if not ok:
                    raise _Retry
            for guard in self.rule.where:  # a where guard that can be evaluated already must hold
                value = self._value(guard, Scope())
                if value is not _UNKNOWN and not value:
                    raise _Retry
        finally:
            del scope.table(p, self.m)[p]

    def _implied(self, p: Pattern) -> Iterator[tuple[str, Any]]:
        """What the rule's ``where`` guards fix of leaf ``p`` now: each ``p.name == expr`` (in a
        conjunction too) whose other side can be evaluated already, and each
        ``p.shape[-k:] == expr``, as ``trailing`` (its last ``k`` sizes)."""
        stack = list(self.rule.where)
        while stack:
            guard = stack.pop()
            if not isinstance(guard, A.Binary):
                continue
            if guard.op is A.BinOp.AND:
                stack += [guard.lhs, guard.rhs]
            elif guard.op is A.BinOp.EQ:
                for mine, other in ((guard.lhs, guard.rhs), (guard.rhs, guard.lhs)):
                    if isinstance(mine, A.GetAttr) and mine.pattern is p:
                        value = self._value(other, Scope())
                        if value is not _UNKNOWN:
                            yield mine.name, value
                    elif _trailing_shape(mine, p):
                        value = self._value(other, Scope())
                        whole = self._value(other.seq, Scope()) if isinstance(other, A.Slice) else _UNKNOWN
                        if isinstance(value, (tuple, list)) and len(value) == -mine.start.value:
                            yield "trailing", (tuple(value), tuple(whole) if isinstance(whole, (tuple, list)) else None)

    def _value(self, expr: Any, scope: Scope) -> Any:
        """The value of constraint ``expr`` now, or ``_UNKNOWN`` if it reads what is not made yet."""
        try:
            return evaluate(expr, self.m.env(scope))
        except (EvaluationError, KeyError, TypeError, ValueError, IndexError, ZeroDivisionError):
            return _UNKNOWN


_UNKNOWN = object()


def _trailing_shape(e: Any, p: Pattern) -> bool:
    """Whether ``e`` is ``p.shape[-k:]``."""
    return (isinstance(e, A.Slice) and isinstance(e.seq, A.GetAttr) and e.seq.pattern is p and e.seq.name == "shape"
            and isinstance(e.start, A.Const) and isinstance(e.start.value, int) and e.start.value < 0
            and all(isinstance(b, A.Const) and b.value is None for b in (e.stop, e.step)))


def _complete(value: Any) -> bool:
    """Whether a constraint value fixes the attribute (no ``None`` left open, not unknown)."""
    if value is _UNKNOWN or value is None:
        return False
    if isinstance(value, (tuple, list)):
        return all(_complete(v) for v in value)
    return True


def _tensors(ty: Any) -> tuple[TensorType, ...]:
    if isinstance(ty, TupleType):
        return tuple(t for f in ty.fields for t in _tensors(f))
    return (ty,)

