"""Evaluation of attribute expressions against matched graph nodes.

Executors call :func:`evaluate` while matching (to check a constraint with
:func:`satisfies`) and while rewriting (to compute a target attribute). The
environment (:class:`Env`) gives the node each pattern matched (or was built
as), the value of each bound symbol, and the nodes of each variadic's instances.
"""

from __future__ import annotations

import inspect
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping, Sequence

import numpy as np

from ..graph import Kind, Node, ops
from ..graph.types import TupleType
from . import attr as A
from .errors import EvaluationError, GSLError
from .pat import Instance, Pattern, Variadic

_BINARY: dict[A.BinOp, Callable[[Any, Any], Any]] = {
    A.BinOp.ADD: operator.add,
    A.BinOp.SUB: operator.sub,
    A.BinOp.MUL: operator.mul,
    A.BinOp.DIV: operator.truediv,
    A.BinOp.FLOORDIV: operator.floordiv,
    A.BinOp.MOD: operator.mod,
    A.BinOp.POW: operator.pow,
    A.BinOp.EQ: operator.eq,
    A.BinOp.NE: operator.ne,
    A.BinOp.LT: operator.lt,
    A.BinOp.LE: operator.le,
    A.BinOp.GT: operator.gt,
    A.BinOp.GE: operator.ge,
    A.BinOp.AND: lambda a, b: bool(a) and bool(b),
    A.BinOp.OR: lambda a, b: bool(a) or bool(b),
    A.BinOp.MAX: max,
    A.BinOp.MIN: min,
}

_UNARY: dict[A.UnaryOp, Callable[[Any], Any]] = {
    A.UnaryOp.NEG: operator.neg,
    A.UnaryOp.NOT: operator.not_,
    A.UnaryOp.ABS: abs,
}


@dataclass(frozen=True)
class Env:
    """What an expression may read.

    ``nodes`` maps each matched (or built) pattern to its graph node;
    ``symbols`` gives the value of each bound symbol; ``instances`` gives, for
    each matched variadic, one mapping per instance from template to node (the
    first instance's templates map to the nodes of the ``first`` patterns).
    """

    nodes: Mapping[Pattern, Node] = field(default_factory=dict)
    symbols: Mapping[A.Symbol, Any] = field(default_factory=dict)
    instances: Mapping[Variadic, Sequence[Mapping[Pattern, Node]]] = field(default_factory=dict)

    def bind(self, symbol: A.Symbol, value: Any) -> Env:
        """This environment with ``symbol`` bound to ``value``."""
        return Env(self.nodes, {**self.symbols, symbol: value}, self.instances)

    @staticmethod
    def of(mapping: Mapping[Any, Any]) -> Env:
        """An environment from one mapping whose keys are patterns, symbols and variadics."""
        nodes, symbols, instances = {}, {}, {}
        for key, value in mapping.items():
            if isinstance(key, A.Symbol):
                symbols[key] = value
            elif isinstance(key, Variadic) and not isinstance(value, Node):
                instances[key] = value
            elif isinstance(key, Pattern):
                nodes[key] = value
            else:
                raise TypeError(f"environment key {key!r} is neither a pattern nor a symbol")
        return Env(nodes, symbols, instances)


class Memo:
    """Values of memoizable expressions (no free symbols, referenced more than once), for one rewrite."""

    def __init__(self, memoizable: Collection[A.AttrExpr]):
        self.memoizable = frozenset(memoizable)  # looked up by identity: == builds an expression
        self.values: dict[A.AttrExpr, Any] = {}


def evaluate(expr: A.AttrExpr | Any, env: Env | Mapping[Any, Any], memo: Memo | None = None) -> Any:
    """The value of attribute expression ``expr`` in ``env``.

    Raises :class:`EvaluationError` (naming the expression and its line) when a
    pattern has no node, a symbol no value, or an operation fails.
    """
    env = env if isinstance(env, Env) else Env.of(env)
    return _Evaluator(env, memo).eval(A.to_attr(expr))


def node_of(p: Pattern, env: Env, memo: Memo | None = None) -> Node:
    """The node pattern ``p`` stands for in ``env`` (an instance access evaluates its index)."""
    if isinstance(p, Instance):
        k = _Evaluator(env, memo).eval(p.index_expr)
        runs = env.instances.get(p.variadic)
        if runs is None:
            raise EvaluationError(f"{p.variadic!r} has no instances in this environment", p.loc)
        if not isinstance(k, int) or not 0 <= k < len(runs):
            raise EvaluationError(f"instance {k!r} of {p.variadic!r} does not exist: it has {len(runs)} instances", p.loc)
        try:
            return runs[k][p.template]
        except KeyError:
            raise EvaluationError(f"instance {k} of {p.variadic!r} has no node for {p.template!r}", p.loc) from None
    try:
        return env.nodes[p]
    except KeyError:
        raise EvaluationError(f"{p!r} has no node in this environment", p.loc) from None


_SCALARS = frozenset({int, float, str, bool})


def satisfies(actual: Any, expected: Any) -> bool:
    """Whether attribute value ``actual`` meets constraint value ``expected``.

    ``None`` in ``expected`` (anywhere in a tuple, too) accepts any value, so
    ``shape=(None, None, 3, 3)`` accepts every 4-d shape ending in 3, 3.
    """
    if expected is None:
        return True
    if isinstance(expected, (tuple, list)):
        return (
            isinstance(actual, (tuple, list))
            and len(actual) == len(expected)
            and all(satisfies(a, e) for a, e in zip(actual, expected))
        )
    if isinstance(actual, (tuple, list)):
        return False
    if type(actual) in _SCALARS and type(expected) in _SCALARS:
        return actual == expected
    return bool(np.all(actual == expected))


