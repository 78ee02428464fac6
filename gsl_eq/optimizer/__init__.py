"""What users call: :func:`optimize` a module or workload with GSL rules, greedily or by saturation.

:mod:`.pipeline` holds :func:`optimize` and its phases; :mod:`.choose` reads a saturated e-graph back
into a graph, :mod:`.selection` times candidates (``select="measured"``), and :mod:`.verify` builds,
runs and compares the result before it is returned.
"""

from .pipeline import OptimizeReport, OptimizeResult, optimize

__all__ = ["OptimizeReport", "OptimizeResult", "optimize"]
