"""Models from the formats users have, as a Relax module and its weights (what a Workload holds).

Each importer goes through TVM's own frontend, detaches the weights as parameters, and binds
the symbolic dimensions a user names (``bind``) to sizes, since gsl_eq works on static shapes.
What TVM's frontend refuses comes back as a :class:`~gsl_eq.errors.WorkloadError` naming the
source node and op and, where known, the fix.

    mod, params = onnx_model("resnet.onnx", bind={"batch": 1})
    mod, params = exported_program(torch.export.export(model, (x,)))
"""

from __future__ import annotations

import contextlib
import copy
import io
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import tvm
from tvm import relax

from .buildable import first_line
from ..errors import WorkloadError

#: Known causes of TVM frontend errors: a pattern of the error's text, and what the user can do.
HINTS: tuple[tuple[str, str], ...] = (
    (r"Concat expects all input tensors to have same ndim",
     "a model exported with its key/value cache (Hugging Face's default use_cache=True) concatenates "
     "the past keys and values, which the export leaves empty; export it with use_cache=False"),
    (r"cannot handle ShapeExpr inputs",
     "the model computes shapes at run time; export it with static input shapes, or pass shapes= "
     "and bind= so the shape arithmetic folds"),
)


def exported_program(program: Any, bind: Mapping[str, int] | None = None) -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    """The module and weights of a ``torch.export.ExportedProgram``, through TVM's Relax frontend.

    Parameters
    ----------
    program
        The exported program.
    bind
        Sizes for symbolic dimensions (``{"s0": 1}``).
    """
    from tvm.relax.frontend.torch import from_exported_program

    if not hasattr(program, "graph_module") or not hasattr(program, "state_dict"):
        raise WorkloadError(f"expected a torch.export.ExportedProgram, got a {type(program).__name__}")
    try:
        mod = from_exported_program(program, keep_params_as_input=True)
    except Exception as err:  # TVM's frontend raises its own errors, and asserts
        raise WorkloadError(f"TVM's PyTorch frontend cannot import this program: {first_line(err)}"
                            f"{_hint(err)}") from None
    return detached(bind_symbolic(mod, bind))


def torch_module(module: Any, example_inputs: Sequence[Any],
                 bind: Mapping[str, int] | None = None) -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    """The module and weights of a ``torch.nn.Module`` exported with ``torch.export`` in evaluation
    mode, on a copy: the caller's module is untouched
    (:meth:`gsl_eq.workload.Workload.from_torch` makes them a workload).

    Parameters
    ----------
    module
        The ``torch.nn.Module``.
    example_inputs
        Inputs to export it with, in ``forward``'s order.
    bind
        Sizes for symbolic dimensions (``{"s0": 1}``).
    """
    import torch

    model = copy.deepcopy(module).eval()
    with torch.no_grad():
        program = torch.export.export(model, tuple(example_inputs))
    return exported_program(program, bind)


def onnx_model(model_or_path: Any, shapes: Mapping[str, Sequence[int]] | None = None,
               bind: Mapping[str, int] | None = None) -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    """The module and weights of an ONNX model (a ``ModelProto`` or the path of a ``.onnx`` file),
    through TVM's ONNX frontend.

    Parameters
    ----------
    model_or_path
        The model, or the path of its file.
    shapes
        Input shapes by input name, replacing those the file declares.
    bind
        Sizes for its symbolic dimensions (``{"batch": 1}``).
    """
    model = _onnx_proto(model_or_path)
    importer = _importer(shapes)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the frontend prints its inputs before re-raising
            mod = importer.from_onnx(model.graph, _opset(model))
    except Exception as err:  # the frontend raises ValueError, TVM's errors and bare asserts
        raise WorkloadError(f"TVM's ONNX frontend cannot import {_where(importer, model)}: {first_line(err)}"
                            f"{_hint(err)}") from None
    mod, params = detached(mod)
    # The frontend computes shapes of weights at run time (shape_of of a Gather's table); with the
    # weights as parameters of known shape, TVM folds that arithmetic away.
    return relax.transform.FoldConstant()(bind_symbolic(mod, bind)), params


