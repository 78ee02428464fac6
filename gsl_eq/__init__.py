"""gsl_eq: GSL graph substitution rules for TVM Relax, greedy or by equality saturation."""

from .errors import GslEqError, UnsupportedModuleError, WorkloadError
from .frontend import GSLError, Subst, attr, op, pat, spec
from .graph import Graph, from_relax, to_relax
from .optimize import OptimizeReport, OptimizeResult, optimize
from .orderings import OrderingComparison, compare_orderings
from .workload import FoldWarning, Unfolded, Workload

__all__ = [
    "FoldWarning", "GSLError", "GslEqError", "Graph", "OptimizeReport", "OptimizeResult", "OrderingComparison", "Subst",
    "Unfolded", "UnsupportedModuleError", "Workload", "WorkloadError",
    "attr", "compare_orderings", "from_relax", "op", "optimize", "pat", "spec", "to_relax",
]
