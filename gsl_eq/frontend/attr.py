"""Attribute expressions: the values and constraints attached to patterns.

An attribute expression computes a plain Python value (an int, a tuple of ints,
a string, a bool, ...) from the attributes of matched graph nodes::

    conv2 = op.Conv2D(x, w2, strides=conv1.strides)        # read conv1's strides
    w = pat.Variable(shape=(None, None, w1.shape[2], w1.shape[3]))
    split = op.Split(y, indices_or_sections=attr.Variadic(
        attr.Sum(src(w, j).shape[0], j, i + 1), index=i, length=src.length - 1))

Python operators build expressions: arithmetic (``+ - * / // % **``, unary
``-``), comparisons (``== != < <= > >=``), logic (``&``, ``|``, ``~`` for and,
or, not), indexing and slicing. What Python cannot overload has a function:
:func:`Len`, :func:`In`, :func:`Max`, :func:`Min`, :func:`Reverse`,
:class:`Cond`. :class:`Variadic`, :class:`ReduceIndexed` (and :func:`Sum`) and
:class:`Map` bind a :class:`Symbol` over a range of indices or a tuple.

Expressions are compared by identity (``==`` builds an expression), and each one
knows its free symbols (``expr.free``), which decide whether its value can be
memoized while rewriting (computed once per match).
"""

from __future__ import annotations

import os
from enum import Enum
from typing import Any, Callable, Iterator

import numpy as np

from .base import PatternBase
from .errors import ExpressionUsageError, InvalidOperandError, Loc, user_location

__all__ = [
    "AttrExpr", "BinOp", "Binary", "Cond", "Const", "GetAttr", "GetItem", "In", "Len", "Map", "Max", "Min",
    "ReduceIndexed", "ReduceTuple", "Reverse", "Slice", "Sum", "Symbol", "Tuple", "Unary", "UnaryOp",
    "Variadic", "free_symbols", "to_attr", "walk",
]


class BinOp(Enum):
    """Binary operators of attribute expressions (also the folds of reductions)."""

    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    FLOORDIV = "//"
    MOD = "%"
    POW = "**"
    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    AND = "&"
    OR = "|"
    MAX = "max"
    MIN = "min"


class UnaryOp(Enum):
    """Unary operators of attribute expressions."""

    NEG = "-"
    NOT = "~"
    ABS = "abs"


