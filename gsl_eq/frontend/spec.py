"""What the frontend knows about ops: their names, inputs, attributes and traits.

Op signatures come from the graph layer (:func:`gsl_eq.graph.ops.signature`);
this module adds op traits, used by ``pat.OpWithTrait`` to match any op of a
family, and the attribute names every value has through its type.
"""

from __future__ import annotations

import difflib
import functools
from enum import Enum

from ..graph import ops
from .errors import Loc, UnknownOpError

#: Attributes every tensor value has through its type.
TYPE_ATTRS: tuple[str, ...] = ("shape", "dtype", "ndim")


class OpTrait(Enum):
    """A family of ops sharing a property that rules can rely on."""

    #: One input; each output element is a function of the input element at the same position.
    ELEMENT_WISE = "element_wise"
    #: Two inputs, broadcast against each other, combined element by element.
    BROADCASTING = "broadcasting"
    #: Broadcasting ops whose two inputs can be swapped.
    COMMUTATIVE = "commutative"
    #: Broadcasting ops for which (a op b) op c == a op (b op c).
    ASSOCIATIVE = "associative"
    #: One input reduced over ``axis`` (keeping the reduced dims if ``keepdims``).
    REDUCTION = "reduction"


_COMMUTATIVE = (
    "add", "multiply", "maximum", "minimum", "equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
)
_ASSOCIATIVE = (
    "add", "multiply", "maximum", "minimum",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
)

_TRAIT_OPS: dict[OpTrait, tuple[str, ...]] = {
    OpTrait.ELEMENT_WISE: tuple("relax." + n for n in (
        "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_not", "ceil", "cos", "cosh",
        "erf", "exp", "floor", "isfinite", "isinf", "isnan", "log", "logical_not", "negative", "round",
        "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh", "trunc",
        "clip", "astype", "nn.relu", "nn.leakyrelu", "nn.gelu", "nn.gelu_tanh", "nn.silu", "nn.selu",
        "nn.softplus",
    )),
    OpTrait.BROADCASTING: tuple("relax." + n for n in _COMMUTATIVE + (
        "subtract", "divide", "floor_divide", "floor_mod", "mod", "power", "less", "less_equal",
        "greater", "greater_equal", "left_shift", "right_shift", "atan2", "log_add_exp",
    )),
    OpTrait.COMMUTATIVE: tuple("relax." + n for n in _COMMUTATIVE),
    OpTrait.ASSOCIATIVE: tuple("relax." + n for n in _ASSOCIATIVE),
    OpTrait.REDUCTION: tuple("relax." + n for n in (
        "sum", "prod", "mean", "max", "min", "std", "variance", "median", "argmax", "argmin",
    )),
}


def resolve_op(name: str, loc: Loc | None = None) -> str:
    """The full Relax name of op ``name`` (``"nn.conv2d"`` -> ``"relax.nn.conv2d"``).

    Parameters
    ----------
    name
        The op's name, with or without the ``relax.`` prefix.
    loc
        Where it was written, for the error's message.

    Raises
    ------
    UnknownOpError
        Relax has no such op; the message suggests close names.
    """
    full = name if name.startswith("relax.") else "relax." + name
    if full not in _op_set():
        _op_set.cache_clear()  # ops of lazily imported Relax modules appear later
    if full not in _op_set():
        close = difflib.get_close_matches(full, _op_set(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownOpError(f"unknown op {name!r}: Relax has no op of that name{hint}", loc)
    return full


def signature(op: str) -> ops.OpSignature:
    """The signature of a (fully named) Relax op (:func:`gsl_eq.graph.ops.signature`).

    Parameters
    ----------
    op
        The op's full Relax name (``"relax.nn.conv2d"``).
    """
    return ops.signature(op)


def op_attrs(op: str) -> tuple[str, ...]:
    """Attribute names of a Relax op: the keyword names of its constructor.

    Parameters
    ----------
    op
        The op's full Relax name.
    """
    return tuple(ops.signature(op).attrs)


def ops_with_trait(trait: OpTrait) -> tuple[str, ...]:
    """The Relax ops (full names) that have ``trait``.

    Parameters
    ----------
    trait
        The :class:`OpTrait`.
    """
    return _TRAIT_OPS[trait]


def has_trait(op: str, trait: OpTrait) -> bool:
    """Whether Relax op ``op`` has ``trait``.

    Parameters
    ----------
    op
        The op's full Relax name.
    trait
        The :class:`OpTrait`.
    """
    return op in _TRAIT_OPS[trait]


def traits(op: str) -> frozenset[OpTrait]:
    """Every trait of Relax op ``op``.

    Parameters
    ----------
    op
        The op's full Relax name.
    """
    return frozenset(t for t, names in _TRAIT_OPS.items() if op in names)


@functools.cache
def trait_arity(trait: OpTrait) -> int:
    """The number of inputs every op with ``trait`` takes.

    Parameters
    ----------
    trait
        The :class:`OpTrait`.
    """
    (arity,) = {ops.signature(n).num_inputs for n in _TRAIT_OPS[trait]}
    return arity


@functools.cache
def trait_attrs(trait: OpTrait) -> tuple[str, ...]:
    """Attribute names shared by every op with ``trait`` (readable on a trait call).

    Parameters
    ----------
    trait
        The :class:`OpTrait`.
    """
    common = set.intersection(*(set(op_attrs(n)) for n in _TRAIT_OPS[trait]))
    return tuple(sorted(common))


@functools.cache
def _op_set() -> frozenset[str]:
    return frozenset(ops.op_names())