def bind_symbolic(mod: tvm.IRModule, bind: Mapping[str, int] | None) -> tvm.IRModule:
    """``mod`` with each symbolic dimension named in ``bind`` set to its size in every function.

    Parameters
    ----------
    mod
        The module.
    bind
        Sizes by dimension name; None or empty leaves the module as it is.
    """
    if not bind:
        return mod
    known = symbolic_dims(mod)
    unknown = sorted(set(bind) - known)
    if unknown:
        raise WorkloadError(f"bind names {unknown}, which are not symbolic dimensions of the module "
                            f"(it has {sorted(known) or 'none'})")
    wrong = {name: size for name, size in bind.items() if not isinstance(size, (int, np.integer)) or size < 1}
    if wrong:
        raise WorkloadError(f"bind sizes must be positive integers; got {wrong}")
    return relax.transform.BindSymbolicVars({name: int(size) for name, size in bind.items()})(mod)


def symbolic_dims(mod: tvm.IRModule) -> set[str]:
    """The names of the symbolic dimensions of the module's Relax functions."""
    return {str(var.name) for _, func in mod.functions_items() if isinstance(func, relax.Function)
            for var in relax.analysis.defined_symbolic_vars(func)}


def detached(mod: tvm.IRModule) -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    """``mod`` without the weight values its frontend attached to ``main``, and those values by the
    names of the parameters that take them (the parameters after ``num_input``)."""
    mod, values = relax.frontend.detach_params(mod)
    func = mod["main"]
    num_input = int(func.attrs["num_input"]) if func.attrs and "num_input" in func.attrs else len(func.params)
    weights = values.get("main", [])
    return mod, {p.name: v.numpy() for p, v in zip(func.params[num_input:], weights)}


def _onnx_proto(model_or_path: Any) -> Any:
    try:
        import onnx
    except ImportError:
        raise WorkloadError("reading ONNX needs the onnx package: pip install 'gsl_eq[onnx]'") from None
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    if not isinstance(model_or_path, (str, Path)):
        raise WorkloadError(f"expected an onnx.ModelProto or the path of a .onnx file, got a "
                            f"{type(model_or_path).__name__}")
    path = Path(model_or_path)
    if not path.is_file():
        raise WorkloadError(f"{path}: no such file")
    try:
        return onnx.load(str(path))
    except Exception as err:  # protobuf's DecodeError and onnx's own
        raise WorkloadError(f"{path} is not an ONNX model: {first_line(err)}") from None


def _importer(shapes: Mapping[str, Sequence[int]] | None) -> Any:
    """TVM's ONNX graph importer, remembering which node it converts (to name it in errors)."""
    from tvm.relax.frontend.onnx.onnx_frontend import ONNXGraphImporter

    class Importer(ONNXGraphImporter):
        node: tuple[str, str] | None = None

        def _convert_operator(self, op_name: str, inputs: list, attrs: dict, opset: int) -> relax.Expr:
            self.node = (op_name, attrs.get("tvm_custom", {}).get("name", ""))
            return super()._convert_operator(op_name, inputs, attrs, opset)

    shape_dict = {name: list(shape) for name, shape in shapes.items()} if shapes else None
    return Importer(shape_dict, "float32", keep_params_in_input=True, sanitize=True)


def _opset(model: Any) -> int:
    """The model's version of the default (``ai.onnx``) operator set."""
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    return versions[0] if versions else 1


def _where(importer: Any, model: Any) -> str:
    if importer.node is None:
        return "the model"
    op, name = importer.node
    index = next((k for k, n in enumerate(model.graph.node) if n.name == name and n.op_type == op), None)
    place = f"node {name!r}" if name else "a node"
    at = "" if index is None else f", node {index + 1} of {len(model.graph.node)}"
    return f"{place} (op {op}{at})"


def _hint(err: Exception) -> str:
    text = str(err)
    return "".join(f"; {hint}" for pattern, hint in HINTS if re.search(pattern, text))

