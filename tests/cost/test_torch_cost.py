"""The gpu-measured cost model: the gpu model with each kernel timed with PyTorch (on a CUDA GPU where
there is one; on this machine's processor otherwise, the same machinery on another device)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from gsl_eq import models, optimize, rules
from gsl_eq.cost import GPU, MeasuredGPU, get_cost_model, graph_cost
from gsl_eq.extract.fusion import fuses
from gsl_eq.graph import Graph, Node, TensorType, TupleType

torch = pytest.importorskip("torch")
CUDA = torch.cuda.is_available()


def f32(*shape: int) -> TensorType:
    return TensorType(shape, "float32")


MATMUL = ("relax.matmul", {"out_dtype": "void"}, [f32(1024, 1024), f32(1024, 1024)], f32(1024, 1024))
SMALL_RELU = ("relax.nn.relu", {}, [f32(1024)], f32(1024))
CONCAT = ("relax.concat", {"axis": 1}, [TupleType((f32(1, 4, 8, 8), f32(1, 6, 8, 8)))], f32(1, 10, 8, 8))


def test_each_kernel_is_timed_once_and_cached_by_device(tmp_path):
    model = MeasuredGPU(torch_device="cpu", cache_dir=tmp_path)
    matmul, relu, concat = (model.kernel_seconds(*call) for call in (MATMUL, SMALL_RELU, CONCAT))
    assert model.measurements == 3 and model.failures == 0
    assert 0 < relu < matmul and 0 < concat
    assert 1e3 * relu < matmul            # 2 GFLOP against 1,024 elements, on any device
    assert model(*MATMUL) == matmul and model.measurements == 3          # remembered
    stored = json.loads(model.cache_path.read_text())["times"]
    assert len(stored) == 3 and all(model.scope in key for key in stored)

    again = MeasuredGPU(torch_device="cpu", cache_dir=tmp_path)
    assert [again.kernel_seconds(*call) for call in (MATMUL, SMALL_RELU, CONCAT)] == [matmul, relu, concat]
    assert again.measurements == 0


def test_views_and_splits_stay_free_without_a_measurement(tmp_path):
    model = MeasuredGPU(torch_device="cpu", cache_dir=tmp_path)
    parts = TupleType((f32(1, 2, 8, 8), f32(1, 2, 8, 8)))
    assert model("relax.split", {"indices_or_sections": 2, "axis": 1}, [f32(1, 4, 8, 8)], parts) == 0.0
    assert model("relax.reshape", {"shape": (4, 64)}, [f32(1, 4, 8, 8)], f32(4, 64)) == 0.0
    assert model.measurements == 0


def test_an_op_pytorch_cannot_run_is_priced_by_the_analytic_model(tmp_path):
    model = MeasuredGPU(torch_device="cpu", cache_dir=tmp_path)
    call = ("relax.nn.conv3d", {}, [f32(1, 2, 4, 4, 4), f32(2, 2, 1, 1, 1)], f32(1, 2, 4, 4, 4))
    with pytest.warns(RuntimeWarning, match="no PyTorch form of relax.nn.conv3d.*analytic V100"):
        cost = model(*call)
    assert cost == GPU()(*call)
    assert model.failures == 1 and model.measurements == 0
    assert not model.cache_path.exists()


def test_an_epilogue_saves_the_measured_kernel_less_its_analytic_share(tmp_path):
    model = MeasuredGPU(torch_device="cpu", cache_dir=tmp_path)
    relu = ("relax.nn.relu", {}, [f32(1, 64, 56, 56)], f32(1, 64, 56, 56))
    assert fuses(model)
    saving = model.epilogue_saving(*relu, fused=(0,))
    assert saving == pytest.approx(max(0.0, model.kernel_seconds(*relu) - GPU().epilogue_seconds(*relu, fused=(0,))))
    assert 0 < saving <= model.kernel_seconds(*relu)
    assert MeasuredGPU(torch_device="cpu", cache_dir=tmp_path, fusion="none").epilogue_saving(*relu, fused=(0,)) == 0


@pytest.mark.slow
def test_optimize_under_measured_prices_returns_an_equal_graph_priced_so(tmp_path):
    wl = models.tensat_model("nasrnn")
    model = MeasuredGPU(torch_device="cpu", cache_dir=tmp_path)
    result = optimize(wl, rules.tensat(), cost=model, node_limit=20_000, iter_limit=8, multi_iterations=1,
                      cycles="filter")
    report = result.report
    assert report.cost_model == "gpu-measured" and report.cost_unit == "s"
    assert report.cost_before == pytest.approx(graph_cost(wl.fold_params().graph, model))
    assert report.cost_after == pytest.approx(graph_cost(result.workload.graph, model)) and report.cost_after <= report.cost_before
    inputs = wl.random_inputs(1)
    np.testing.assert_allclose(result.workload(**inputs), wl(**inputs), rtol=1e-4, atol=1e-5)
    assert model.measurements > 5 and model.failures == 0


@pytest.mark.skipif(CUDA, reason="this machine has a CUDA GPU")
def test_by_name_without_a_gpu_the_error_says_what_to_use():
    with pytest.raises(ValueError, match="no CUDA GPU.*cost='gpu'"):
        get_cost_model("gpu-measured")
    with pytest.raises(ValueError, match="no CUDA GPU"):
        MeasuredGPU(torch_device="cuda:0")


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
def test_on_a_gpu_small_kernels_cost_their_launch_and_a_matmul_its_flops(tmp_path):
    model = get_cost_model("gpu-measured")
    assert isinstance(model, MeasuredGPU) and "torch" in model.scope
    gpu = MeasuredGPU(cache_dir=tmp_path)
    relu, matmul = gpu.kernel_seconds(*SMALL_RELU), gpu.kernel_seconds(*MATMUL)
    assert 1e-6 < relu < 50e-6          # a launch
    assert 20e-6 < matmul < 5e-3        # 2 GFLOP on any CUDA GPU of the last decade
    x = Node.var("x", f32(64, 1024))
    ws = [Node.var(f"w{i}", f32(1024, 1024)) for i in range(3)]
    three = Graph([x, *ws], [Node.tuple([Node.call("relax.matmul", [x, w]) for w in ws])])
    assert graph_cost(three, gpu) > 0 and gpu.measurements >= 3
