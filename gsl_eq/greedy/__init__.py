"""Greedy mode: GSL's direct, destructive matcher and rewriter."""

from .match import Match, Matcher
from .rewriter import GreedyResult, greedy, rewrite, rewrite_graph, rewrite_once
from ..run import executors

executors.register(lambda rule, wl, fold_params: rewrite(wl, rule, fold_params=fold_params)[0])

__all__ = ["GreedyResult", "Match", "Matcher", "greedy", "rewrite", "rewrite_graph", "rewrite_once"]
