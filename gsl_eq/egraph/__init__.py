"""Saturate mode: computation graphs in an egglog e-graph, GSL rules as guarded rewrites."""

from .compile import Query, UnsupportedRuleError, compile_rule
from .egraph import EGraph, ENode, Snapshot
from .runner import Iteration, Report, Runner, StopReason

__all__ = [
    "EGraph", "ENode", "Iteration", "Query", "Report", "Runner", "Snapshot", "StopReason",
    "UnsupportedRuleError", "compile_rule",
]
