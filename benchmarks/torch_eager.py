"""PyTorch eager on a gsl_eq graph: the benchmarks' reference for what a CPU framework runs.

:func:`~gsl_eq.workload.torch_ops.eager` interprets a workload's graph op by op with
``torch.nn.functional``; :func:`eager_seconds` times that under ``torch.no_grad`` with a given
number of threads. Callers compare its outputs with TVM's before timing it.

    run = eager(wl)
    outputs = run(wl.random_inputs(0))          # numpy arrays, as Workload.__call__ gives
    seconds = eager_seconds(wl, wl.random_inputs(0), threads=2)
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, Mapping

import numpy as np

from gsl_eq.workload.torch_ops import eager, round_seconds

__all__ = ["eager", "eager_seconds", "median_seconds"]


def eager_seconds(wl, inputs: Mapping[str, np.ndarray], threads: int, rounds: int = 5, seconds: float = 0.05) -> float:
    """Median seconds of one PyTorch eager run of ``wl`` on ``inputs`` with ``threads`` threads."""
    run = eager(wl).raw
    return median_seconds(lambda: run(inputs), threads, rounds, seconds)


def median_seconds(fn: Callable[[], Any], threads: int, rounds: int = 5, seconds: float = 0.05) -> float:
    """Median seconds of one call of ``fn`` under ``torch.no_grad`` with ``threads`` threads: two warm-up
    calls, then ``rounds`` rounds of as many calls as last about ``seconds``."""
    import torch

    torch.set_num_threads(threads)
    with torch.no_grad():
        return statistics.median(round_seconds(fn, rounds, seconds))
