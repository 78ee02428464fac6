"""Extraction: choosing one e-node per e-class so that the graph at the roots costs least.

The extractors read an e-graph as a mapping (e-class -> its priced e-nodes, :class:`ENodeCost`), so
they know neither egglog nor cost models: :func:`tree_extract` and :func:`greedy_dag_extract` bottom
up, :func:`ilp_extract` exactly (HiGHS, or CP-SAT on cyclic e-graphs), with e-graphs cut into regions
(:mod:`.regions`) and fused kernels priced exactly (:mod:`.fusion`). :mod:`.io` reads and writes
e-graphs in extraction-gym's JSON format.

Example::

    from gsl_eq.extract import ENodeCost as N, greedy_dag_extract
    egraph = {"x": [N(1.0)], "y": [N(5.0, ("x",)), N(2.0, ("x",))]}
    assert greedy_dag_extract(egraph, ["y"]).cost == 3.0
"""

from .extractors import (
    ENodeCost, Extraction, ExtractionError, ExtractGraph, dag_cost, greedy_dag_extract, is_acyclic, tree_extract,
)
from .ilp import ilp_candidates, ilp_extract
from .io import EGraphFileError, dumps_egraph, load_egraph, loads_egraph, save_egraph

__all__ = [
    "ENodeCost", "ExtractGraph", "Extraction", "ExtractionError", "dag_cost", "greedy_dag_extract", "ilp_candidates",
    "ilp_extract", "is_acyclic", "tree_extract",
    "EGraphFileError", "dumps_egraph", "load_egraph", "loads_egraph", "save_egraph",
]
