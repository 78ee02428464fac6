"""Errors of the GSL frontend, each pointing at the user's line that caused it.

Every pattern and attribute expression records where the user created it
(:func:`user_location`). A check that fails raises the subclass of
:class:`GSLError` for its kind of mistake; the message starts with the
``file:line`` of the element at fault and names that element.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass

from ..errors import GslEqError

_FRONTEND_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@dataclass(frozen=True)
class Loc:
    """A place in the user's source code: file and line."""

    filename: str
    lineno: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"


def user_location() -> Loc:
    """The innermost calling frame outside the frontend: the line that builds a rule element.

    Only the frontend's own frames are skipped, so rules written inside gsl_eq
    (the rule library) still point at their own lines.
    """
    frame = sys._getframe(1)
    while frame.f_back is not None and _in_frontend(frame.f_code.co_filename):
        frame = frame.f_back
    return Loc(frame.f_code.co_filename, frame.f_lineno)


@functools.lru_cache(maxsize=1024)
def _in_frontend(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_FRONTEND_DIR)


class RuleError(GslEqError):
    """A GSL rule is malformed. ``loc`` is where the faulty element was written. Every error of the
    rule language derives from it; :class:`~gsl_eq.errors.GslEqError` is the one base of gsl_eq's errors."""

    def __init__(self, message: str, loc: Loc | None = None):
        self.loc = loc if loc is not None else user_location()
        self.detail = message
        super().__init__(f"{self.loc}: {message}")


#: GSL's name for :class:`RuleError` (``from gsl_eq import GSLError``): the same class.
GSLError = RuleError


class UnknownOpError(GSLError, AttributeError):
    """A call names an op that Relax does not have (or ``op.X`` is not a shorthand)."""


class ArityError(GSLError):
    """A call, alternative or match has the wrong number of operands."""


class UnknownAttributeError(GSLError, AttributeError):
    """An attribute name the pattern's op or kind does not have (set or read)."""


class MissingAttributeError(GSLError):
    """A target call leaves out an attribute its op requires."""


class InvalidOperandError(GSLError, TypeError):
    """A value that is neither a pattern nor an attribute expression where one is needed."""


class ExpressionUsageError(GSLError, TypeError):
    """A Python construct that cannot work on a GSL expression (``bool``, ``len``, ``in``, iteration)."""


class AttributeOrderError(GSLError):
    """An attribute expression reads ``p.l`` where ``p`` is not matched (or built) yet."""


class UnboundSymbolError(GSLError):
    """A symbol is used where no variadic, reduction or map binds it."""


class DisconnectedSourceError(GSLError):
    """The source's outputs violate the connectivity condition of a substitution rule."""


class TargetInputError(GSLError):
    """The target reads a pattern that is not an input of the source."""


class OutputCountError(GSLError):
    """Source and target outputs do not pair up one to one."""


class VariadicError(GSLError):
    """A variadic pattern's field, templates, first instance, index or length are inconsistent."""


class SourcePatternError(GSLError):
    """A pattern that cannot be matched appears in a source."""


class TargetPatternError(GSLError):
    """A pattern that cannot be built appears in a target."""


class EvaluationError(GSLError):
    """An attribute expression cannot be evaluated in the given environment."""
