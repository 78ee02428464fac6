"""Static types of graph nodes: a tensor (shape, dtype) or a tuple of types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import tvm
from tvm import relax

from ..errors import UnsupportedModuleError


@dataclass(frozen=True)
class TensorType:
    """A tensor with a static shape and a dtype, e.g. ``TensorType((1, 64), "float32")``."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        return f"Tensor[{self.shape}, {self.dtype}]"


@dataclass(frozen=True)
class TupleType:
    """A tuple of values, as produced by split or batch_norm."""

    fields: tuple["Type", ...]

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.fields)) + ")"


Type = Union[TensorType, TupleType]


def is_data_type(ty: object) -> bool:
    """Whether a Relax type describes data flowing through the graph (tensors, tuples of them)."""
    if isinstance(ty, relax.TensorType):
        return True
    if isinstance(ty, relax.TupleType):
        return all(is_data_type(f) for f in ty.fields)
    return False


def from_relax_type(ty: object, where: str) -> Type:
    """Convert a Relax type into a gsl_eq type; ``where`` names the binding for errors."""
    if isinstance(ty, relax.TupleType):
        return TupleType(tuple(from_relax_type(f, where) for f in ty.fields))
    if not isinstance(ty, relax.TensorType):
        raise UnsupportedModuleError(f"{where}: value of type {ty} is not a tensor or a tuple of tensors")
    if ty.shape is None or not isinstance(ty.shape, relax.ShapeExpr):
        raise UnsupportedModuleError(f"{where}: tensor of unknown shape ({ty}); static shapes are required")
    dims = []
    for dim in ty.shape.values:
        if not isinstance(dim, tvm.tirx.IntImm):
            raise UnsupportedModuleError(
                f"{where}: symbolic shape {ty.shape} (dimension {dim}); static shapes are required: bind each "
                f"symbolic dimension to a size first: bind={{'{dim}': 1}} on Workload's importers and "
                f"gsl_eq.transform.Optimize, --bind {dim}=1 on the command line, or "
                f"relax.transform.BindSymbolicVars({{'{dim}': 1}})(mod)")
        dims.append(int(dim))
    return TensorType(tuple(dims), str(ty.dtype))


def to_relax_type(ty: Type) -> object:
    """Convert a gsl_eq type back into a Relax type."""
    if isinstance(ty, TupleType):
        return relax.TupleType([to_relax_type(f) for f in ty.fields])
    return relax.TensorType(ty.shape, ty.dtype)