class AttrExpr:
    """Base of attribute expressions. ``loc`` is where it was written; ``free`` its free symbols."""

    __slots__ = ("loc", "free")

    def __init__(self, loc: Loc | None):
        self.loc = loc if loc is not None else user_location()
        self.free: frozenset[Symbol] = frozenset().union(
            *(child.free - frozenset(bound) for child, bound in self.scopes())
        )

    def children(self) -> tuple[AttrExpr, ...]:
        """Direct sub-expressions, in evaluation order."""
        return ()

    def scopes(self) -> Iterator[tuple[AttrExpr, tuple[Symbol, ...]]]:
        """Each direct sub-expression with the symbols this expression binds in it."""
        for child in self.children():
            yield child, ()

    # Python operators build expressions.
    def __add__(self, other: Any) -> Binary: return Binary(BinOp.ADD, self, other)
    def __radd__(self, other: Any) -> Binary: return Binary(BinOp.ADD, other, self)
    def __sub__(self, other: Any) -> Binary: return Binary(BinOp.SUB, self, other)
    def __rsub__(self, other: Any) -> Binary: return Binary(BinOp.SUB, other, self)
    def __mul__(self, other: Any) -> Binary: return Binary(BinOp.MUL, self, other)
    def __rmul__(self, other: Any) -> Binary: return Binary(BinOp.MUL, other, self)
    def __truediv__(self, other: Any) -> Binary: return Binary(BinOp.DIV, self, other)
    def __rtruediv__(self, other: Any) -> Binary: return Binary(BinOp.DIV, other, self)
    def __floordiv__(self, other: Any) -> Binary: return Binary(BinOp.FLOORDIV, self, other)
    def __rfloordiv__(self, other: Any) -> Binary: return Binary(BinOp.FLOORDIV, other, self)
    def __mod__(self, other: Any) -> Binary: return Binary(BinOp.MOD, self, other)
    def __rmod__(self, other: Any) -> Binary: return Binary(BinOp.MOD, other, self)
    def __pow__(self, other: Any) -> Binary: return Binary(BinOp.POW, self, other)
    def __rpow__(self, other: Any) -> Binary: return Binary(BinOp.POW, other, self)
    def __eq__(self, other: Any) -> Binary: return Binary(BinOp.EQ, self, other)  # type: ignore[override]
    def __ne__(self, other: Any) -> Binary: return Binary(BinOp.NE, self, other)  # type: ignore[override]
    def __lt__(self, other: Any) -> Binary: return Binary(BinOp.LT, self, other)
    def __le__(self, other: Any) -> Binary: return Binary(BinOp.LE, self, other)
    def __gt__(self, other: Any) -> Binary: return Binary(BinOp.GT, self, other)
    def __ge__(self, other: Any) -> Binary: return Binary(BinOp.GE, self, other)
    def __and__(self, other: Any) -> Binary: return Binary(BinOp.AND, self, other)
    def __rand__(self, other: Any) -> Binary: return Binary(BinOp.AND, other, self)
    def __or__(self, other: Any) -> Binary: return Binary(BinOp.OR, self, other)
    def __ror__(self, other: Any) -> Binary: return Binary(BinOp.OR, other, self)
    def __neg__(self) -> Unary: return Unary(UnaryOp.NEG, self)
    def __invert__(self) -> Unary: return Unary(UnaryOp.NOT, self)
    def __abs__(self) -> Unary: return Unary(UnaryOp.ABS, self)

    __hash__ = object.__hash__

    def __getitem__(self, index: Any) -> AttrExpr:
        if isinstance(index, slice):
            return Slice(self, index.start, index.stop, index.step)
        return GetItem(self, index)

    # What Python cannot overload must fail loudly, not silently give a wrong answer.
    def __bool__(self) -> bool:
        raise ExpressionUsageError(
            f"the truth value of attribute expression {self!r} is only known while matching; "
            "use &, |, ~ instead of and, or, not, and attr.Cond instead of if"
        )

    def __len__(self) -> int:
        raise ExpressionUsageError(f"len() of attribute expression {self!r}: use attr.Len(...)")

    def __contains__(self, item: Any) -> bool:
        raise ExpressionUsageError(f"'in' on attribute expression {self!r}: use attr.In(item, collection)")

    def __iter__(self) -> Iterator[Any]:
        raise ExpressionUsageError(f"attribute expression {self!r} cannot be iterated; use attr.Map or indexing")


def to_attr(value: Any, loc: Loc | None = None) -> AttrExpr:
    """Turn a Python value (constant, tuple possibly holding expressions) into an expression.

    Parameters
    ----------
    value
        An expression (returned as it is), None, a bool, int, float, str, NumPy scalar, or a list
        or tuple of these (a :class:`Const` if all are constants, else a :class:`Tuple`).
    loc
        Where it was written, for messages.

    Raises
    ------
    InvalidOperandError
        A pattern (read one of its attributes instead) or any other value.
    """
    if isinstance(value, AttrExpr):
        return value
    if isinstance(value, (list, tuple)):
        fields = [to_attr(v, loc) for v in value]
        if all(isinstance(f, Const) for f in fields):
            return Const(tuple(f.value for f in fields), loc)  # type: ignore[attr-defined]
        return Tuple(*fields, loc=loc)
    if value is None or isinstance(value, (bool, int, float, str)):
        return Const(value, loc)
    if isinstance(value, np.generic):
        return Const(value.item(), loc)
    if isinstance(value, PatternBase):
        raise InvalidOperandError(
            f"pattern {value!r} is used where an attribute expression is expected; read one of its attributes (p.shape, p.axis, ...)",
            loc,
        )
    raise InvalidOperandError(f"{value!r} of type {type(value).__name__} is not an attribute value", loc)


def _symbol(value: Any, what: str, loc: Loc) -> Symbol:
    if not isinstance(value, Symbol):
        raise InvalidOperandError(f"{what} must be an attr.Symbol(), not {value!r}", loc)
    return value


