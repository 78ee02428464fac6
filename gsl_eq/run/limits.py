"""The limits every optimizer honours, and why a run stopped.

Saturate mode (:class:`~gsl_eq.egraph.Runner`) and greedy mode
(:func:`~gsl_eq.greedy.greedy`) take the same three limits — a size in nodes, a
number of iterations (greedy: passes), seconds of wall time — and report which one
stopped them, or that they ran out of rewrites.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
from dataclasses import dataclass
from enum import Enum
from numbers import Integral, Real

from typing import Any, Iterator

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


#: The iterations (greedy mode: passes) both modes stop after unless told otherwise.
DEFAULT_ITER_LIMIT = 30
#: The seconds a call may take unless told otherwise.
DEFAULT_TIME_LIMIT = 60.0


@dataclass(frozen=True)
class Limits:
    """The limits :func:`~gsl_eq.optimizer.optimize`, :func:`~gsl_eq.sweeps.driver.sweep` and
    :class:`~gsl_eq.egraph.Runner` share: a size, a number of iterations, seconds of wall time.

    Each takes them as one object (``limits=``) or as keyword arguments, which override its fields::

        fast = Limits(node_limit=5_000, time_limit=10)
        optimize(wl, limits=fast)
        optimize(wl, limits=fast, time_limit=20)   # the same, with 20 s

    Parameters
    ----------
    node_limit:
        E-nodes the e-graph may hold (greedy mode: nodes of the graph); a memory budget.
    iter_limit:
        Iterations of saturation (greedy mode: passes over the rules).
    time_limit:
        Seconds the whole call may take.
    """

    node_limit: int = DEFAULT_NODE_LIMIT
    iter_limit: int = DEFAULT_ITER_LIMIT
    time_limit: float = DEFAULT_TIME_LIMIT

    def __post_init__(self) -> None:
        object.__setattr__(self, "node_limit", check_count("node_limit", self.node_limit))
        object.__setattr__(self, "iter_limit", check_count("iter_limit", self.iter_limit))
        object.__setattr__(self, "time_limit", check_seconds("time_limit", self.time_limit))

    @classmethod
    def of(cls, limits: Limits | None = None, **given: Any) -> Limits:
        """``limits`` (default: the defaults) with the ``given`` fields that are not None in their place;
        a LimitError names a field that is not a positive number of the right kind."""
        base = cls() if limits is None else limits
        if not isinstance(base, Limits):
            raise LimitError(f"limits must be a gsl_eq.Limits; got {_shown(base)}")
        chosen = {name: value for name, value in given.items() if value is not None}
        return dataclasses.replace(base, **chosen) if chosen else base
