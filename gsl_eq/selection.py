"""Measured selection: time candidate workloads as TVM builds them and keep the fastest.

A cost model only predicts; what TVM runs decides. Each candidate is built through a
:class:`~gsl_eq.schedule_db.ScheduleDatabase` (so a kernel two candidates share gets one
schedule), then all are timed on the same random inputs in alternating rounds (the order
reverses each round, so drift on the machine falls on every candidate alike), and each
candidate's median round is its time. The input is always a candidate, so the pick is never
slower than the input by more than the timing noise.

    timed = time_candidates([("input", wl), ("extracted", out)], ScheduleDatabase())
    fastest = min(timed, key=lambda c: c.seconds)
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

from .schedule_db import ScheduleDatabase
from .workload import Workload

ROUNDS = 5
NUMBER = 10


@dataclass
class Candidate:
    """One timed candidate: where it comes from, the workload, its median seconds per run and
    every round's time."""

    label: str
    workload: Workload
    seconds: float
    rounds: list[float]


def distinct(candidates: Sequence[tuple[str, Workload]]) -> list[tuple[str, Workload]]:
    """The first of each group of structurally equal candidates, in order (labels joined)."""
    import tvm_ffi

    kept: dict[int, tuple[str, Workload]] = {}
    for label, wl in candidates:
        key = tvm_ffi.structural_hash(wl.mod, map_free_vars=True)
        if key in kept:
            kept[key] = (f"{kept[key][0]} = {label}", kept[key][1])
        else:
            kept[key] = (label, wl)
    return list(kept.values())


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
