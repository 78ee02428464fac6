"""Saturate mode: computation graphs in an egglog e-graph (see :mod:`gsl_eq.egraph.egraph`)."""

from .egraph import EGraph, ENode, Snapshot

__all__ = ["EGraph", "ENode", "Snapshot"]
