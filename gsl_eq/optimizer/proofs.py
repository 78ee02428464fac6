"""The proof of each graph optimize() may return, made when it is asked for (:mod:`gsl_eq.proof`).

A graph greedy mode made carries its recorded history; one extracted from the e-graph has its steps
found afterwards, toward it (:func:`gsl_eq.proof.of_goal`); TVM's own passes' result, which measured
selection may return, has none. Nothing is derived unless
``result.proof`` or a fallback's ``proof`` is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..frontend import Subst
from ..proof import Proof, of_goal, of_greedy
from ..workload import Workload
from .candidates import TVM_PASSES, Alternative


#: The most seconds the search for a saturate result's steps takes (its proof then stops short).
PROOF_SECONDS = 60.0


@dataclass
class Prover:
    """What any candidate's proof starts from: the workload optimize() was given, that workload
    folded (the searches' input), and the rules."""

    start: Workload
    folded: Workload
    rules: Sequence[Subst]
    _made: dict[int, Proof] = field(default_factory=dict, repr=False)

    def of(self, option: Alternative | None) -> Proof:
        """The proof of ``option``, built (:func:`~.candidates.built`); None: of the input, returned."""
        if option is None:
            return of_greedy(self.start, self.folded, [], self.folded)
        key = id(option.workload)
        if key not in self._made:
            found = option.found if option.found is not None else option.workload
            if option.label.startswith(TVM_PASSES):
                self._made[key] = Proof(self.start, [], option.workload, complete=False,
                                        missing="TVM's own passes made this graph, not rules: no rewrites lead to it")
            elif option.history is not None:
                self._made[key] = of_greedy(self.start, self.folded, option.history, option.workload)
            else:
                self._made[key] = of_goal(self.start, self.folded, found, self.rules, option.workload, PROOF_SECONDS)
        return self._made[key]
