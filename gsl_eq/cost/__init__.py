"""Cost models: what an op call costs, so that extraction can pick the cheapest graph.

A cost model is any object with a ``name`` and a ``__call__(op, attrs, inputs, output) -> float``
(:class:`CostModel`). :mod:`.model` holds the protocol, the analytic models (``opcount``,
``roofline``), the CPU-measured one (``measured``) and :func:`get_cost_model`; :mod:`.tvm_cost` prices
as TVM runs a graph, :mod:`.gpu_cost` as kernels on a GPU preset, :mod:`.torch_cost` with each kernel
timed on a CUDA GPU, and :mod:`.timings` remembers measured seconds on disk.

Example::

    from gsl_eq.cost import get_cost_model, graph_cost
    roofline = get_cost_model("roofline")
    seconds = graph_cost(wl.graph, roofline)
"""

from .gpu_cost import DEVICES, GPU, Device
from .model import (
    COST_MODELS, MEASURING, CostModel, Measured, OpCount, Roofline, cost_unit, display_unit, get_cost_model, graph_cost,
    op_bytes, op_flops, speedup,
)
from .torch_cost import MeasuredGPU
from .tvm_cost import TVMCost

__all__ = [
    "COST_MODELS", "MEASURING", "CostModel", "DEVICES", "Device", "GPU", "Measured", "MeasuredGPU", "OpCount", "Roofline", "TVMCost",
    "cost_unit", "display_unit", "get_cost_model", "graph_cost", "op_bytes", "op_flops", "speedup",
]
