"""Measured selection: time candidate workloads as TVM builds them and keep the fastest.

A cost model only predicts; what TVM runs decides. Each candidate is built through a
:class:`~gsl_eq.measure.schedule_db.ScheduleDatabase` (so a kernel two candidates share gets one
schedule), then all are timed on the same random inputs in alternating rounds (the order
reverses each round, so drift on the machine falls on every candidate alike), and each
candidate's median round is its time.

Schedules are drawn at random, and two draws can rank two graphs differently. So a candidate
is preferred to the input only when it is faster beyond the noise (:func:`faster`) under the
database's draw, again, timed anew beside the input, under an independently seeded one, and again
as TVM's default pipeline builds both (:func:`confirm`).

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
#: The least seconds a round lasts when the number of runs is chosen by time (an unscheduled build runs slowly).
ROUND_SECONDS = 0.05
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


def time_candidates(candidates: Sequence[tuple[str, Workload]], schedules: ScheduleDatabase | None,
                    rounds: int = ROUNDS, number: int | None = NUMBER, seed: int = 0) -> list[Candidate]:
    """Build each candidate with ``schedules`` (None: TVM's default pipeline) and time them all in
    alternating rounds (each round ``number`` runs of each; None: as many as make the first candidate's
    run last :data:`ROUND_SECONDS`, up to :data:`NUMBER`); copies are built, the workloads given are
    left as they are."""
    built = [(label, Workload(wl.mod, wl.params).build(schedules=schedules)) for label, wl in candidates]
    inputs = built[0][1].random_inputs(seed)
    if number is None:
        once = built[0][1].seconds(inputs, 1)
        number = max(1, min(NUMBER, round(ROUND_SECONDS / max(once, 1e-9))))
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
    """The verdict of :func:`confirm`, with each side's times under the other builds that were timed
    (``times["second draw"]``, ``times["default build"]``: the candidate's and the baseline's
    seconds and rounds; empty when the first draw already decided), and why."""

    confirmed: bool
    times: dict
    why: str


def confirm(candidate: Candidate, baseline: Candidate, schedules: ScheduleDatabase) -> Confirmation:
    """Whether ``candidate`` beats ``baseline`` (both timed under ``schedules``) beyond the noise
    there, again when both are rebuilt under an independently seeded draw of schedules
    (:meth:`~gsl_eq.measure.schedule_db.ScheduleDatabase.reseeded`), and again when both are built
    by TVM's default pipeline, unscheduled, as ``tvm.compile`` builds them: a ranking that holds
    under one scheduler only is a tie."""
    if not faster(candidate, baseline):
        return Confirmation(False, {}, f"not faster beyond the noise ({noise(candidate, baseline):.1%})")
    times = {}
    for build, other in (("second draw", schedules.reseeded()), ("default build", None)):
        pair = [(baseline.label, baseline.workload), (candidate.label, candidate.workload)]
        base, cand = time_candidates(pair, other, number=None)
        times[build] = {"candidate": cand.seconds, "baseline": base.seconds, "rounds": [cand.rounds, base.rounds]}
        if not faster(cand, base):
            return Confirmation(False, times, f"not faster beyond the noise ({noise(cand, base):.1%}) under the {build}")
    return Confirmation(True, times, "faster beyond the noise under both draws of schedules and the default build")
