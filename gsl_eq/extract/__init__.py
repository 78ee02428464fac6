"""Extraction: choosing the cheapest graph, and the cost models that price it."""

from .cost import (
    COST_MODELS,
    CostModel,
    Measured,
    OpCount,
    Roofline,
    get_cost_model,
    graph_cost,
    op_bytes,
    op_flops,
)

from .extractors import (
    ENodeCost,
    Extraction,
    ExtractionError,
    ExtractGraph,
    dag_cost,
    greedy_dag_extract,
    is_acyclic,
    tree_extract,
)
from .ilp import ilp_candidates, ilp_extract
from .tvm_cost import TVMCost
from .gpu_cost import DEVICES, GPU, Device
from .torch_cost import MeasuredGPU
from .io import EGraphFileError, dumps_egraph, load_egraph, loads_egraph, save_egraph

__all__ = [
    "ENodeCost", "ExtractGraph", "Extraction", "ExtractionError", "dag_cost", "greedy_dag_extract", "ilp_candidates",
    "ilp_extract", "is_acyclic", "tree_extract",
    "EGraphFileError", "dumps_egraph", "load_egraph", "loads_egraph", "save_egraph",
    "COST_MODELS", "CostModel", "DEVICES", "Device", "GPU", "Measured", "MeasuredGPU", "OpCount", "Roofline", "TVMCost",
    "get_cost_model", "graph_cost", "op_bytes", "op_flops",
]
