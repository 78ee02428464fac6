"""Models as users bring them: ONNX files and exported programs, imported, bound, optimized and
compared against an independent runtime (onnxruntime, PyTorch)."""

from __future__ import annotations

import io

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from gsl_eq import Workload, optimize, rules
from gsl_eq.errors import WorkloadError  # noqa: E402
from gsl_eq.graph import Kind  # noqa: E402

from ..exported import attention, cnn, onnx_file, onnxruntime_outputs  # noqa: E402


def assert_close(got, want, atol=1e-5):
    got = [got] if isinstance(got, np.ndarray) else list(got)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol)


@pytest.fixture(scope="module")
def cnn_file(tmp_path_factory):
    model, inputs = cnn()
    return onnx_file(model, inputs, tmp_path_factory.mktemp("onnx") / "cnn.onnx"), inputs


@pytest.fixture(scope="module")
def attention_file(tmp_path_factory):
    model, inputs = attention()
    return onnx_file(model, inputs, tmp_path_factory.mktemp("onnx") / "attention.onnx"), inputs


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["greedy", "saturate"])
def test_an_onnx_cnn_with_batch_norms_optimizes_to_onnxruntimes_outputs(cnn_file, mode):
    path, inputs = cnn_file
    wl = Workload.from_onnx(path)
    assert wl.graph.op_counts()["relax.nn.batch_norm"] == 2
    assert set(wl.params) >= {"stem.weight", "bn.running_mean"}, "initializers become named parameters"
    feed = {"x0": inputs[0].numpy()}
    result = optimize(wl, rules.default() + rules.algebraic(), mode=mode, time_limit=30)
    after = result.workload.graph.op_counts()
    assert after["relax.nn.conv2d"] == 2, "the parallel 1x1 convs are merged"
    assert after["relax.nn.batch_norm"] < 2
    assert_close(result.workload(**feed), onnxruntime_outputs(path, feed))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["greedy", "saturate"])
def test_an_onnx_attention_block_optimizes_to_onnxruntimes_outputs(attention_file, mode):
    path, inputs = attention_file
    wl = Workload.from_onnx(path)
    feed = {"x0": inputs[0].numpy()}
    result = optimize(wl, rules.default(), mode=mode, time_limit=30)
    assert wl.graph.op_counts()["relax.matmul"] == 6
    assert result.workload.graph.op_counts()["relax.matmul"] == 4, "query, key and value: one matmul"
    assert_close(result.workload(**feed), onnxruntime_outputs(path, feed))


