"""PyTorch eager on a gsl_eq graph: the benchmarks' reference for what a CPU framework runs.

:func:`eager` interprets a workload's graph op by op with ``torch.nn.functional``, its
parameters as tensors made once, and :func:`eager_seconds` times that under ``torch.no_grad``
with a given number of threads. The ops are those of the zoo's models; another op raises
``NotImplementedError`` naming it. Callers compare its outputs with TVM's before timing it.

    run = eager(wl)
    outputs = run(wl.random_inputs(0))          # numpy arrays, as Workload.__call__ gives
    seconds = eager_seconds(wl, wl.random_inputs(0), threads=2)
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable, Mapping

import numpy as np


def _pad(x, padding, value: float = 0.0):
    """``x`` padded by Relax's (top, left, bottom, right), as torch's F.pad (left, right, top, bottom) takes it."""
    import torch.nn.functional as F

    top, left, bottom, right = padding
    return x if not any(padding) else F.pad(x, (left, right, top, bottom), value=value)


def _conv2d(x, w, strides, padding, dilation, groups, data_layout, kernel_layout, out_layout, **_):
    import torch.nn.functional as F

    if (data_layout, kernel_layout, out_layout) != ("NCHW", "OIHW", "NCHW"):
        raise NotImplementedError(f"conv2d in layout {data_layout}/{kernel_layout}")
    return F.conv2d(_pad(x, padding), w, stride=strides, dilation=dilation, groups=groups)


def _pool(kind: str):
    def pool(x, pool_size, strides, dilation, padding, ceil_mode, layout, count_include_pad=False, **_):
        import torch.nn.functional as F

        if layout != "NCHW":
            raise NotImplementedError(f"{kind} pooling in layout {layout}")
        if kind == "max":
            return F.max_pool2d(_pad(x, padding, -math.inf), pool_size, strides, dilation=dilation, ceil_mode=ceil_mode)
        top, left, bottom, right = padding
        if (top, left) != (bottom, right) or dilation != (1, 1):
            raise NotImplementedError(f"average pooling with padding {padding}, dilation {dilation}")
        return F.avg_pool2d(x, pool_size, strides, padding=(top, left), ceil_mode=ceil_mode,
                            count_include_pad=count_include_pad)

    return pool


def _split(x, indices_or_sections, axis):
    import torch

    if isinstance(indices_or_sections, int):  # TVM: parts of ceil(n / sections), the last one shorter
        return tuple(torch.split(x, math.ceil(x.shape[axis] / indices_or_sections), dim=axis))
    return tuple(torch.tensor_split(x, list(indices_or_sections), dim=axis))


def _ops() -> dict[str, Callable[..., Any]]:
    import torch
    import torch.nn.functional as F

    return {
        "relax.add": torch.add, "relax.subtract": torch.sub, "relax.multiply": torch.mul, "relax.divide": torch.div,
        "relax.nn.relu": lambda x: F.relu(x), "relax.sigmoid": torch.sigmoid, "relax.tanh": torch.tanh,
        "relax.nn.gelu": lambda x: F.gelu(x), "relax.clip": lambda x, min, max: torch.clamp(x, min, max),
        "relax.matmul": lambda a, b, out_dtype=None: torch.matmul(a, b),
        "relax.reshape": lambda x, shape: x.reshape(shape),
        "relax.permute_dims": lambda x, axes: x.permute(*(axes if axes is not None else reversed(range(x.dim())))),
        "relax.concat": lambda parts, axis: torch.cat(parts, dim=axis),
        "relax.split": _split,
        "relax.nn.softmax": lambda x, axis: F.softmax(x, dim=axis),
        "relax.nn.conv2d": _conv2d,
        "relax.nn.max_pool2d": _pool("max"), "relax.nn.avg_pool2d": _pool("avg"),
        "relax.nn.adaptive_avg_pool2d": lambda x, output_size, layout, out_layout: F.adaptive_avg_pool2d(x, output_size),
        "relax.nn.batch_norm": lambda x, gamma, beta, mean, var, axis, epsilon, **_: (
            F.batch_norm(x, mean, var, gamma, beta, training=False, eps=epsilon), mean, var),
        "relax.nn.layer_norm": lambda x, gamma, beta, axes, epsilon, **_: F.layer_norm(
            x, tuple(x.shape[-len(axes):]), gamma, beta, eps=epsilon),
    }


def eager(wl) -> Callable[[Mapping[str, np.ndarray]], Any]:
    """A function running ``wl``'s graph with PyTorch eager on inputs given by name."""
    import torch

    from gsl_eq.graph import Kind

    ops = _ops()
    graph = wl.graph
    order = graph.rpo()
    for node in order:
        if node.kind is Kind.CALL and node.op not in ops:
            raise NotImplementedError(f"no PyTorch eager form of {node.op}")
    params = {name: torch.from_numpy(np.array(value)) for name, value in wl.params.items()}  # copies: writable

    def run(inputs: Mapping[str, np.ndarray]):
        values: dict[int, Any] = {}
        for node in order:
            args = [values[id(i)] for i in node.inputs]
            if node.kind is Kind.VAR:
                values[id(node)] = params[node.name] if node.name in params else torch.from_numpy(
                    np.ascontiguousarray(inputs[node.name]))
            elif node.kind is Kind.CONST:
                values[id(node)] = torch.from_numpy(np.ascontiguousarray(node.value))
            elif node.kind is Kind.TUPLE:
                values[id(node)] = tuple(args)
            elif node.kind is Kind.GETITEM:
                values[id(node)] = args[0][node.attrs["index"]]
            else:
                values[id(node)] = ops[node.op](*args, **node.attrs)
        outs = [values[id(o)] for o in graph.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def to_numpy(inputs: Mapping[str, np.ndarray]):
        with torch.no_grad():
            out = run(inputs)
        return out.numpy() if isinstance(out, torch.Tensor) else tuple(o.numpy() for o in out)

    to_numpy.raw = run
    return to_numpy


def eager_seconds(wl, inputs: Mapping[str, np.ndarray], threads: int, rounds: int = 5,
                  round_seconds: float = 0.05) -> float:
    """Median seconds of one PyTorch eager run of ``wl`` on ``inputs`` with ``threads`` threads."""
    run = eager(wl).raw
    return median_seconds(lambda: run(inputs), threads, rounds, round_seconds)


def median_seconds(fn: Callable[[], Any], threads: int, rounds: int = 5, round_seconds: float = 0.05) -> float:
    """Median seconds of one call of ``fn`` under ``torch.no_grad`` with ``threads`` threads: two warm-up
    calls, then ``rounds`` rounds of as many calls as last about ``round_seconds``."""
    import torch

    torch.set_num_threads(threads)
    with torch.no_grad():
        for _ in range(2):
            fn()
        number = max(1, round(round_seconds / max(1e-6, _elapsed(fn, 1))))
        return statistics.median(_elapsed(fn, number) for _ in range(rounds))


def _elapsed(fn: Callable[[], Any], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number
