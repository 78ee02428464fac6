"""The last word before :func:`~gsl_eq.optimize` returns: the result builds, runs and computes
what the input computes.

Costs are predictions and rewrites are programs: a rule may be wrong, and an extractor may pick
a form TVM cannot build. So every result is built with TVM and run once on the input's random
inputs, and its outputs are compared with the input's (where TVM cannot build the input, with
those of the input made buildable by :func:`gsl_eq.rules.legalize`).

    reference = Reference.of(wl)
    reason = reference.mismatch(candidate)    # None when the candidate passes
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..errors import WorkloadError
from ..workload import Workload

#: Relative tolerance per floating dtype: rewrites reassociate and fuse, so rounding differs.
#: An element passes when ``|got - expected| <= rtol * (|expected| + max |expected|)`` (the
#: second term keeps near-zero elements of a large output from failing on rounding alone).
#: Integers and booleans compare exactly; NaN equals NaN.
TOLERANCE = {"float64": 1e-6, "float32": 1e-3, "float16": 2e-2, "bfloat16": 5e-2}
#: The seed of the random inputs the check runs on.
SEED = 20_251


@dataclass
class Reference:
    """The outputs a candidate must reproduce, on ``inputs``; ``label`` says what computed
    them. ``outputs`` is None when no form of the input could be built (``reason`` says why)."""

    inputs: dict[str, np.ndarray]
    outputs: tuple[np.ndarray, ...] | None
    label: str
    reason: str = ""

    #: The workload's content key (:meth:`Workload.content_key`): verdicts are remembered under it.
    key: tuple = ()
    #: The seconds computing the outputs took (building and running).
    seconds: float = 0.0

    @staticmethod
    def of(wl: Workload) -> "Reference":
        """Run ``wl`` (a copy, built here), or its legalized form when TVM cannot build it; both
        built to run once (:meth:`Workload.build`'s ``once``: it is only computed, never returned).
        The last few references are remembered by content:
        greedy orderings of one workload share one."""
        key = wl.content_key()
        if key not in _references:
            start = time.perf_counter()
            _references[key] = Reference._compute(wl)
            _references[key].key, _references[key].seconds = key, time.perf_counter() - start
            while len(_references) > REMEMBERED_REFERENCES:
                _references.popitem(last=False)
        _references.move_to_end(key)
        return _references[key]

    @staticmethod
    def _compute(wl: Workload) -> "Reference":
        inputs = wl.random_inputs(seed=SEED)
        first = "; ".join(map(str, wl.unfolded))  # folding found what TVM cannot build: no need to try
        if not first:
            try:
                return Reference(inputs, _built_and_run(wl, inputs), "input")
            except WorkloadError as error:
                first = _first_line(error)
        from .. import rules
        from ..greedy.rewriter import greedy

        legal = greedy(wl, rules.legalize(), fold_params=False).workload
        try:
            return Reference(inputs, _built_and_run(legal, inputs), "legalized input")
        except WorkloadError as error:
            return Reference(inputs, None, "none", f"TVM cannot build the input ({first}), nor legalized "
                                                   f"({_first_line(error)})")

    def predicted_check_seconds(self) -> float:
        """What checking a rewrite of the reference's workload is predicted to take: what computing the
        reference took, with a margin (:data:`CHECK_MARGIN`)."""
        return CHECK_MARGIN * self.seconds

    def mismatch(self, candidate: Workload) -> str | None:
        """Why ``candidate`` fails the check (it does not build, run, or compute the reference's
        outputs), or None when it passes. Without reference outputs, building and running is the check.

        A copy of the candidate is built and run: by TVM's pipeline as its user's build runs it, but
        for the CPU as a build that runs once (:meth:`Workload.once_target`: without LLVM's
        optimizations, most of an optimized build's time, unless the model's run would cost more), so
        the check costs little; the candidate is left unbuilt for its user.
        A graph with the same content as one checked before gets that one's verdict unbuilt."""
        key = (self.key, candidate.content_key())
        if key not in _verdicts:
            _verdicts[key] = self._check(candidate)
            while len(_verdicts) > REMEMBERED_VERDICTS:
                _verdicts.popitem(last=False)
        return _verdicts[key]

    def _check(self, candidate: Workload) -> str | None:
        try:
            got = _built_and_run(candidate, self.inputs, once=False)
        except Exception as error:  # noqa: BLE001 - whatever TVM raises, the candidate fails
            return f"{type(error).__name__}: {_first_line(error)}"
        if self.outputs is None:
            return None
        return compare(got, self.outputs)


#: How many references and verdicts are remembered (by content) for later calls.
REMEMBERED_REFERENCES = 4
REMEMBERED_VERDICTS = 256
_references: OrderedDict[tuple, Reference] = OrderedDict()
_verdicts: OrderedDict[tuple, str | None] = OrderedDict()


#: A rewrite's check is predicted at this many times what computing its reference took
#: (:meth:`Reference.predicted_check_seconds`): a result's calls and build differ from its input's (TENSAT's
#: BERT: its reference 0.32 s, the check of its result under TASO's rules 0.35 s).
CHECK_MARGIN = 1.5


def _built_and_run(wl: Workload, inputs: dict[str, np.ndarray], once: bool = True) -> tuple[np.ndarray, ...]:
    """``wl``'s outputs on ``inputs``, from a copy built to run once (``once``: by TVM's pipeline
    without constant folding; else by the pipeline a user's build runs, for :meth:`Workload.once_target`)."""
    copy = Workload(wl.mod, wl.params)
    return run(copy.build(once=True) if once else copy.build(copy.once_target()), inputs)


def run(wl: Workload, inputs: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """``wl``'s outputs on ``inputs`` (built first if it has no build yet)."""
    value = wl(**inputs)
    return (value,) if isinstance(value, np.ndarray) else tuple(value)


def compare(got: tuple[np.ndarray, ...], expected: tuple[np.ndarray, ...]) -> str | None:
    """What differs between two output tuples (count, shape, dtype, values), or None."""
    if len(got) != len(expected):
        return f"{len(got)} outputs, the input has {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected)):
        if g.shape != e.shape or g.dtype != e.dtype:
            return f"output {k} is {g.shape} {g.dtype}, the input's is {e.shape} {e.dtype}"
        rtol = TOLERANCE.get(str(e.dtype))
        if rtol is None:
            bad = ~((g == e) | (_isnan(g) & _isnan(e)))
        else:
            g64, e64 = g.astype(np.float64), e.astype(np.float64)
            finite = np.isfinite(e64)
            scale = np.max(np.abs(e64[finite]), initial=0.0)
            with np.errstate(invalid="ignore"):
                close = np.abs(g64 - e64) <= rtol * (np.abs(e64) + scale)
            bad = ~(close | (g64 == e64) | (np.isnan(g64) & np.isnan(e64)))
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            return (f"output {k} differs at {bad.sum()} of {bad.size} elements (first at {where}: "
                    f"{g[where]!r}, the input's {e[where]!r})")
    return None


def _isnan(a: np.ndarray) -> np.ndarray:
    return np.isnan(a) if np.issubdtype(a.dtype, np.floating) else np.zeros(a.shape, bool)


def _first_line(error: BaseException) -> str:
    return next((line.strip() for line in str(error).splitlines() if line.strip()), "")[:300]