def helper_model(tmp_path):
    """Built with onnx.helper: two MatMuls of one input by initializers, added, then Relu; batch symbolic."""
    rng = np.random.default_rng(0)
    w1, w2 = (rng.standard_normal((6, 4)).astype("float32") for _ in range(2))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["a"], name="left"),
         helper.make_node("MatMul", ["x", "w2"], ["b"], name="right"),
         helper.make_node("Add", ["a", "b"], ["c"], name="sum"),
         helper.make_node("Relu", ["c"], ["y"], name="act")],
        "two_matmuls", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [onnx.numpy_helper.from_array(w1, "w1"), onnx.numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    path = tmp_path / "two_matmuls.onnx"
    onnx.save(model, str(path))
    return model, path


@pytest.mark.parametrize("mode", ["greedy", "saturate"])
def test_a_model_built_with_onnx_helper_binds_its_batch_and_optimizes(tmp_path, mode):
    model, path = helper_model(tmp_path)
    with pytest.raises(Exception, match="bind=") as err:
        Workload.from_onnx(model)
    assert "batch" in str(err.value)
    wl = Workload.from_onnx(path, bind={"batch": 3})
    assert wl.graph.inputs[0].type.shape == (3, 6)
    result = optimize(wl, rules.default() + rules.algebraic(), mode=mode, time_limit=20)
    if mode == "saturate":  # greedy mode merges the two matmuls side by side first, and the sum no longer matches
        assert result.workload.graph.op_counts()["relax.matmul"] == 1, "x@w1 + x@w2 is x@(w1+w2)"
    feed = {"x": np.random.default_rng(1).standard_normal((3, 6)).astype("float32")}
    assert_close(result.workload(**feed), onnxruntime_outputs(path, feed))


def test_shapes_replace_the_declared_input_shapes(tmp_path):
    model, _ = helper_model(tmp_path)
    assert Workload.from_onnx(model, shapes={"x": (5, 6)}).graph.inputs[0].type.shape == (5, 6)


def test_a_dynamic_batch_exported_from_pytorch_is_bound(tmp_path):
    model, inputs = cnn()
    path = onnx_file(model, inputs, tmp_path / "dynamic.onnx", dynamic_batch=True, fold=True)
    wl = Workload.from_onnx(path, bind={"batch": 2})
    x = np.random.default_rng(2).standard_normal((2, 3, 16, 16)).astype("float32")
    assert_close(wl(x0=x), onnxruntime_outputs(path, {"x0": x}))


def test_bind_names_only_dimensions_the_model_has(tmp_path):
    model, _ = helper_model(tmp_path)
    with pytest.raises(WorkloadError, match=r"bind names \['seq'\].*it has \['batch'\]"):
        Workload.from_onnx(model, bind={"batch": 1, "seq": 8})
    with pytest.raises(WorkloadError, match="positive integers"):
        Workload.from_onnx(model, bind={"batch": 0})


def test_what_tvms_frontend_refuses_names_the_node_its_op_and_the_fix():
    """A Concat of a past key cache that the export left empty (rank 1) with new keys (rank 4): what a
    key/value cache exported from Hugging Face models holds."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["keys"], name="/attn/Relu"),
         helper.make_node("Concat", ["past", "keys"], ["y"], axis=0, name="/attn/Concat_3")],
        "cache", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.zeros((0,), "float32"), "past")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(WorkloadError) as err:
        Workload.from_onnx(model)
    text = str(err.value)
    assert "node '/attn/Concat_3' (op Concat, node 2 of 2)" in text, text
    assert "same ndim" in text and "use_cache=False" in text


def test_a_file_that_is_not_onnx_or_not_there_is_named(tmp_path):
    with pytest.raises(WorkloadError, match="no such file"):
        Workload.from_onnx(tmp_path / "missing.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00not a protobuf\xff" * 8)
    with pytest.raises(WorkloadError, match="junk.onnx is not an ONNX model"):
        Workload.from_onnx(junk)
    with pytest.raises(WorkloadError, match="got a int"):
        Workload.from_onnx(42)


def test_an_exported_program_imports_with_its_weights_as_parameters():
    model, inputs = attention()
    program = torch.export.export(model, inputs)
    wl = Workload.from_exported_program(program)
    assert wl.input_names[0] == "x" and len(wl.params) == 10
    with torch.no_grad():
        want = model(*inputs).numpy()
    assert_close(wl(x=inputs[0].numpy()), [want])
    with pytest.raises(WorkloadError, match="ExportedProgram, got a Block"):
        Workload.from_exported_program(model)


@pytest.mark.slow
def test_an_exported_program_with_a_dynamic_batch_is_bound():
    from gsl_eq.workload.importers import symbolic_dims
    from tvm.relax.frontend.torch import from_exported_program

    model, inputs = cnn()
    program = torch.export.export(model, (torch.randn(2, 3, 16, 16),), dynamic_shapes={"x": {0: torch.export.Dim("batch", max=8)}})
    (name,) = symbolic_dims(from_exported_program(program))
    wl = Workload.from_exported_program(program, bind={name: 4})
    x = torch.randn(4, 3, 16, 16)
    with torch.no_grad():
        want = model(x).numpy()
    assert_close(wl(x=x.numpy()), [want])


def test_a_module_holding_its_weights_as_constants_gets_them_as_parameters():
    from tvm.relax.frontend.onnx import from_onnx

    model, inputs = cnn()
    buffer = io.BytesIO()
    torch.onnx.export(model, inputs, buffer, dynamo=False, input_names=["x0"], do_constant_folding=False)
    mod = from_onnx(onnx.load_from_string(buffer.getvalue()))  # weights as relax.Constant
    wl = Workload.from_module(mod)
    assert not any(n.kind is Kind.CONST and n.value.ndim > 0 for n in wl.graph.rpo())
    assert len(wl.params) == 11
    result = optimize(wl, rules.default(), mode="greedy")
    assert result.workload.graph.op_counts()["relax.nn.conv2d"] == 2


def test_the_command_line_optimizes_an_onnx_file_with_its_batch_bound(tmp_path, capsys):
    from gsl_eq.cli import main

    model, inputs = cnn()
    path = onnx_file(model, inputs, tmp_path / "net.onnx", dynamic_batch=True)
    assert main(["optimize", str(path), "--mode", "greedy", "-o", str(tmp_path / "net.opt.py")]) == 2
    assert "--bind batch=1" in capsys.readouterr().out
    assert main(["optimize", str(path), "--bind", "batch=2", "--mode", "greedy", "-o", str(tmp_path / "net.opt.py"),
                 "--report", str(tmp_path / "r.json")]) == 0
    saved = Workload.load(tmp_path / "net.opt.py")
    assert saved.graph.op_counts()["relax.nn.conv2d"] == 2
    x = np.random.default_rng(3).standard_normal((2, 3, 16, 16)).astype("float32")
    assert_close(saved(x0=x), onnxruntime_outputs(path, {"x0": x}))
    with pytest.raises(SystemExit):
        main(["optimize", str(path), "--bind", "batch"])
    assert "--bind: expected NAME=SIZE with a positive integer size (batch=1), got 'batch'" in capsys.readouterr().err


def test_a_sweep_takes_an_onnx_file_as_a_model(tmp_path):
    from gsl_eq.sweeps.cells import grid
    from gsl_eq.sweeps.task import load_model

    model, inputs = cnn()
    path = onnx_file(model, inputs, tmp_path / "net.onnx")
    (cell,) = grid([str(path)], modes=["greedy"])
    assert cell.model == str(path.resolve()) and cell.label().startswith("net.onnx · default · greedy")
    assert load_model(cell.model).graph.op_counts()["relax.nn.batch_norm"] == 2
