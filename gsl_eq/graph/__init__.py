"""The computation graph and its bridge to Relax: IRModule <-> graph."""

from .graph import Graph, Kind, Node
from .ops import OpSignature, infer_type, op_names, signature
from .relax_bridge import from_relax, to_relax
from .types import TensorType, TupleType, Type

__all__ = [
    "Graph", "Kind", "Node", "OpSignature", "TensorType", "TupleType", "Type",
    "from_relax", "infer_type", "op_names", "signature", "to_relax",
]
