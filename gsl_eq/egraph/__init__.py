"""Saturate mode: computation graphs in an egglog e-graph, GSL rules as guarded rewrites."""

from .compile import Query, UnsupportedRuleError, compile_rule
from .egraph import EGraph, ENode, Snapshot
from .runner import Iteration, Report, Runner, StopReason
from .scheduler import Scheduler

__all__ = [
    "EGraph", "ENode", "Iteration", "Query", "Report", "Runner", "Scheduler", "Snapshot", "StopReason",
    "UnsupportedRuleError", "compile_rule",
]
