"""What attribute expressions know of patterns, below both: ``p.shape`` reads an attribute of the node
pattern ``p`` matched, and a pattern used where an attribute value belongs is an error."""

from __future__ import annotations

from .errors import Loc


class PatternBase:
    """The base of every pattern (:class:`~gsl_eq.frontend.pat.Pattern` derives from it and defines
    the rest): what :class:`~gsl_eq.frontend.attr.GetAttr` asks of the pattern it reads."""

    __slots__ = ()
    free: frozenset

    def check_readable(self, name: str, loc: Loc) -> None:
        """Raise UnknownAttributeError if ``p.name`` cannot be read."""
        raise NotImplementedError