class Const(AttrExpr):
    """A constant: int, float, str, bool, None (in a source: any value) or a tuple of them.

    Parameters
    ----------
    value
        The value; a list becomes a tuple.
    loc
        Where it was written, for messages.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any, loc: Loc | None = None):
        self.value = tuple(value) if isinstance(value, list) else value
        super().__init__(loc)

    def __repr__(self) -> str:
        return repr(self.value)


class Symbol(AttrExpr):
    """A symbol: an index bound by a variadic, a reduction or a map.

    Parameters
    ----------
    name
        A name for messages; by default the line that built it.

    Examples
    --------
    The sizes where a split cuts a tensor back into the parts of a concat, whose instance ``j``
    is ``src(w, j)``::

        i, j = attr.Symbol(), attr.Symbol()
        cuts = attr.Variadic(attr.Sum(src(w, j).shape[0], j, i + 1), index=i,
                             length=src.length - 1)
    """

    __slots__ = ("name",)

    def __init__(self, name: str | None = None):
        self.name = name
        super().__init__(None)
        self.free = frozenset((self,))

    def __repr__(self) -> str:
        return self.name or f"symbol@{os.path.basename(self.loc.filename)}:{self.loc.lineno}"


class GetAttr(AttrExpr):
    """``p.name``: attribute ``name`` of the node matched by (or built for) pattern ``p``.

    Parameters
    ----------
    pattern
        The pattern.
    name
        The attribute's name.
    loc
        Where it was written; by default the caller's line.

    Raises
    ------
    UnknownAttributeError
        ``pattern`` has no attribute ``name``.
    """

    __slots__ = ("pattern", "name")

    def __init__(self, pattern: PatternBase, name: str, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        pattern.check_readable(name, loc)
        self.pattern = pattern
        self.name = name
        super().__init__(loc)
        self.free = pattern.free

    def __repr__(self) -> str:
        return f"{self.pattern!r}.{self.name}"


class Binary(AttrExpr):
    """``lhs op rhs``; ``&`` and ``|`` are logical and short-circuit."""

    __slots__ = ("op", "lhs", "rhs")

    def __init__(self, op: BinOp, lhs: Any, rhs: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        self.op = op
        self.lhs = to_attr(lhs, loc)
        self.rhs = to_attr(rhs, loc)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.lhs, self.rhs)

    def __repr__(self) -> str:
        if self.op in (BinOp.MAX, BinOp.MIN):
            return f"{self.op.value}({self.lhs!r}, {self.rhs!r})"
        return f"({self.lhs!r} {self.op.value} {self.rhs!r})"


class Unary(AttrExpr):
    """``-x``, ``~x`` (logical not), ``abs(x)``."""

    __slots__ = ("op", "operand")

    def __init__(self, op: UnaryOp, operand: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        self.op = op
        self.operand = to_attr(operand, loc)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.operand,)

    def __repr__(self) -> str:
        return f"{self.op.value}({self.operand!r})"


class Tuple(AttrExpr):
    """A tuple of expressions, e.g. ``attr.Tuple(p.shape[0], 1)``; Python tuples convert to it.

    Parameters
    ----------
    *fields
        The fields: expressions or values :func:`to_attr` accepts.
    loc
        Where it was written; by default the caller's line.
    """

    __slots__ = ("fields",)

    def __init__(self, *fields: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        self.fields = tuple(to_attr(f, loc) for f in fields)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return self.fields

    def __repr__(self) -> str:
        return "(" + ", ".join(map(repr, self.fields)) + ("," if len(self.fields) == 1 else "") + ")"


class GetItem(AttrExpr):
    """``seq[index]`` for a tuple-valued (or str-valued) expression.

    Parameters
    ----------
    seq
        The tuple (or string).
    index
        The index: an int or an expression.
    loc
        Where it was written; by default the caller's line.
    """

    __slots__ = ("seq", "index")

    def __init__(self, seq: Any, index: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        self.seq = to_attr(seq, loc)
        self.index = to_attr(index, loc)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.seq, self.index)

    def __repr__(self) -> str:
        return f"{self.seq!r}[{self.index!r}]"


class Slice(AttrExpr):
    """``seq[start:stop:step]``; missing bounds are ``None``. Slicing an expression builds one
    (``p.shape[2:]``).

    Parameters
    ----------
    seq
        The tuple (or string).
    start, stop, step
        The bounds and step: ints, expressions or None.
    loc
        Where it was written; by default the caller's line.
    """

    __slots__ = ("seq", "start", "stop", "step")

    def __init__(self, seq: Any, start: Any = None, stop: Any = None, step: Any = None, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        self.seq = to_attr(seq, loc)
        self.start, self.stop, self.step = (to_attr(v, loc) for v in (start, stop, step))
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.seq, self.start, self.stop, self.step)

    def __repr__(self) -> str:
        parts = ["" if isinstance(v, Const) and v.value is None else repr(v) for v in (self.start, self.stop, self.step)]
        return f"{self.seq!r}[{parts[0]}:{parts[1]}" + (f":{parts[2]}]" if parts[2] else "]")


class Len(AttrExpr):
    """``len(seq)``, which Python's ``len`` cannot build: ``attr.Len(p.shape)``.

    Parameters
    ----------
    seq
        The tuple (or string).
    loc
        Where it was written; by default the caller's line.
    """

    __slots__ = ("seq",)

    def __init__(self, seq: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        self.seq = to_attr(seq, loc)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.seq,)

    def __repr__(self) -> str:
        return f"len({self.seq!r})"


class In(AttrExpr):
    """``item in seq``, which Python's ``in`` cannot build: ``attr.In(p.axis, (1, -3))``.

    Parameters
    ----------
    item
        The value looked for.
    seq
        The tuple (or string).
    loc
        Where it was written; by default the caller's line.
    """

    __slots__ = ("item", "seq")

    def __init__(self, item: Any, seq: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        self.item = to_attr(item, loc)
        self.seq = to_attr(seq, loc)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.item, self.seq)

    def __repr__(self) -> str:
        return f"({self.item!r} in {self.seq!r})"


class Reverse(AttrExpr):
    """The tuple ``seq`` in reverse order.

    Parameters
    ----------
    seq
        The tuple.
    loc
        Where it was written; by default the caller's line.
    """

    __slots__ = ("seq",)

    def __init__(self, seq: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        self.seq = to_attr(seq, loc)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.seq,)

    def __repr__(self) -> str:
        return f"reverse({self.seq!r})"


def Max(a: Any, b: Any, *more: Any) -> AttrExpr:
    """The greatest of two or more values.

    Parameters
    ----------
    a, b, *more
        The values: expressions or constants.
    """
    loc = user_location()
    result = Binary(BinOp.MAX, a, b, loc)
    for m in more:
        result = Binary(BinOp.MAX, result, m, loc)
    return result


def Min(a: Any, b: Any, *more: Any) -> AttrExpr:
    """The least of two or more values.

    Parameters
    ----------
    a, b, *more
        The values: expressions or constants.
    """
    loc = user_location()
    result = Binary(BinOp.MIN, a, b, loc)
    for m in more:
        result = Binary(BinOp.MIN, result, m, loc)
    return result


class Cond(AttrExpr):
    """``then if pred else orelse``; only the chosen branch is evaluated.

    Parameters
    ----------
    pred
        A boolean expression.
    then, orelse
        The values for either case.
    loc
        Where it was written; by default the caller's line.
    """

    __slots__ = ("pred", "then", "orelse")

    def __init__(self, pred: Any, then: Any, orelse: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        self.pred = to_attr(pred, loc)
        self.then = to_attr(then, loc)
        self.orelse = to_attr(orelse, loc)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.pred, self.then, self.orelse)

    def __repr__(self) -> str:
        return f"cond({self.pred!r}, {self.then!r}, {self.orelse!r})"


class Variadic(AttrExpr):
    """The tuple ``(field[index=0], ..., field[index=length-1])``: ``attr.Variadic(i, index=i,
    length=n)`` is ``(0, 1, ..., n - 1)``.

    Parameters
    ----------
    field
        Each element, an expression that may read ``index``.
    index
        The :class:`Symbol` bound to the element's position.
    length
        The number of elements (required).
    loc
        Where it was written; by default the caller's line.

    Raises
    ------
    InvalidOperandError
        No ``length``, or an ``index`` that is not a :class:`Symbol`.
    """

    __slots__ = ("field", "index", "length")

    def __init__(self, field: Any, index: Symbol | None = None, length: Any = None, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        if length is None:
            raise InvalidOperandError("attr.Variadic needs a length", loc)
        self.field = to_attr(field, loc)
        self.index = None if index is None else _symbol(index, "the index of attr.Variadic", loc)
        self.length = to_attr(length, loc)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.length, self.field)

    def scopes(self) -> Iterator[tuple[AttrExpr, tuple[Symbol, ...]]]:
        yield self.length, ()
        yield self.field, (self.index,) if self.index is not None else ()

    def __repr__(self) -> str:
        return f"variadic({self.field!r} for {self.index!r} < {self.length!r})"


class ReduceIndexed(AttrExpr):
    """Fold ``op`` over ``elem[index=0], ..., elem[index=length-1]``, starting from ``init``.

    Parameters
    ----------
    op
        A :class:`BinOp`, or its name or symbol (``"add"``, ``"+"``, ``"max"``).
    elem
        Each element, an expression that may read ``index``.
    index
        The :class:`Symbol` bound to the element's position.
    length
        The number of elements.
    init
        The value to start from (the result when ``length`` is 0).
    loc
        Where it was written; by default the caller's line.
    """

    __slots__ = ("op", "elem", "index", "length", "init")

    def __init__(self, op: BinOp | str, elem: Any, index: Symbol, length: Any, init: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        self.op = _binop(op, loc)
        self.elem = to_attr(elem, loc)
        self.index = _symbol(index, f"the index of {type(self).__name__}", loc)
        self.length = to_attr(length, loc)
        self.init = to_attr(init, loc)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.length, self.init, self.elem)

    def scopes(self) -> Iterator[tuple[AttrExpr, tuple[Symbol, ...]]]:
        yield self.length, ()
        yield self.init, ()
        yield self.elem, (self.index,)

    def __repr__(self) -> str:
        return f"reduce_{self.op.name.lower()}({self.elem!r} for {self.index!r} < {self.length!r}, init={self.init!r})"


def Sum(elem: Any, index: Symbol, length: Any) -> ReduceIndexed:
    """``elem[index=0] + ... + elem[index=length-1]`` (0 when ``length`` is 0).

    Parameters
    ----------
    elem, index, length
        As in :class:`ReduceIndexed`.
    """
    return ReduceIndexed(BinOp.ADD, elem, index, length, 0, user_location())


class ReduceTuple(AttrExpr):
    """Fold ``op`` over the elements of tuple ``seq``, starting from ``init``:
    ``attr.ReduceTuple("mul", p.shape, 1)`` is the number of elements.

    Parameters
    ----------
    op
        A :class:`BinOp`, or its name or symbol (``"add"``, ``"*"``, ``"max"``).
    seq
        The tuple.
    init
        The value to start from (the result for an empty tuple).
    loc
        Where it was written; by default the caller's line.
    """

    __slots__ = ("op", "seq", "init")

    def __init__(self, op: BinOp | str, seq: Any, init: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        self.op = _binop(op, loc)
        self.seq = to_attr(seq, loc)
        self.init = to_attr(init, loc)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.seq, self.init)

    def __repr__(self) -> str:
        return f"reduce_{self.op.name.lower()}({self.seq!r}, init={self.init!r})"


class Map(AttrExpr):
    """The tuple of ``fn(e)`` for each element ``e`` of tuple ``seq``.

    ``fn`` is called once, on a fresh symbol, to build the body:
    ``attr.Map(p.shape, lambda d: d * 2)``.

    Parameters
    ----------
    seq
        The tuple.
    fn
        A function from a :class:`Symbol` (each element) to the body's expression.
    loc
        Where it was written; by default the caller's line.

    Raises
    ------
    InvalidOperandError
        ``fn`` is not callable.

    Examples
    --------
    A weight whose shape is another's with every extent doubled::

        w1 = pat.Variable()
        w2 = pat.Variable(shape=attr.Map(w1.shape, lambda d: d * 2))
    """

    __slots__ = ("seq", "symbol", "body")

    def __init__(self, seq: Any, fn: Callable[[Symbol], Any], loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        if not callable(fn):
            raise InvalidOperandError(f"attr.Map needs a function building the body from a symbol, not {fn!r}", loc)
        self.seq = to_attr(seq, loc)
        self.symbol = Symbol("elem")
        self.body = to_attr(fn(self.symbol), loc)
        super().__init__(loc)

    def children(self) -> tuple[AttrExpr, ...]:
        return (self.seq, self.body)

    def scopes(self) -> Iterator[tuple[AttrExpr, tuple[Symbol, ...]]]:
        yield self.seq, ()
        yield self.body, (self.symbol,)

    def __repr__(self) -> str:
        return f"map({self.seq!r}, {self.symbol!r} -> {self.body!r})"


def _binop(op: BinOp | str, loc: Loc) -> BinOp:
    if isinstance(op, BinOp):
        return op
    by_name = {b.name.lower(): b for b in BinOp} | {b.value: b for b in BinOp}
    if isinstance(op, str) and op.lower() in by_name:
        return by_name[op.lower()]
    raise InvalidOperandError(f"{op!r} is not a binary operator; use one of {', '.join(b.name.lower() for b in BinOp)}", loc)


def free_symbols(expr: AttrExpr) -> frozenset[Symbol]:
    """The symbols ``expr`` reads but does not bind (through patterns it reads, too).

    Parameters
    ----------
    expr
        The expression.
    """
    return expr.free


def walk(expr: AttrExpr) -> Iterator[AttrExpr]:
    """Every sub-expression of ``expr`` once, ``expr`` first (depth first, in evaluation order).

    Parameters
    ----------
    expr
        The expression.
    """
    seen: set[int] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack.extend(reversed(e.children()))
