"""Seconds measured once per op call and kept: the measured cost models' memory (``measured``:
TVM's default CPU build; ``gpu-measured``: PyTorch on a device).

A call is keyed by where it ran, its op, attributes and input types (:func:`call_key`);
:class:`MeasuredTimes` keeps the seconds in memory and in a JSON file on disk that every instance
and process shares, and charges an estimate, with a warning, for a call that cannot be measured.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..measure.disk_cache import JsonCache
from ..graph.types import TensorType, TupleType, Type

__all__ = ["MeasuredTimes", "TimedCalls", "call_key", "call_name", "random_input"]


class MeasuredTimes:
    """Seconds of calls measured once each, by key: kept in memory and in a JSON file on disk that
    other instances and processes share (a measurement is made only when neither has it). A call
    that cannot be measured is charged an estimate instead, with a warning, counted in
    ``failures`` and never written; ``measurements`` counts the timings actually run."""

    def __init__(self, cache_dir: Path, file: str, format: int, estimate: str = "the estimate"):
        self.cache = JsonCache(cache_dir, file, format, field="times")
        self.estimate = estimate
        self.measurements = 0
        self.failures = 0
        self._failed: dict[str, float] = {}
        self._times: dict[str, float] = self._read()

    def seconds(self, key: str, measure: Callable[[], float], estimate: Callable[[], float], call: str) -> float:
        """The seconds of ``key``: remembered, else ``measure()`` (written to the cache), else, when
        measuring raises, ``estimate()`` with a warning naming ``call``."""
        if key in self._times:
            return self._times[key]
        if key in self._failed:
            return self._failed[key]
        self._times.update(self._read())  # another instance may have measured it meanwhile
        if key in self._times:
            return self._times[key]
        try:
            seconds = float(measure())
        except Exception as err:  # noqa: BLE001 - any failure to run the call: estimate, don't break extraction
            self.failures += 1
            guess = self._failed[key] = float(estimate())
            first = (str(err).strip().splitlines() or [type(err).__name__])[-1]
            warnings.warn(f"cannot measure {call} ({first}); using {self.estimate} {guess:.3g} s",
                          RuntimeWarning, stacklevel=3)
            return guess
        self.measurements += 1
        self._times[key] = seconds
        self._times.update({k: float(v) for k, v in self.cache.merge({key: seconds}).items()})
        return seconds

    def _read(self) -> dict[str, float]:
        """The cache on disk; empty when missing or unreadable."""
        return {k: float(v) for k, v in self.cache.read().items()}


class TimedCalls:
    """What a measured cost model tells of its :class:`MeasuredTimes` (``self._times``)."""

    _times: MeasuredTimes

    @property
    def cache_path(self) -> Path:
        """The JSON file the measured times are kept in."""
        return self._times.cache.path

    @property
    def measurements(self) -> int:
        """Timings this instance ran (not read from the cache)."""
        return self._times.measurements

    @property
    def failures(self) -> int:
        """Calls this instance could not measure, charged the estimate (with a warning)."""
        return self._times.failures


def call_key(scope: str, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type]) -> str:
    """A call's key in a :class:`MeasuredTimes`: where it runs (``scope``), op, sorted attributes
    and input types, as stable JSON."""
    return json.dumps([scope, op, sorted((k, v) for k, v in attrs.items()), [_type_key(t) for t in inputs]],
                      separators=(",", ":"), default=str)


def call_name(op: str, attrs: Mapping[str, Any], inputs: Sequence[Type]) -> str:
    """A call as warnings name it: op, attributes and input types."""
    return f"{op}{dict(attrs)} on {[str(t) for t in inputs]}"


def _type_key(ty: Type) -> str:
    if isinstance(ty, TupleType):
        return "(" + ",".join(_type_key(f) for f in ty.fields) + ")"
    return f"{ty.dtype}[{','.join(map(str, ty.shape))}]"


def random_input(ty: TensorType, rng: np.random.Generator) -> np.ndarray:
    """Values valid for any op: floats in [0.1, 0.9) (inside the domain of log, sqrt, acos, ...),
    zeros for integers and booleans (always valid indices)."""
    if "float" in ty.dtype:
        return rng.uniform(0.1, 0.9, ty.shape).astype(ty.dtype)
    return np.zeros(ty.shape, dtype=ty.dtype)
