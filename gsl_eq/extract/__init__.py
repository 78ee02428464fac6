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

__all__ = [
    "COST_MODELS", "CostModel", "Measured", "OpCount", "Roofline",
    "get_cost_model", "graph_cost", "op_bytes", "op_flops",
]
