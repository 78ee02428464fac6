"""Relax ops as PyTorch calls: every op in the table computes what TVM computes, and whole graphs run eagerly."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import relax

from gsl_eq import Workload, models
from gsl_eq.workload.torch_ops import eager, round_seconds, torch_op, torch_ops

pytest.importorskip("torch")


def var(name: str, *shape: int) -> relax.Var:
    return relax.Var(name, relax.TensorType(shape, "float32"))


x4, y4 = var("x", 2, 6, 9, 9), var("y", 2, 6, 9, 9)
x2, w2 = var("x", 5, 8), var("w", 8, 3)
ch = var("c", 6)
stats = var("b", 6), var("m", 6), var("v", 6)
R, N = relax.op, relax.op.nn

#: One instance of each op of the table, as a Relax expression over x (an input) and parameters.
CASES = {
    "relax.add": R.add(x4, y4), "relax.subtract": R.subtract(x4, y4), "relax.multiply": R.multiply(x4, y4),
    "relax.divide": R.divide(x4, R.exp(y4)), "relax.exp": R.exp(x4), "relax.sqrt": R.sqrt(R.exp(x4)),
    "relax.negative": R.negative(x4), "relax.nn.relu": N.relu(x4), "relax.sigmoid": R.sigmoid(x4),
    "relax.tanh": R.tanh(x4), "relax.nn.gelu": N.gelu(x4), "relax.clip": R.clip(x4, -0.3, 0.4),
    "relax.matmul": R.matmul(x2, w2), "relax.reshape": R.reshape(x4, (2, 6, 81)),
    "relax.permute_dims": R.add(R.permute_dims(x4, [0, 2, 3, 1]), R.permute_dims(var("z", 6, 9, 9, 2), None)),
    "relax.concat": R.concat([x4, y4], axis=1),
    "relax.split": R.concat([R.split(x4, 3, axis=1)[1], R.split(x4, [1, 5], axis=1)[1]], axis=1),
    "relax.nn.pad": N.pad(x4, (0, 0, 0, 0, 1, 2, 0, 3)),
    "relax.nn.softmax": N.softmax(x4, axis=2),
    "relax.nn.conv2d": N.conv2d(x4, var("k", 12, 3, 3, 3), strides=(2, 1), padding=(1, 0, 2, 1), groups=2),
    "relax.nn.max_pool2d": N.max_pool2d(x4, (3, 3), (2, 2), padding=(1, 1, 1, 1)),
    "relax.nn.avg_pool2d": R.add(N.avg_pool2d(x4, (3, 3), (1, 1), padding=(1, 1, 1, 1)),
                                 N.avg_pool2d(y4, (3, 3), (1, 1), padding=(1, 1, 1, 1), count_include_pad=True)),
    "relax.nn.adaptive_avg_pool2d": N.adaptive_avg_pool2d(x4, (1, 1)),
    "relax.nn.batch_norm": relax.Tuple([  # in training (Relax's default) and not, every output
        *(N.batch_norm(x4, ch, *stats, axis=1, momentum=0.25)[k] for k in range(3)),
        N.batch_norm(x4, ch, *stats, axis=1, center=False, training=False)[0]]),
    "relax.nn.layer_norm": N.layer_norm(x4, var("g", 9, 9), var("bb", 9, 9), axes=[-2, -1]),
    "relax.eye": R.add(R.multiply(x2, R.eye(5, 8)), R.eye(5, 8, k=2)),  # TASO's merge_gconv builds kernels of it
    "relax.zeros": R.add(x2, R.zeros((5, 8), "float32")),
    "relax.astype": R.astype(R.astype(x2, "float16"), "float32"),
    "relax.mean": R.add(R.mean(x4, axis=[2, 3], keepdims=True), R.mean(x4)),
    "relax.variance": R.add(R.variance(x4, axis=[1], keepdims=True), R.variance(x4)),
    "relax.strided_slice": R.strided_slice(x4, axes=[1, 3], begin=[1, 0], end=[5, 9], strides=[2, 3]),
    "relax.cumsum": relax.Tuple([R.cumsum(x2, axis=1), R.cumsum(x2, axis=None, exclusive=True)]),
    "relax.equal": R.astype(R.equal(x2, R.clip(x2, -0.5, 0.5)), "float32"),
}


def test_every_op_has_a_case():
    assert set(CASES) == set(torch_ops())


@pytest.mark.parametrize("op", sorted(CASES))
def test_the_pytorch_form_computes_what_tvm_computes(op):
    wl = Workload.from_expr(CASES[op], ["x"] if op != "relax.add" else ["x", "y"])
    assert op in {n.op for n in wl.graph.rpo() if n.op}
    inputs = wl.random_inputs(3)
    expected, got = wl(**inputs), eager(wl)(inputs)
    for e, g in zip(*((e,) if isinstance(e, np.ndarray) else e for e in (expected, got)), strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5 * float(np.abs(e).max()))


@pytest.mark.slow
@pytest.mark.parametrize("model", ["bert", "nasrnn", "resnext50", "squeezenet"])
def test_tensats_graphs_run_eagerly_as_tvm_runs_them(model):
    wl = models.tensat_resnext50(image_size=64, blocks=(1, 1, 1, 1)) if model == "resnext50" else models.tensat_model(model)
    inputs = wl.random_inputs(0)
    expected, got = wl(**inputs), eager(wl)(inputs)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * float(np.abs(expected).max()))


def test_an_op_without_a_form_is_named():
    with pytest.raises(NotImplementedError, match="relax.nn.conv3d"):
        torch_op("relax.nn.conv3d")
    wl = Workload.from_expr(R.cumprod(x2, axis=0), ["x"])
    with pytest.raises(NotImplementedError, match="relax.cumprod"):
        eager(wl)


def test_rounds_time_calls_between_synchronizations():
    calls, syncs = [], []
    times = round_seconds(lambda: calls.append(1), rounds=4, seconds=0.001, synchronize=lambda: syncs.append(1))
    assert len(times) == 4 and all(t > 0 for t in times)
    assert len(syncs) == 1 + 1 + 4            # after the warm-up, the probe and each round
    assert len(calls) > 2 + 1 + 4             # a round of 1 ms holds many calls of an append
