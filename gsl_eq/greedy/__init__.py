"""Greedy mode: GSL's direct, destructive matcher and rewriter (seed 000)."""

from .match import Match, Matcher
from .rewrite import GreedyResult, greedy, rewrite, rewrite_graph, rewrite_once

__all__ = ["GreedyResult", "Match", "Matcher", "greedy", "rewrite", "rewrite_graph", "rewrite_once"]
