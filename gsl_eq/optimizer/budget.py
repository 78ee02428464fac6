"""Where the time of one :func:`~gsl_eq.optimizer.optimize` call goes, decided in one place.

``time_limit`` bounds the whole call. From it the call keeps, first, the time the result's check is
predicted to take (from what the input's reference outputs took) and the time its final build, the
fold of its parameter computations, is predicted to take; the rest is the search's. Saturate mode
leaves extraction a share of that, and lets greedy mode run first in a share of it::

    budget = Budget.plan(start, time_limit=10.0, mode="saturate", measuring=0.0,
                         checking=0.4, folding=0.1)
    budget.search_end      # saturation and greedy mode stop growing here
    budget.deadline        # extraction and rebuilding end here; the fold and the check follow

A cost model that measures (``"measured"``, ``"tvm"``) times the kernels it has not seen when it
prices a graph; that time cannot be bounded and moves every end later (:meth:`Budget.measured`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..graph.work import roofline_seconds
from ..workload import Workload
from ..workload.workload import FOLD_RATES

#: The share of ``time_limit`` saturation leaves to extraction.
EXTRACTION_SHARE = 0.2
#: The most of ``time_limit`` the check of the result is left
#: (:meth:`~gsl_eq.optimizer.verify.Reference.predicted_check_seconds`): under a limit shorter than
#: twice its prediction, the check may end past the limit.
CHECK_SHARE = 0.5
#: The most of ``time_limit`` kept for folding the result's parameter computations (:func:`fold_reserve`).
FOLD_SHARE = 0.2
#: The most of saturate mode's search time greedy mode takes first: its result is a candidate of
#: saturate mode's, so that saturate mode never returns a graph costlier than greedy mode would. A
#: share, not a reservation: what greedy mode leaves goes to saturation. On GoogLeNet a tenth of a
#: 30 s call's search stopped greedy mode at a third of its passes, and its result, costlier than
#: greedy mode's own, could not hold saturate mode to it.
GREEDY_SHARE = 0.5
#: Seconds extraction needs per e-node (reading the e-graph back, pricing it, the greedy passes), with
#: a margin over what a 2-core machine takes: saturation stops growing the e-graph where the time left
#: would not cover extracting it.
EXTRACTION_SECONDS_PER_ENODE = 40e-6
#: Seconds per e-node telling which rules the chosen term relies on, once it is chosen
#: (:func:`~gsl_eq.egraph.attribution.attribute`): extraction leaves it this.
ATTRIBUTION_SECONDS_PER_ENODE = 20e-6


@dataclass
class Budget:
    """The time arithmetic of one call, in :func:`time.perf_counter` seconds.

    Parameters
    ----------
    start:
        When the call began.
    time_limit:
        The whole call's limit, in seconds.
    extraction:
        Seconds of the limit kept for extraction after the search (saturate mode), else 0.
    checking:
        Seconds kept for checking the result.
    folding:
        Seconds kept for the result's final build.
    measuring:
        Seconds a measuring cost model spent timing kernels: outside the limit.
    """

    start: float
    time_limit: float
    extraction: float
    checking: float
    folding: float
    measuring: float = 0.0

    @classmethod
    def plan(cls, start: float, time_limit: float, mode: str, measuring: float, checking: float,
             folding: float) -> Budget:
        """The budget of a call in ``mode`` whose check is predicted to take ``checking`` seconds and
        whose final build ``folding``, each capped at its share of the limit."""
        return cls(start, time_limit, EXTRACTION_SHARE * time_limit if mode == "saturate" else 0.0,
                   min(checking, CHECK_SHARE * time_limit), min(folding, FOLD_SHARE * time_limit), measuring)

    @property
    def search_seconds(self) -> float:
        """The limit less the check's and the final build's reserves: the search's and extraction's."""
        return self.time_limit - self.checking - self.folding

    @property
    def deadline(self) -> float:
        """When extraction and rebuilding must end."""
        return self.start + self.measuring + self.time_limit - self.checking - self.folding

    @property
    def search_end(self) -> float:
        """When growing (greedy rewriting, or saturation's first iterations) must end."""
        return self.deadline - self.extraction

    @property
    def saturation_end(self) -> float:
        """When saturation must stop, leaving extraction :data:`EXTRACTION_SHARE` of the search's seconds."""
        return self.deadline - EXTRACTION_SHARE * self.search_seconds

    @property
    def end(self) -> float:
        """When the whole call must end: the last candidate's check is begun no later."""
        return self.start + self.measuring + self.time_limit

    def keep_for_folding(self, seconds: float) -> None:
        """Keep at least ``seconds`` for the final build, at most :data:`FOLD_SHARE` of the limit; the
        search's ends move earlier."""
        self.folding = max(self.folding, min(seconds, FOLD_SHARE * self.time_limit))

    def greedy_end(self) -> float:
        """When greedy mode, run first in saturate mode, must end: :data:`GREEDY_SHARE` of the search."""
        return min(self.search_end, time.perf_counter() + GREEDY_SHARE * self.search_seconds)

    def starved(self) -> bool:
        """Whether the reserves and the reference left the search no time."""
        return time.perf_counter() >= self.search_end

    def measured(self, seconds: float) -> None:
        """A measuring cost model spent ``seconds`` timing kernels: every end moves that much later."""
        self.measuring += seconds


def fold_reserve(wl: Workload) -> float:
    """The time kept for folding the result's parameter computations: a fold reading each of ``wl``'s
    parameters once is predicted to take it (:meth:`~gsl_eq.workload.Workload.predicted_fold_seconds`'s
    rates), as merging rewrites concatenate weights. A fold predicted to take more is done only in what
    the search leaves of the limit."""
    types = [v.type for v in wl.graph.inputs if v.name in wl.params]
    copies = sum(roofline_seconds("relax.concat", {"axis": 0}, [t], t) for t in types)
    return FOLD_RATES.predicted(len(types), copies) if types else 0.0
