"""Measured selection: time candidate workloads as TVM builds them and keep the fastest.

A cost model only predicts; what TVM runs decides. Each candidate is built through a
:class:`~gsl_eq.measure.schedule_db.ScheduleDatabase` (so a kernel two candidates share gets one
schedule), then all are timed on the same random inputs in alternating rounds (the order
reverses each round, so drift on the machine falls on every candidate alike), and each
candidate's median round is its time.

Schedules are drawn at random, and two draws can rank two graphs differently. So a candidate
is preferred to the input only when it is faster beyond the noise (:func:`faster`) under the
database's draw and again, timed anew beside the input, under an independently seeded one
(:func:`confirm`).

    timed = time_candidates([("input", wl), ("extracted", out)], ScheduleDatabase())
    verdict = confirm(timed[1], timed[0], db)    # verdict.confirmed: faster under both draws
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

from ..measure.schedule_db import ScheduleDatabase
from ..workload import Workload

ROUNDS = 5
NUMBER = 10
#: The least relative difference counted as real, whatever the rounds' spread.
NOISE_FLOOR = 0.02


@dataclass
class Candidate:
    """One timed candidate: where it comes from, the workload, its median seconds per run and
    every round's time."""

    label: str
    workload: Workload
    seconds: float
    rounds: list[float]


def time_candidates(candidates: Sequence[tuple[str, Workload]], schedules: ScheduleDatabase,
                    rounds: int = ROUNDS, number: int = NUMBER, seed: int = 0) -> list[Candidate]:
    """Build each candidate with ``schedules`` and time them all in alternating rounds (each round
    ``number`` runs of each); copies are built, the workloads given are left as they are."""
    built = [(label, Workload(wl.mod, wl.params).build(schedules=schedules)) for label, wl in candidates]
    inputs = built[0][1].random_inputs(seed)
    times: list[list[float]] = [[] for _ in built]
    for r in range(rounds):
        order = range(len(built)) if r % 2 == 0 else reversed(range(len(built)))
        for k in order:
            times[k].append(built[k][1].seconds(inputs, number))
    return [Candidate(label, wl, statistics.median(t), t) for (label, wl), t in zip(built, times)]


def noise(*timed: Candidate) -> float:
    """The relative timing noise of ``timed``: the widest spread of their rounds, ``(max - min) /
    median``, at least :data:`NOISE_FLOOR`."""
    return max([NOISE_FLOOR, *((max(c.rounds) - min(c.rounds)) / c.seconds for c in timed if c.seconds > 0)])


def faster(candidate: Candidate, baseline: Candidate) -> bool:
    """Whether ``candidate`` runs faster than ``baseline`` beyond the noise of both."""
    return candidate.seconds * (1 + noise(candidate, baseline)) < baseline.seconds


@dataclass
class Confirmation:
    """The verdict of :func:`confirm`: each side's time under the second draw (label, seconds,
    rounds, the database's seed; empty when the first draw already decided) and why."""

    confirmed: bool
    candidate: dict
    baseline: dict
    why: str


def confirm(candidate: Candidate, baseline: Candidate, schedules: ScheduleDatabase) -> Confirmation:
    """Whether ``candidate`` beats ``baseline`` (both timed under ``schedules``) beyond the noise
    there, and again when both are rebuilt under an independently seeded draw of schedules
    (:meth:`~gsl_eq.measure.schedule_db.ScheduleDatabase.reseeded`) and timed anew."""
    if not faster(candidate, baseline):
        return Confirmation(False, {}, {}, f"not faster beyond the noise ({noise(candidate, baseline):.1%})")
    other = schedules.reseeded()
    base, cand = time_candidates([(baseline.label, baseline.workload), (candidate.label, candidate.workload)], other)
    record = lambda c: {"label": c.label, "seconds": c.seconds, "rounds": c.rounds, "seed": other.seed}  # noqa: E731
    if faster(cand, base):
        return Confirmation(True, record(cand), record(base), "faster beyond the noise under both draws")
    return Confirmation(False, record(cand), record(base),
                        f"not faster beyond the noise ({noise(cand, base):.1%}) under the second draw")
