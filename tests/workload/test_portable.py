"""Graphs that run without gsl_eq or TVM: exported, run by the standalone runner with PyTorch on the CPU
as TVM runs them, and the GPU kit's folder, run and report, end to end on a small case."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gsl_eq.errors import WorkloadError
from gsl_eq import export, models, optimize, rules
from gsl_eq.cost import GPU

torch = pytest.importorskip("torch")
from gsl_eq.workload import torch_runner  # noqa: E402
from gsl_eq.workload.torch_runner import Program, read_graph  # noqa: E402

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))


def run_file(path: Path, device: str = "cpu"):
    graph, values = read_graph(path)
    out = Program(graph, values, device)({e["name"]: values[e["name"]] for e in graph["inputs"]})
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["squeezenet", "nasrnn", "bert"])
def test_the_runner_computes_what_tvm_computes(tmp_path, model):
    wl = models.tensat_model(model) if model != "bert" else models.bert_encoder(layers=2, seq=16, dim=48, heads=3)
    path, arrays = export(wl, tmp_path / f"{model}.json")
    expected = wl(**wl.random_inputs(0))
    expected = [expected] if isinstance(expected, np.ndarray) else list(expected)
    got = run_file(path)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4 * float(np.abs(e).max()))


@pytest.mark.slow
def test_weights_as_seeds_keep_files_small_and_draw_alike_in_input_and_result(tmp_path):
    wl = models.tensat_model("squeezenet")
    result = optimize(wl, rules.tensat(), cost=GPU(), node_limit=5_000, iter_limit=4, time_limit=30)
    unfolded = result.workload.before_folds()
    assert unfolded.fold_calls(), "the result's weights are computed from the input's"
    full, _ = export(result.input, tmp_path / "full.json")
    small, _ = export(result.input.before_folds(), tmp_path / "in.json", params="seeds")
    out, _ = export(unfolded, tmp_path / "out.json", params="seeds")
    assert small.with_suffix(".npz").stat().st_size < full.with_suffix(".npz").stat().st_size / 20
    shared = {e["name"] for e in json.loads(small.read_text())["params"]} & \
        {e["name"] for e in json.loads(out.read_text())["params"]}
    name = sorted(shared)[0]
    assert np.array_equal(read_graph(small)[1][name], read_graph(out)[1][name])
    a, b = run_file(small), run_file(out)  # the runner folds the result's weight computations first
    np.testing.assert_allclose(b[0], a[0], rtol=1e-4, atol=1e-4 * float(np.abs(a[0]).max()))
    with pytest.raises(WorkloadError, match="params must be one of values, seeds"):
        export(wl, tmp_path / "x.json", params="random")


@pytest.mark.slow
def test_a_result_greedy_folded_step_by_step_comes_back_on_the_inputs_parameters():
    """Greedy mode folds after every rule: its result's parameters are folds of folds. Before its folds
    it computes them all again from the input's own parameters, and computes the same."""
    wl = models.resnet_bottleneck()
    result = optimize(wl, rules.default(), mode="greedy")
    assert set(result.workload.params) - set(wl.params), "folds made parameters of their own"
    before = result.workload.before_folds()
    assert set(before.params) <= set(wl.params) and before.fold_calls()
    inputs = wl.random_inputs(0)
    np.testing.assert_allclose(before(**inputs), wl(**inputs), rtol=1e-4, atol=1e-5)


def test_the_runner_imports_only_the_standard_library_numpy_and_torch():
    tree = ast.parse(Path(torch_runner.__file__).read_text())
    found = {(a.name if isinstance(n, ast.Import) else n.module).split(".")[0]
             for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assert found - {"numpy", "torch"} <= set(sys.stdlib_module_names) | {"__future__"}


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    """A prepared folder of two cases (parallel convs merged; batch norms folded), as gpu_truth.py --prepare writes it."""
    import gpu_truth

    folder = tmp_path_factory.mktemp("kit")
    cases = []
    for name, wl in (("inception_block", models.inception_block()), ("resnet_bottleneck", models.resnet_bottleneck())):
        cases.append(gpu_truth.optimized_case(name, "default", wl, rules.default(), {"time_limit": 30}, folder))
    size = gpu_truth.finish(folder, cases)
    assert size < gpu_truth.LIMIT_BYTES
    return folder


@pytest.mark.slow
def test_the_kit_runs_on_the_cpu_with_the_copied_runner_alone(kit):
    done = subprocess.run([sys.executable, str(kit / "runner.py"), "--device", "cpu", "--rounds", "3",
                           "--out", str(kit / "timings.json")], capture_output=True, text=True, cwd=kit)
    assert done.returncode == 0, done.stderr
    timings = json.loads((kit / "timings.json").read_text())
    assert [c["name"] for c in timings["cases"]] == ["inception_block · default", "resnet_bottleneck · default"]
    for case in timings["cases"]:
        assert case["agree"] and case["input_s"] > 0 and case["result_s"] > 0 and case["timing"] == ["eager"]
    merged, folded = timings["cases"]
    assert merged["result_kernels"] < merged["input_kernels"], "the parallel convs run as one"
    assert folded["calls"] == [10, 10] and folded["result_kernels"] == folded["input_kernels"]
    assert {k["op"] for k in timings["kernels"]} >= {"relax.nn.conv2d", "relax.nn.relu"}
    assert all(k["seconds"] > 0 for k in timings["kernels"])


@pytest.mark.slow
def test_the_report_renders_a_recorded_run(kit):
    import gpu_truth

    if not (kit / "timings.json").exists():
        torch_runner.main(["--device", "cpu", "--rounds", "3", "--dir", str(kit), "--out", str(kit / "timings.json")])
    section = gpu_truth.report(kit / "timings.json")
    assert "**no GPU was used**" in section
    rows = [line for line in section.splitlines() if line.startswith("| inception_block")]
    assert len(rows) == 1 and rows[0].count("|") == 10 and "yes" in rows[0]
    assert "Kendall's tau over" in section and "V100 preset" in section and "H200 preset" in section


def test_a_folder_past_the_limit_is_refused(tmp_path, monkeypatch):
    import gpu_truth

    (tmp_path / "big.npz").write_bytes(b"\0" * 2048)
    monkeypatch.setattr(gpu_truth, "LIMIT_BYTES", 1024)
    with pytest.raises(SystemExit, match="over the 0 MiB that travel"):
        gpu_truth.finish(tmp_path, [])
