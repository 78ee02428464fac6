"""The limits every optimizer honours, and why a run stopped.

Saturate mode (:class:`~gsl_eq.egraph.Runner`) and greedy mode
(:func:`~gsl_eq.greedy.greedy`) take the same three limits — a size in nodes, a
number of iterations (greedy: passes), seconds of wall time — and report which one
stopped them, or that they ran out of rewrites.
"""

from __future__ import annotations

import contextlib
import gc
import math
from enum import Enum
from numbers import Integral, Real

from typing import Iterator

from ..errors import GslEqError


#: The size both modes stop growing at unless told otherwise (e-nodes, or graph nodes in greedy mode).
DEFAULT_NODE_LIMIT = 50_000


class StopReason(str, Enum):
    SATURATED = "saturated"
    NODE_LIMIT = "node limit"
    ITERATION_LIMIT = "iteration limit"
    TIME_LIMIT = "time limit"
    #: Greedy mode's rules came back to a graph they had made before (a rule and its inverse, a
    #: commutation): going on would only repeat themselves.
    CYCLE = "cycle"


class LimitError(GslEqError, ValueError):
    """A limit that is not a positive number of the right kind."""


def check_count(name: str, value: object) -> int:
    """``value`` if it is a positive integer (node and iteration limits), else a LimitError naming it."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise LimitError(f"{name} must be a positive integer; got {_shown(value)}")
    return int(value)


def check_seconds(name: str, value: object) -> float:
    """``value`` if it is a positive, finite number of seconds, else a LimitError naming it."""
    if isinstance(value, bool) or not isinstance(value, Real) or not (0 < value < math.inf):
        raise LimitError(f"{name} must be a positive, finite number of seconds; got {_shown(value)}")
    return float(value)


def _shown(value: object) -> str:
    return f"the {type(value).__name__} {value!r}"


@contextlib.contextmanager
def callers_heap_frozen() -> Iterator[None]:
    """Within the block, Python's cycle collector skips the objects that existed before it.

    A full collection scans every object of the process: with TVM loaded, some 300,000 of
    them, 0.2 s, which would otherwise fall inside a time-limited call (the first one in a
    process, as a rule). Objects made within the block are collected as usual; on leaving,
    the old ones are handed back to the collector (:func:`gc.unfreeze`). Where the caller
    has frozen objects itself (or an enclosing call has), the block leaves them as they are.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
