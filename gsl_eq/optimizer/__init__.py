"""What users call: :func:`optimize` a module or workload with GSL rules, greedily or by saturation.

The phases, in the order a call runs them: :mod:`.arguments` checks what was asked, :mod:`.budget`
shares the time limit, :mod:`.saturate` grows and extracts an e-graph (greedy mode is
:mod:`gsl_eq.greedy`), :mod:`.choose` reads the e-graph back into a graph, :mod:`.candidates` picks
what is returned, checked by :mod:`.verify` or timed by :mod:`.selection`, and :mod:`.report` says what
was done. :mod:`.pipeline` is :func:`optimize` itself, the phases in order.
"""

from .pipeline import optimize
from .report import OptimizeReport, OptimizeResult

__all__ = ["OptimizeReport", "OptimizeResult", "optimize"]
