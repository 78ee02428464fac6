"""gsl_eq: GSL graph substitution rules for TVM Relax, greedy or by equality saturation."""

from .errors import GslEqError, UnsupportedModuleError, WorkloadError
from .graph import Graph, from_relax, to_relax
from .workload import Workload

__all__ = ["GslEqError", "Graph", "UnsupportedModuleError", "Workload", "WorkloadError", "from_relax", "to_relax"]
