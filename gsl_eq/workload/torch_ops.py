"""Relax ops as PyTorch calls: a workload's graph run op by op with ``torch.nn.functional``.

:func:`torch_op` (from :mod:`gsl_eq.workload.torch_runner`, which runs exported graphs where gsl_eq is not
installed) gives the PyTorch form of one Relax op (called with the op's inputs, then its
attributes as keywords, as a graph node holds them); :func:`eager` runs a whole workload's graph
with them, its parameters made tensors once. The benchmarks compare TVM's runs with this PyTorch
eager reference, and the measured GPU cost model (:class:`~gsl_eq.cost.torch_cost.MeasuredGPU`)
times single ops with it (:func:`round_seconds`). PyTorch is the ``torch`` extra; an op with no form here raises
``NotImplementedError`` naming it.

    run = eager(wl)
    outputs = run(wl.random_inputs(0))          # numpy arrays, as Workload.__call__ gives
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from .portable import constant_values, graph_record
from .torch_runner import Program, round_seconds, torch_op, torch_ops
from .workload import Workload

__all__ = ["eager", "round_seconds", "torch_op", "torch_ops"]


def eager(wl: Workload) -> Callable[[Mapping[str, np.ndarray]], Any]:
    """A function running ``wl``'s graph with PyTorch eager on inputs given by name, returning numpy
    arrays (a tuple of them for several outputs) under ``torch.no_grad``; its ``raw`` attribute runs
    it on the same inputs returning tensors (for timing, inside the caller's ``no_grad``)."""
    import torch

    run = Program(graph_record(wl), {**wl.params, **constant_values(wl.graph)}, fold=False)

    def to_numpy(inputs: Mapping[str, np.ndarray]):
        with torch.no_grad():
            out = run(inputs)
        return out.numpy() if isinstance(out, torch.Tensor) else tuple(o.numpy() for o in out)

    to_numpy.raw = run  # type: ignore[attr-defined]
    return to_numpy
