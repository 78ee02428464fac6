"""Graphs that run without gsl_eq or TVM: a workload written as a JSON graph and an ``.npz`` of values.

:func:`export` writes what :mod:`gsl_eq.workload.torch_runner` reads (its ``FORMAT``) on a machine with
only PyTorch and NumPy: the ops, their attributes, every node's type, and the values of the
runtime inputs and parameters, or for the parameters a seed and the distribution to draw them
from (``params="seeds"``), which keeps the files of large models small::

    export(wl, "bert.json")                       # bert.json, bert.npz
    export(wl, "vgg.json", params="seeds")        # the weights drawn anew where it runs

A graph may hold computations on parameters alone (an optimization's result before its fold):
the runner computes them once before it runs the graph, as a compiler folds them.
"""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import WorkloadError
from ..graph import Graph, Kind, Node, TensorType, TupleType, Type
from .torch_runner import FORMAT
from .workload import Workload, write_arrays

PARAMS = ("values", "seeds")


def export(workload: Workload, path: str | Path, params: str = "values", seed: int = 0) -> tuple[Path, Path]:
    """Write ``workload``'s graph into ``path`` (JSON) and its values into ``<path without suffix>.npz``,
    for a machine with PyTorch and NumPy only (:mod:`gsl_eq.workload.torch_runner`); return both paths.

    Parameters
    ----------
    workload
        The workload to write.
    path
        The JSON file.
    params
        ``"values"``: each parameter's value. ``"seeds"``: a seed and a distribution for each
        floating-point parameter instead of its value (the workload's own parameters'
        distributions: see :meth:`~gsl_eq.workload.Workload.from_expr`); a parameter's seed depends
        on its name alone, so two graphs of one model draw the same weights.
    seed
        Runtime inputs are stored as :meth:`~gsl_eq.workload.Workload.random_inputs` draws them
        with this seed (floating-point ones, under ``params="seeds"``, drawn from U[-1, 1) where
        the graph runs).

    Raises
    ------
    WorkloadError
        Another ``params``.

    Examples
    --------
    ::

        export(result.workload, "bert.json", params="seeds")   # bert.json, bert.npz
    """
    if params not in PARAMS:
        raise WorkloadError(f"params must be one of {', '.join(PARAMS)}, got {params!r}")
    path = Path(path)
    arrays_path = path.with_suffix(".npz")
    graph = graph_record(workload)
    values = {**workload.random_inputs(seed), **workload.params}
    arrays = constant_values(workload.graph)
    for entry, is_param in [*((e, False) for e in graph["inputs"]), *((e, True) for e in graph["params"])]:
        if params == "seeds" and values[entry["name"]].dtype.kind == "f":
            ty = TensorType(tuple(entry["shape"]), entry["dtype"])
            entry.update(drawn_like(entry["name"], ty) if is_param else
                         {"seed": zlib.crc32(entry["name"].encode()) + seed, "uniform": [-1.0, 1.0]})
        else:
            arrays[entry["name"]] = values[entry["name"]]
    path.write_text(json.dumps(graph, separators=(",", ":")))
    write_arrays(arrays_path, arrays)
    return path, arrays_path


def graph_record(workload: Workload) -> dict[str, Any]:
    """``workload``'s graph as :mod:`gsl_eq.workload.torch_runner` takes it, without values: its runtime inputs
    and parameters (names and types), and its nodes, each after its inputs."""
    graph = workload.graph
    order = graph.rpo()
    index = {node: k for k, node in enumerate(order)}
    constants = _constants(graph)
    nodes = []
    for node in order:
        record: dict[str, Any] = {"kind": node.kind.value, "inputs": [index[i] for i in node.inputs],
                                  "type": _type(node.type)}
        if node.kind is Kind.VAR:
            record["name"] = node.name
        elif node.kind is Kind.CONST:
            record["name"] = constants[node]
        elif node.kind is Kind.CALL:
            record.update(op=node.op, attrs=_plain(node.attrs))
        elif node.kind is Kind.GETITEM:
            record["index"] = int(node.attrs["index"])
        nodes.append(record)
    entries = [({"name": v.name, **_type(v.type)}, v.name in workload.params) for v in graph.inputs]
    return {"format": FORMAT, "inputs": [e for e, param in entries if not param],
            "params": [e for e, param in entries if param], "constants": list(constants.values()),
            "nodes": nodes, "outputs": [index[o] for o in graph.outputs]}


def constant_values(graph: Graph) -> dict[str, np.ndarray]:
    """The values of ``graph``'s constants, by the names :func:`graph_record` gives them."""
    return {name: node.value for node, name in _constants(graph).items()}


def drawn_like(name: str, ty: TensorType) -> dict[str, Any]:
    """A seed (from ``name``) and the distribution gsl_eq draws a parameter of type ``ty`` from."""
    if len(ty.shape) < 2:
        low, high = 0.5, 1.5
    else:
        high = 1.0 / math.sqrt(max(1, math.prod(ty.shape[1:])))
        low = -high
    return {"seed": zlib.crc32(name.encode()), "uniform": [low, high]}


def _constants(graph: Graph) -> dict[Node, str]:
    return {node: f"const_{k}" for k, node in enumerate(n for n in graph.rpo() if n.kind is Kind.CONST)}


def _type(ty: Type) -> dict[str, Any]:
    if isinstance(ty, TupleType):
        return {"fields": [_type(f) for f in ty.fields]}
    return {"shape": list(ty.shape), "dtype": ty.dtype}


def _plain(value: Any) -> Any:
    """An attribute as JSON writes it: tuples as lists, NumPy scalars as Python's."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise WorkloadError(f"attribute value {value!r} of type {type(value).__name__} has no JSON form")
