"""Proofs: the steps that take optimize()'s input to its result, each a rule's rewrite, a merge or a fold.

Greedy mode records its rewrites as it makes them (:mod:`.record`); saturate mode's steps are found
afterwards, on the input, toward the extracted graph (:mod:`.goal`). Either way a proof replays with
greedy mode's rewriter (:meth:`Proof.replay`) and checks each step numerically (:meth:`Proof.check`)::

    result = gsl_eq.optimize(wl, rules.default(), mode="greedy")
    proof = result.proof
    assert proof.reaches()               # replayed on the input, it gives the result
    assert proof.check() is None         # every step computes what it replaced
"""

from __future__ import annotations

import time
from typing import Sequence

from ..frontend import Subst
from ..greedy.rewriter import Rebuilt, Rewrites
from ..workload import Workload
from .goal import derive
from .check import StepFailure
from .proof import Proof, same_workload
from .record import of_history
from .steps import KINDS, ReplayError, Step, apply_rule, rebuild

__all__ = ["KINDS", "Proof", "ReplayError", "Step", "StepFailure", "apply_rule", "derive", "of_greedy",
           "of_goal", "same_workload"]


def of_greedy(start: Workload, folded: Workload, history: Sequence[Rewrites | Rebuilt], result: Workload) -> Proof:
    """The proof of a greedy run: ``start`` folded (``folded``, the run's input), the recorded ``history``,
    then the fold that made ``result``."""
    steps = _input_fold(start, folded) + of_history(folded, history)
    return _finished(start, steps, result, None)


def of_goal(start: Workload, folded: Workload, goal: Workload, rules: Sequence[Subst], result: Workload,
            seconds: float | None = None) -> Proof:
    """The proof of a result extracted from an e-graph: ``start`` folded (``folded``, loaded into the
    e-graph), steps by ``rules`` found toward ``goal`` (the extraction, unfolded), then the fold that
    made ``result``; within ``seconds`` where given."""
    deadline = None if seconds is None else time.perf_counter() + seconds
    steps, _, missing = derive(folded.graph, goal.graph, rules, deadline)
    return _finished(start, _input_fold(start, folded) + steps, result, missing)


def _input_fold(start: Workload, folded: Workload) -> list[Step]:
    return [] if folded is start else [Step("fold", folded.graph, folded=True)]


def _finished(start: Workload, steps: list[Step], result: Workload, missing: str | None) -> Proof:
    """The proof with its last fold, where the steps' graph is not the result's yet, and whether it reaches it."""
    proof = Proof(start, steps, result, complete=False, missing=missing)
    if missing is not None:
        return proof
    replayed = proof.replay()
    if not same_workload(replayed, result):
        replayed = rebuild("fold", replayed.graph, replayed, True)
        proof.steps.append(Step("fold", replayed.graph, folded=True))
    proof.complete = same_workload(replayed, result)
    proof.missing = None if proof.complete else "replayed, the steps give another graph than the result"
    return proof
