"""Relax ops as PyTorch calls: a graph run op by op with ``torch.nn.functional``.

:func:`torch_op` gives the PyTorch form of one Relax op (called with the op's inputs, then its
attributes as keywords, as a graph node holds them); :func:`eager` runs a whole workload's graph
with them, its parameters made tensors once. The benchmarks compare TVM's runs with this PyTorch
eager reference, and the measured GPU cost model (:class:`~gsl_eq.extract.torch_cost.MeasuredGPU`)
times single ops with it (:func:`round_seconds`). PyTorch is the ``torch`` extra; an op with no form here raises
``NotImplementedError`` naming it.

    run = eager(wl)
    outputs = run(wl.random_inputs(0))          # numpy arrays, as Workload.__call__ gives
"""

from __future__ import annotations

import functools
import math
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from .graph import Kind

if TYPE_CHECKING:
    from .workload import Workload

__all__ = ["eager", "round_seconds", "torch_op", "torch_ops"]


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


def _nn_pad(x, pad_width, pad_mode="constant", pad_value=0.0, **_):
    import torch.nn.functional as F

    if pad_mode != "constant":
        raise NotImplementedError(f"nn.pad in mode {pad_mode}")
    before, after = pad_width[0::2], pad_width[1::2]  # Relax: (before, after) per axis, first axis first
    return F.pad(x, [w for axis in reversed(range(len(before))) for w in (before[axis], after[axis])], value=pad_value)


def _batch_norm(x, gamma, beta, mean, var, axis, epsilon, center, scale, momentum, training=False, **_):
    """Relax's batch_norm: in training, by the batch's statistics (its biased variance), the moving
    ones updated by ``momentum``; otherwise by the moving statistics. Returns (output, mean, var)."""
    import torch

    axis %= x.dim()
    shape = [-1 if d == axis else 1 for d in range(x.dim())]
    if training:
        dims = [d for d in range(x.dim()) if d != axis]
        used_mean, used_var = x.mean(dims), x.var(dims, unbiased=False)
        mean, var = (1 - momentum) * mean + momentum * used_mean, (1 - momentum) * var + momentum * used_var
    else:
        used_mean, used_var = mean, var
    out = (x - used_mean.reshape(shape)) / torch.sqrt(used_var.reshape(shape) + epsilon)
    out = out * gamma.reshape(shape) if scale else out
    return (out + beta.reshape(shape) if center else out), mean, var


@functools.cache
def torch_ops() -> dict[str, Callable[..., Any]]:
    """Every Relax op with a PyTorch form, by name (``"relax.nn.conv2d"``)."""
    import torch
    import torch.nn.functional as F

    return {
        "relax.add": torch.add, "relax.subtract": torch.sub, "relax.multiply": torch.mul, "relax.divide": torch.div,
        "relax.nn.relu": lambda x: F.relu(x), "relax.sigmoid": torch.sigmoid, "relax.tanh": torch.tanh,
        "relax.exp": torch.exp, "relax.sqrt": torch.sqrt, "relax.negative": torch.neg,
        "relax.nn.gelu": lambda x: F.gelu(x), "relax.clip": lambda x, min, max: torch.clamp(x, min, max),
        "relax.matmul": lambda a, b, out_dtype=None: torch.matmul(a, b),
        "relax.reshape": lambda x, shape: x.reshape(shape),
        "relax.permute_dims": lambda x, axes: x.permute(*(axes if axes is not None else reversed(range(x.dim())))),
        "relax.concat": lambda parts, axis: torch.cat(parts, dim=axis),
        "relax.split": _split,
        "relax.nn.pad": _nn_pad,
        "relax.nn.softmax": lambda x, axis: F.softmax(x, dim=axis),
        "relax.nn.conv2d": _conv2d,
        "relax.nn.max_pool2d": _pool("max"), "relax.nn.avg_pool2d": _pool("avg"),
        "relax.nn.adaptive_avg_pool2d": lambda x, output_size, layout, out_layout: F.adaptive_avg_pool2d(x, output_size),
        "relax.nn.batch_norm": _batch_norm,
        "relax.nn.layer_norm": lambda x, gamma, beta, axes, epsilon, **_: F.layer_norm(
            x, tuple(x.shape[-len(axes):]), gamma, beta, eps=epsilon),
    }


def torch_op(op: str) -> Callable[..., Any]:
    """The PyTorch form of Relax op ``op``: called with the op's inputs (a tuple input as a tuple of
    tensors) and its attributes as keywords; ``NotImplementedError`` when there is none."""
    try:
        return torch_ops()[op]
    except KeyError:
        raise NotImplementedError(f"no PyTorch form of {op}") from None


def eager(wl: Workload) -> Callable[[Mapping[str, np.ndarray]], Any]:
    """A function running ``wl``'s graph with PyTorch eager on inputs given by name, returning numpy
    arrays (a tuple of them for several outputs) under ``torch.no_grad``; its ``raw`` attribute runs
    it on the same inputs returning tensors (for timing, inside the caller's ``no_grad``)."""
    import torch

    graph = wl.graph
    order = graph.rpo()
    ops = {node.op: torch_op(node.op) for node in order if node.kind is Kind.CALL}
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

    to_numpy.raw = run  # type: ignore[attr-defined]
    return to_numpy


def round_seconds(fn: Callable[[], Any], rounds: int = 5, seconds: float = 0.05,
                  synchronize: Callable[[], Any] = lambda: None) -> list[float]:
    """Seconds per call of ``fn`` in each of ``rounds`` rounds, after two warm-up calls: a round
    runs as many calls as last about ``seconds`` back to back, then ``synchronize()`` (on a GPU,
    ``torch.cuda.synchronize``: the calls queue asynchronously, as TASO times an op by the events
    around a loop of its launches)."""

    def elapsed(number: int) -> float:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        synchronize()
        return (time.perf_counter() - start) / number

    for _ in range(2):
        fn()
    synchronize()
    number = max(1, min(10_000, round(seconds / max(1e-7, elapsed(1)))))
    return [elapsed(number) for _ in range(rounds)]
