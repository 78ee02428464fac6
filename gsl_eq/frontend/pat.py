"""Patterns: the vertices of source and target pattern graphs.

A pattern stands for one graph node (or, for a variadic, a run of them)::

    x = pat.Wildcard()                       # any value
    w1 = pat.Variable()                      # a function parameter
    w2 = pat.Variable(shape=w1.shape)        # ... whose shape equals w1's
    conv1 = op.Conv2D(x, w1)                 # a call of relax.nn.conv2d, any attributes
    y = conv1 + op.Conv2D(x, w2, strides=conv1.strides)

Keyword arguments are attribute constraints (in a source) or attribute values
(in a target); reading ``p.name`` gives an attribute expression
(:mod:`gsl_eq.frontend.attr`). Each pattern checks itself when built (op exists,
input count, attribute names, variadic consistency) and records the user's line.
Patterns are compared by identity: two patterns are the same vertex only if they
are the same object. Their ``inputs`` are the vertex's ordered predecessors.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import os
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

import numpy as np

from . import spec
from .attr import AttrExpr, GetAttr, Symbol, to_attr
from .base import PatternBase
from .errors import (
    ArityError,
    ExpressionUsageError,
    InvalidOperandError,
    Loc,
    UnknownAttributeError,
    VariadicError,
    user_location,
)

__all__ = [
    "Alt", "Call", "Cond", "Const", "GetItem", "Instance", "Match", "OpWithTrait", "Pattern", "Tuple",
    "Variable", "Variadic", "Wildcard", "same_attr",
]


class Pattern(PatternBase):
    """Base of all patterns: ordered ``inputs``, attribute expressions ``attrs``, ``loc``, ``free``."""

    __slots__ = ("loc", "inputs", "attrs", "free")
    kind: ClassVar[str] = "Pattern"

    def __init__(self, inputs: Iterable[Pattern], attrs: Mapping[str, Any], loc: Loc):
        self.loc = loc
        self.inputs: tuple[Pattern, ...] = tuple(inputs)
        settable = self.settable_attrs()
        for name in attrs:
            if name not in settable:
                raise UnknownAttributeError(_unknown_attr(self, name, settable, "set"), loc)
        self.attrs: dict[str, AttrExpr] = {name: to_attr(v, loc) for name, v in attrs.items()}
        self.free: frozenset[Symbol] = frozenset().union(
            *(p.free for p in self.inputs), *(e.free for e in self.attrs.values())
        )

    # --- what can be read and set -------------------------------------------------
    def readable_attrs(self) -> frozenset[str]:
        """Attribute names ``p.name`` may read."""
        return frozenset(spec.TYPE_ATTRS)

    def settable_attrs(self) -> frozenset[str]:
        """Attribute names a keyword argument of the constructor may constrain."""
        return self.readable_attrs()

    def check_readable(self, name: str, loc: Loc) -> None:
        """Raise :class:`UnknownAttributeError` unless ``p.name`` can be read."""
        readable = self.readable_attrs()
        if name not in readable:
            raise UnknownAttributeError(_unknown_attr(self, name, readable, "read"), loc)

    def __getattr__(self, name: str) -> GetAttr:
        if name.startswith("_") or name in _slot_names(type(self)):
            raise AttributeError(name)
        return GetAttr(self, name, user_location())

    # --- Python operators build calls ---------------------------------------------
    def __add__(self, other: Any) -> Call: return Call("relax.add", self, other)
    def __radd__(self, other: Any) -> Call: return Call("relax.add", other, self)
    def __sub__(self, other: Any) -> Call: return Call("relax.subtract", self, other)
    def __rsub__(self, other: Any) -> Call: return Call("relax.subtract", other, self)
    def __mul__(self, other: Any) -> Call: return Call("relax.multiply", self, other)
    def __rmul__(self, other: Any) -> Call: return Call("relax.multiply", other, self)
    def __truediv__(self, other: Any) -> Call: return Call("relax.divide", self, other)
    def __rtruediv__(self, other: Any) -> Call: return Call("relax.divide", other, self)
    def __matmul__(self, other: Any) -> Call: return Call("relax.matmul", self, other)
    def __rmatmul__(self, other: Any) -> Call: return Call("relax.matmul", other, self)
    def __neg__(self) -> Call: return Call("relax.negative", self)

    def __getitem__(self, index: Any) -> GetItem:
        return GetItem(self, index)

    def __iter__(self):
        raise ExpressionUsageError(f"pattern {self!r} cannot be iterated or unpacked; take items with p[i]")

    # --- display --------------------------------------------------------------------
    def describe(self) -> str:
        """A short name of the pattern for messages, e.g. ``Call relax.nn.conv2d``."""
        return self.kind

    def __repr__(self) -> str:
        return f"<{self.describe()} @ {os.path.basename(self.loc.filename)}:{self.loc.lineno}>"


@functools.cache
def _slot_names(cls: type) -> frozenset[str]:
    return frozenset(name for klass in cls.__mro__ for name in getattr(klass, "__slots__", ()))


def _unknown_attr(p: Pattern, name: str, valid: Iterable[str], verb: str) -> str:
    valid = sorted(valid)
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"cannot {verb} attribute {name!r} of {p.describe()}{hint} (its attributes: {', '.join(valid) or 'none'})"


def as_pattern(value: Any, loc: Loc) -> Pattern:
    """Turn an argument into a pattern: Python tuples become ``Tuple``, numbers and arrays ``Const``."""
    if isinstance(value, Pattern):
        return value
    if isinstance(value, (tuple, list)):
        return Tuple(*(as_pattern(v, loc) for v in value), loc=loc)
    if isinstance(value, (int, float, np.ndarray, np.generic)) and not isinstance(value, bool):
        return Const(value, loc=loc)
    if isinstance(value, AttrExpr):
        raise InvalidOperandError(f"attribute expression {value!r} is used where a pattern is expected", loc)
    raise InvalidOperandError(f"{value!r} of type {type(value).__name__} is not a pattern", loc)


# What any value may have: a tensor's type attributes, or a tuple's length.
_VALUE_ATTRS = frozenset((*spec.TYPE_ATTRS, "length"))


# --- leaves ------------------------------------------------------------------------


class Wildcard(Pattern):
    """Any value. Keyword arguments constrain its ``shape``, ``dtype`` or ``ndim``.

    Parameters
    ----------
    **attrs
        Constraints on the value's ``shape``, ``dtype``, ``ndim`` or (a tuple's) ``length``: a
        value, or an attribute expression over patterns matched before; None in a shape is any
        extent (``shape=(None, w.shape[0])``).

    Raises
    ------
    UnknownAttributeError
        A keyword that is none of these.

    Examples
    --------
    ::

        x = pat.Wildcard()              # any value
        v = pat.Wildcard(ndim=1)        # any 1-D tensor
        y = op.ReLU(x)                  # relu of anything
    """

    __slots__ = ()
    kind = "Wildcard"

    def __init__(self, **attrs: Any):
        super().__init__((), attrs, user_location())

    def readable_attrs(self) -> frozenset[str]:
        return _VALUE_ATTRS


class Variable(Pattern):
    """A function parameter (an input or a model weight), e.g. ``pat.Variable(shape=w1.shape)``.

    Parameters
    ----------
    **attrs
        Constraints on its ``shape``, ``dtype`` or ``ndim``, as for :class:`Wildcard`.
    """

    __slots__ = ()
    kind = "Variable"

    def __init__(self, **attrs: Any):
        super().__init__((), attrs, user_location())


class Const(Pattern):
    """A constant. ``value=None`` matches any constant; in a target the value is required, or
    ``fill``: a function computing it from attribute values of the match, passed by keyword::

        def identity_kernel(channels, kh, kw):   # a depthwise kernel that copies its input
            k = np.zeros((channels, 1, kh, kw)); k[:, 0, kh // 2, kw // 2] = 1
            return k
        iconv = pat.Const(fill=identity_kernel, channels=x.shape[1], kh=3, kw=3, dtype=x.dtype)

    ``dtype`` (an attribute like the others) casts the value.

    Parameters
    ----------
    value
        The constant's value (a number or an array); None: any constant (a source) or ``fill``'s.
    fill
        A function computing the value; its parameters are set by keyword, like attributes.
    loc
        Where it was written; by default the caller's line.
    **attrs
        Constraints on its ``shape``, ``dtype`` or ``ndim``, and ``fill``'s arguments.

    Raises
    ------
    InvalidOperandError
        Both ``value`` and ``fill``, a value that is not numeric, or a ``fill`` that is not callable.
    """

    __slots__ = ("value", "fill")
    kind = "Const"

    def __init__(self, value: Any = None, *, fill: Callable[..., Any] | None = None, loc: Loc | None = None,
                 **attrs: Any):
        loc = loc if loc is not None else user_location()
        if value is not None:
            if fill is not None:
                raise InvalidOperandError("a constant takes a value or a fill function, not both", loc)
            try:
                value = np.asarray(value)
            except (TypeError, ValueError) as err:
                raise InvalidOperandError(f"{value!r} is not a constant value: {err}", loc) from None
            if value.dtype == object:
                raise InvalidOperandError(f"{value!r} is not a numeric constant", loc)
        if fill is not None and not callable(fill):
            raise InvalidOperandError(f"fill must be a function computing the constant, not {fill!r}", loc)
        self.value: np.ndarray | None = value
        #: Computes the value from the other attributes' values (a target constant).
        self.fill = fill
        super().__init__((), attrs, loc)

    def settable_attrs(self) -> frozenset[str]:
        if self.fill is None:
            return super().settable_attrs()
        return super().settable_attrs() | frozenset(inspect.signature(self.fill).parameters)

    def describe(self) -> str:
        if self.fill is not None:
            return f"Const {getattr(self.fill, '__name__', 'fill')}(...)"
        if self.value is None:
            return "Const"
        return f"Const {self.value.tolist()!r}" if self.value.size <= 4 else f"Const {self.value.shape}"


# --- ops ---------------------------------------------------------------------------


class OpWithTrait:
    """Any op having ``trait``, in place of an op name: ``pat.Call(pat.OpWithTrait(ELEMENT_WISE), x)``.

    One object stands for one op: every call using it matches the same op, and
    a target call using it builds the op its source calls matched. Calling it builds a
    :class:`Call` of it.

    Parameters
    ----------
    trait
        The family, a :class:`~gsl_eq.frontend.spec.OpTrait` (``spec.OpTrait.ELEMENT_WISE``).

    Raises
    ------
    InvalidOperandError
        ``trait`` is not an :class:`~gsl_eq.frontend.spec.OpTrait`.
    """

    __slots__ = ("trait", "loc")

    def __init__(self, trait: spec.OpTrait):
        self.loc = user_location()
        if not isinstance(trait, spec.OpTrait):
            raise InvalidOperandError(f"{trait!r} is not an op trait; use spec.OpTrait.<NAME>", self.loc)
        self.trait = trait

    def __call__(self, *args: Any, **attrs: Any) -> Call:
        return Call(self, *args, **attrs)

    def __repr__(self) -> str:
        return f"<op with trait {self.trait.name} @ {os.path.basename(self.loc.filename)}:{self.loc.lineno}>"


class Call(Pattern):
    """A call of a Relax op: ``pat.Call("relax.nn.conv2d", x, w, strides=(1, 1))``.

    ``op`` is a Relax op name (the ``relax.`` prefix may be left out), an ``op``
    shorthand, or an :class:`OpWithTrait`. Arguments are the op's data inputs in
    order; keywords are its attributes (or ``shape``/``dtype``/``ndim`` of the
    result, in a source).

    Parameters
    ----------
    op
        The op: a Relax op name, an ``op`` shorthand or an :class:`OpWithTrait`.
    *args
        The op's data inputs, in order: patterns, or numbers, arrays (constants) and Python
        tuples (:class:`Tuple`).
    **attrs
        The op's attributes (a constraint in a source, the value in a target), or the result's
        ``shape``, ``dtype`` or ``ndim``.

    Raises
    ------
    UnknownOpError
        Relax has no op of that name.
    ArityError
        Not as many inputs as the op takes.
    UnknownAttributeError
        An attribute the op does not have.
    """

    __slots__ = ("op",)
    kind = "Call"

    def __init__(self, op: Any, /, *args: Any, **attrs: Any):
        loc = user_location()
        self.op: str | OpWithTrait = _resolve_op(op, loc)
        inputs = [as_pattern(a, loc) for a in args]
        if isinstance(self.op, OpWithTrait):
            arity = spec.trait_arity(self.op.trait)
            if len(inputs) != arity:
                raise ArityError(f"ops with trait {self.op.trait.name} take {arity} inputs, got {len(inputs)}", loc)
        else:
            sig = spec.signature(self.op)
            if len(inputs) != sig.num_inputs:
                names = f" ({', '.join(sig.inputs)})" if sig.inputs else ""
                raise ArityError(f"{self.op} takes {sig.num_inputs} inputs{names}, got {len(inputs)}", loc)
        super().__init__(inputs, attrs, loc)

    def op_attrs(self) -> frozenset[str]:
        """Attribute names of the op itself (not of the result's type)."""
        if isinstance(self.op, OpWithTrait):
            return frozenset(spec.trait_attrs(self.op.trait))
        return frozenset(spec.op_attrs(self.op))

    def readable_attrs(self) -> frozenset[str]:
        return self.op_attrs() | _VALUE_ATTRS

    def describe(self) -> str:
        op = f"<{self.op.trait.name}>" if isinstance(self.op, OpWithTrait) else self.op
        return f"Call {op}"


def _resolve_op(op: Any, loc: Loc) -> str | OpWithTrait:
    if isinstance(op, OpWithTrait):
        return op
    name = op if isinstance(op, (str, Pattern)) else getattr(op, "relax_name", op)  # an ``op`` shorthand
    if not isinstance(name, str):
        raise InvalidOperandError(f"{op!r} is not an op: give a Relax op name, an op.* shorthand or pat.OpWithTrait", loc)
    return spec.resolve_op(name, loc)


# --- tuples ------------------------------------------------------------------------


class Tuple(Pattern):
    """A tuple of values: ``pat.Tuple(a, b)``; a Python tuple passed to a call becomes one.

    Parameters
    ----------
    *fields
        The tuple's fields, in order (patterns, or values :class:`Call` accepts as inputs).
    loc
        Where it was written; by default the caller's line.
    """

    __slots__ = ()
    kind = "Tuple"

    def __init__(self, *fields: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        super().__init__([as_pattern(f, loc) for f in fields], {}, loc)

    def readable_attrs(self) -> frozenset[str]:
        return frozenset(("length",))

    def settable_attrs(self) -> frozenset[str]:
        return frozenset()


class GetItem(Pattern):
    """Item ``index`` of a tuple: ``pat.GetItem(split, 0)`` or ``split[0]``; the index may be an expression.

    Parameters
    ----------
    tup
        The tuple-valued pattern.
    index
        A non-negative int, or an attribute expression (a variadic's index).

    Raises
    ------
    InvalidOperandError
        An index that is neither, or a negative one.
    """

    __slots__ = ()
    kind = "GetItem"

    def __init__(self, tup: Any, index: Any):
        loc = user_location()
        if isinstance(index, bool) or not isinstance(index, (int, AttrExpr)):
            raise InvalidOperandError(f"tuple index {index!r} must be an int or an attribute expression", loc)
        if isinstance(index, int) and index < 0:
            raise InvalidOperandError(f"tuple index {index} is negative; Relax tuple items count from 0", loc)
        super().__init__([as_pattern(tup, loc)], {"index": index}, loc)

    def readable_attrs(self) -> frozenset[str]:
        return _VALUE_ATTRS | {"index"}

    def describe(self) -> str:
        return f"GetItem [{self.attrs['index']!r}]"


# --- choices -----------------------------------------------------------------------


def _common_attrs(patterns: Sequence[Pattern]) -> frozenset[str]:
    return frozenset.intersection(*(p.readable_attrs() for p in patterns))


class Cond(Pattern):
    """``then`` if ``pred`` holds, else ``orelse``; ``pred`` reads patterns matched before.

    Parameters
    ----------
    pred
        A boolean attribute expression.
    then, orelse
        The patterns for either case.
    """

    __slots__ = ("pred", "then", "orelse")
    kind = "Cond"

    def __init__(self, pred: Any, then: Any, orelse: Any):
        loc = user_location()
        self.pred = to_attr(pred, loc)
        self.then = as_pattern(then, loc)
        self.orelse = as_pattern(orelse, loc)
        super().__init__((self.then, self.orelse), {}, loc)
        self.free = self.free | self.pred.free

    def readable_attrs(self) -> frozenset[str]:
        return _common_attrs((self.then, self.orelse))

    def settable_attrs(self) -> frozenset[str]:
        return frozenset()


class Alt(Pattern):
    """The first of several alternatives that matches (source only); a target follows it with
    :class:`Match`.

    Parameters
    ----------
    *alts
        Two or more patterns, tried in order.

    Raises
    ------
    ArityError
        Fewer than two alternatives.
    """

    __slots__ = ("alts",)
    kind = "Alt"

    def __init__(self, *alts: Any):
        loc = user_location()
        if len(alts) < 2:
            raise ArityError(f"pat.Alt needs at least two alternatives, got {len(alts)}", loc)
        self.alts = tuple(as_pattern(a, loc) for a in alts)
        super().__init__(self.alts, {}, loc)

    def readable_attrs(self) -> frozenset[str]:
        return _common_attrs(self.alts)

    def settable_attrs(self) -> frozenset[str]:
        return frozenset()


class Match(Pattern):
    """In a target: ``targets[k]`` where ``k`` is the alternative the source's ``alt`` matched.

    Parameters
    ----------
    alt
        The source's :class:`Alt`.
    targets
        One target pattern for each of ``alt``'s alternatives, in their order.

    Raises
    ------
    ArityError
        Not one target for each alternative.
    """

    __slots__ = ("alt", "targets")
    kind = "Match"

    def __init__(self, alt: Alt, targets: Sequence[Any]):
        loc = user_location()
        if not isinstance(alt, Alt):
            raise InvalidOperandError(f"pat.Match needs a pat.Alt to follow, not {alt!r}", loc)
        targets = tuple(as_pattern(t, loc) for t in targets)
        if len(targets) != len(alt.alts):
            raise ArityError(f"pat.Match over {alt!r} with {len(alt.alts)} alternatives has {len(targets)} targets", loc)
        self.alt = alt
        self.targets = targets
        super().__init__(targets, {}, loc)

    def readable_attrs(self) -> frozenset[str]:
        return _common_attrs(self.targets)

    def settable_attrs(self) -> frozenset[str]:
        return frozenset()


# --- variadics ---------------------------------------------------------------------


class Variadic(Pattern):
    """A run of instances of a template subgraph: the fields of a tuple, or variadic outputs.

    Patterns the templates read but that are not templates are shared by all instances.
    ``v(template, i)`` is the ``template`` pattern of instance ``i``.

    Parameters
    ----------
    field
        The pattern each instance contributes (a field of the tuple, or an output).
    templates
        The patterns copied for every instance, ``field`` among them.
    first
        Existing patterns serving as the first instance, in the order of ``templates``; optional.
    index
        An :class:`~gsl_eq.frontend.attr.Symbol` bound to the instance number (from 0) in the
        templates' attributes.
    length
        The number of instances (an int or an attribute expression); needed in a target.
    min_len
        The fewest instances a source match may have.

    Raises
    ------
    VariadicError
        ``field`` is not a template, a template the field does not read, a pattern that reads a
        template without being one, or a ``first`` not of the templates' form.

    Examples
    --------
    Two or more matmuls of one input, by weights of one height; the first instance is named, so
    that the others can read its attributes::

        x, w1 = pat.Wildcard(), pat.Variable(ndim=2)
        w = pat.Variable(shape=(w1.shape[0], None), dtype=w1.dtype)
        mm1 = op.MatMul(x, w1)
        mm = op.MatMul(x, w, out_dtype=mm1.out_dtype)
        src = pat.Variadic(mm, templates=[mm, w], first=[mm1, w1], min_len=2)
        i = attr.Symbol()
        weights = src(w, i)             # instance i's weight, in a target
        concat = op.Concatenate(pat.Variadic(weights, templates=[weights], index=i,
                                             length=src.length), axis=1)
    """

    __slots__ = ("field", "templates", "first", "index", "min_len")
    kind = "Variadic"

    def __init__(
        self,
        field: Pattern,
        templates: Sequence[Pattern] = (),
        first: Sequence[Pattern] = (),
        index: Symbol | None = None,
        length: Any = None,
        min_len: int | None = None,
    ):
        loc = user_location()
        self.field = as_pattern(field, loc)
        self.templates = tuple(templates)
        self.first = tuple(first)
        self.index = index
        self.min_len = min_len
        self._check(loc)
        first_field = (self.first[self.templates.index(self.field)],) if self.first else ()
        super().__init__(first_field + (self.field,), {} if length is None else {"length": length}, loc)
        index_set = frozenset((index,)) if index is not None else frozenset()
        self.free = frozenset().union(
            *(p.free for p in first_field), self.field.free - index_set, *(e.free for e in self.attrs.values())
        )

    def _check(self, loc: Loc) -> None:
        for p in (*self.templates, *self.first):
            if not isinstance(p, Pattern):
                raise VariadicError(f"templates and first must be patterns, not {p!r}", loc)
        if not any(t is self.field for t in self.templates):
            raise VariadicError(f"the field {self.field!r} of a variadic must be one of its templates", loc)
        if len({id(t) for t in self.templates}) != len(self.templates):
            raise VariadicError("a variadic lists the same template twice", loc)
        if self.index is not None and not isinstance(self.index, Symbol):
            raise VariadicError(f"the index of a variadic must be an attr.Symbol(), not {self.index!r}", loc)
        if self.min_len is not None and (isinstance(self.min_len, bool) or not isinstance(self.min_len, int) or self.min_len < 0):
            raise VariadicError(f"min_len must be a non-negative int, not {self.min_len!r}", loc)
        ancestors = _ancestors(self.field)
        template_ids = {id(t) for t in self.templates}
        for t in self.templates:
            if t not in ancestors:
                raise VariadicError(f"template {t!r} is not part of the field {self.field!r}: the field does not read it", loc)
        for p in ancestors:
            if id(p) not in template_ids:
                for q in p.inputs:
                    if id(q) in template_ids:
                        raise VariadicError(
                            f"{p!r} reads template {q!r} but is not a template itself, so it cannot be shared by all instances; "
                            "list it in templates", loc)
        if self.first:
            self._check_first(loc)

    def _check_first(self, loc: Loc) -> None:
        if len(self.first) != len(self.templates):
            raise VariadicError(f"first has {len(self.first)} patterns but there are {len(self.templates)} templates", loc)
        instance = {id(t): f for t, f in zip(self.templates, self.first)}
        for t, f in zip(self.templates, self.first):
            if id(f) in instance:
                raise VariadicError(f"{f!r} is both a template and a first-instance pattern", loc)
            same_kind = type(f) is type(t) and (not isinstance(t, Call) or f.op == t.op)
            if not same_kind or len(f.inputs) != len(t.inputs):
                raise VariadicError(f"first-instance pattern {f!r} does not have the form of its template {t!r}", loc)
            for pos, (fi, ti) in enumerate(zip(f.inputs, t.inputs)):
                expected = instance.get(id(ti), ti)
                if fi is not expected:
                    raise VariadicError(
                        f"input {pos} of first-instance pattern {f!r} is {fi!r}, but its template reads {ti!r}, "
                        f"so the first instance must read {expected!r}", loc)

    def __call__(self, template: Pattern, index: Any) -> Instance:
        """``template``'s pattern in instance ``index`` of this variadic (an :class:`Instance`).

        Parameters
        ----------
        template
            One of the variadic's templates.
        index
            The instance number: an int or an attribute expression.
        """
        return Instance(self, template, index, user_location())

    def readable_attrs(self) -> frozenset[str]:
        return frozenset(("length",))

    def settable_attrs(self) -> frozenset[str]:
        return frozenset(("length",))

    def describe(self) -> str:
        return f"Variadic of {self.field.describe()}"


class Instance(Pattern):
    """Instance access ``v(template, index)``: the copy of ``template`` in instance ``index`` of ``v``.

    Parameters
    ----------
    variadic
        The :class:`Variadic`.
    template
        One of its templates.
    index
        The instance number: an int or an attribute expression.
    loc
        Where it was written; by default the caller's line.

    Raises
    ------
    VariadicError
        ``template`` is not one of ``variadic``'s templates.
    """

    __slots__ = ("variadic", "template", "index_expr")
    kind = "Instance"

    def __init__(self, variadic: Variadic, template: Pattern, index: Any, loc: Loc | None = None):
        loc = loc if loc is not None else user_location()
        if not any(t is template for t in variadic.templates):
            raise VariadicError(f"{template!r} is not a template of {variadic!r}; its templates are {list(variadic.templates)}", loc)
        self.variadic = variadic
        self.template = template
        self.index_expr = to_attr(index, loc)
        super().__init__((), {}, loc)
        self.free = self.index_expr.free

    def readable_attrs(self) -> frozenset[str]:
        return self.template.readable_attrs()

    def settable_attrs(self) -> frozenset[str]:
        return frozenset()

    def describe(self) -> str:
        return f"Instance [{self.index_expr!r}] of {self.template.describe()}"


def _ancestors(p: Pattern) -> set[Pattern]:
    """R(p): every pattern with a path to ``p``, ``p`` included."""
    seen: set[Pattern] = set()
    stack = [p]
    while stack:
        q = stack.pop()
        if q not in seen:
            seen.add(q)
            stack.extend(q.inputs)
    return seen


def same_attr(p: Pattern, names: Sequence[str]) -> dict[str, GetAttr]:
    """``{name: p.name}`` for each name: ``op.Conv2D(x, w, **pat.same_attr(conv1, ["strides"]))``.

    Parameters
    ----------
    p
        The pattern whose attributes are read.
    names
        The attribute names.

    Raises
    ------
    UnknownAttributeError
        A name ``p`` has no attribute of.
    """
    loc = user_location()
    return {name: GetAttr(p, name, loc) for name in names}