def meets(actual: Any, expr: A.AttrExpr, expected: Any) -> bool:
    """Whether attribute value ``actual`` meets constraint ``expr``, evaluated to ``expected``.

    A ``None`` written in the rule accepts any value (:func:`satisfies`); a ``None`` read from a
    matched node (``out_dtype=conv1.out_dtype`` where conv1's is unset) is a value like any other,
    met by ``None`` alone: "the same attribute" must not match whatever the other node carries.
    """
    if expected is None and not (isinstance(expr, A.Const) and expr.value is None):
        return actual is None
    return satisfies(actual, expected)


def node_attr(node: Node, name: str) -> Any:
    """Attribute ``name`` of a graph node, plus ``length`` of a tuple.

    A call that does not carry an attribute has its op's default value.
    """
    if name == "length" and isinstance(node.type, TupleType):
        return len(node.type.fields)
    if node.kind is Kind.CALL and name not in node.attrs:
        default = ops.signature(node.op).attrs.get(name, inspect.Parameter.empty)
        if default is not inspect.Parameter.empty:
            return default
    return node.attr(name)


class _Evaluator:
    def __init__(self, env: Env, memo: Memo | None):
        self.env = env
        self.memo = memo

    def eval(self, e: A.AttrExpr) -> Any:
        memo = self.memo
        if memo is not None and e in memo.memoizable:
            if e not in memo.values:
                memo.values[e] = self._eval(e)
            return memo.values[e]
        return self._eval(e)

    def within(self, symbol: A.Symbol | None, value: Any) -> _Evaluator:
        return self if symbol is None else _Evaluator(self.env.bind(symbol, value), self.memo)

    def _eval(self, e: A.AttrExpr) -> Any:
        try:
            return self._compute(e)
        except GSLError:
            raise
        except (TypeError, ValueError, IndexError, KeyError, ArithmeticError) as err:
            raise EvaluationError(f"cannot evaluate {e!r}: {type(err).__name__}: {err}", e.loc) from None

    def _compute(self, e: A.AttrExpr) -> Any:
        compute = _COMPUTE.get(type(e))
        if compute is None:
            raise TypeError(f"unknown attribute expression {type(e).__name__}")
        return compute(self, e)

    def _symbol(self, e: A.Symbol) -> Any:
        if e not in self.env.symbols:
            raise EvaluationError(f"symbol {e!r} has no value in this environment", e.loc)
        return self.env.symbols[e]

    def _binary(self, e: A.Binary) -> Any:
        if e.op is A.BinOp.AND:
            return bool(self.eval(e.lhs)) and bool(self.eval(e.rhs))
        if e.op is A.BinOp.OR:
            return bool(self.eval(e.lhs)) or bool(self.eval(e.rhs))
        return _BINARY[e.op](self.eval(e.lhs), self.eval(e.rhs))

    def _variadic(self, e: A.Variadic) -> tuple:
        return tuple(self.within(e.index, k).eval(e.field) for k in range(_count(self.eval(e.length), e)))

    def _reduce_indexed(self, e: A.ReduceIndexed) -> Any:
        fold, acc = _BINARY[e.op], self.eval(e.init)
        for k in range(_count(self.eval(e.length), e)):
            acc = fold(acc, self.within(e.index, k).eval(e.elem))
        return acc

    def _reduce_tuple(self, e: A.ReduceTuple) -> Any:
        fold, acc = _BINARY[e.op], self.eval(e.init)
        for item in self.eval(e.seq):
            acc = fold(acc, item)
        return acc

    def _get_attr(self, e: A.GetAttr) -> Any:
        p = e.pattern
        if e.name == "length" and isinstance(p, Variadic) and p in self.env.instances:
            return len(self.env.instances[p])
        node = node_of(p, self.env, self.memo)
        try:
            return node_attr(node, e.name)
        except KeyError:
            raise EvaluationError(f"{e!r}: the node {node!r} matched by {p!r} has no attribute {e.name!r}", e.loc) from None


#: How each kind of attribute expression is computed (by its exact class: the kinds do not subclass one another).
_COMPUTE: dict[type, Callable[[_Evaluator, Any], Any]] = {
    A.Const: lambda ev, e: e.value,
    A.Symbol: _Evaluator._symbol,
    A.GetAttr: _Evaluator._get_attr,
    A.Binary: _Evaluator._binary,
    A.Unary: lambda ev, e: _UNARY[e.op](ev.eval(e.operand)),
    A.Tuple: lambda ev, e: tuple(ev.eval(f) for f in e.fields),
    A.GetItem: lambda ev, e: ev.eval(e.seq)[ev.eval(e.index)],
    A.Slice: lambda ev, e: ev.eval(e.seq)[slice(ev.eval(e.start), ev.eval(e.stop), ev.eval(e.step))],
    A.Len: lambda ev, e: len(ev.eval(e.seq)),
    A.In: lambda ev, e: ev.eval(e.item) in ev.eval(e.seq),
    A.Reverse: lambda ev, e: tuple(reversed(ev.eval(e.seq))),
    A.Cond: lambda ev, e: ev.eval(e.then) if ev.eval(e.pred) else ev.eval(e.orelse),
    A.Variadic: _Evaluator._variadic,
    A.ReduceIndexed: _Evaluator._reduce_indexed,
    A.ReduceTuple: _Evaluator._reduce_tuple,
    A.Map: lambda ev, e: tuple(ev.within(e.symbol, v).eval(e.body) for v in ev.eval(e.seq)),
}


def _count(n: Any, e: A.AttrExpr) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise EvaluationError(f"the length of {e!r} is {n!r}, not a non-negative int", e.loc)
    return int(n)

