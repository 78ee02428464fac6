"""gsl_eq inside TVM's flow: the Optimize pass in tvm.compile and in Sequentials, its outputs equal to the
same module compiled without gsl_eq."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import relax

from gsl_eq.errors import GslEqError, UnsupportedModuleError
from gsl_eq import rules
from gsl_eq.transform import FunctionRun, Optimize, pipeline

from .exported import attention, cnn

torch = pytest.importorskip("torch")
from tvm.relax.frontend.torch import from_exported_program  # noqa: E402


def exported(build, **options):
    model, inputs = build()
    with torch.no_grad():
        program = torch.export.export(model, inputs)
    return from_exported_program(program, **options), [t.numpy() for t in inputs]


def run(ex, *args):
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](*[tvm.runtime.tensor(a) for a in args])
    return [o.numpy() for o in out] if isinstance(out, tvm_ffi.Array) else [out.numpy()]


def calls(mod, op, function="main"):
    found = []
    relax.analysis.post_order_visit(mod[function], lambda e: found.append(e) if isinstance(e, relax.Call)
                                    and getattr(e.op, "name", "") == op else None)
    return len(found)


def assert_close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["greedy", "saturate"])
def test_tvm_compile_runs_the_pipeline_on_a_pytorch_cnn(mode):
    mod, inputs = exported(cnn)  # weights as relax.Constant, as a TVM user imports them
    before = mod.clone()
    runs: list[FunctionRun] = []
    ex = tvm.compile(mod, "llvm", relax_pipeline=pipeline(rules.default() + rules.algebraic(), mode=mode,
                                                            time_limit=30, on_run=runs.append))
    assert tvm_ffi.structural_equal(mod, before), "the pass changes no module it is given"
    assert [r.function for r in runs] == ["main"]
    assert runs[0].report.calls_after < runs[0].report.calls_before
    assert_close(run(ex, *inputs), run(tvm.compile(mod, "llvm"), *inputs))


@pytest.mark.slow
def test_the_pass_after_tvms_own_passes_merges_a_transformers_projections():
    mod, inputs = exported(attention)
    opt = Optimize(rules.default(), mode="saturate", time_limit=30)
    assert isinstance(opt, tvm.transform.ModulePass)
    seq = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(), relax.transform.FoldConstant(),
                                    relax.transform.CanonicalizeBindings(), opt])
    optimized = seq(mod)
    assert calls(mod, "relax.matmul") == 6 and calls(optimized, "relax.matmul") == 4
    assert len(opt.runs) == 1 and opt.runs[0].report is opt.runs[0].result.report
    assert [p.name for p in optimized["main"].params] == [p.name for p in mod["main"].params]
    assert_close(run(tvm.compile(optimized, "llvm"), *inputs), run(tvm.compile(mod, "llvm"), *inputs))


def test_weights_passed_as_parameters_are_optimized_and_bound():
    mod, inputs = exported(cnn, keep_params_as_input=True)
    mod, values = relax.frontend.detach_params(mod)
    names = [p.name for p in mod["main"].params]
    weights = dict(zip(names[1:], values["main"]))
    optimized = Optimize(rules.default(), mode="greedy", params=weights)(mod)
    assert [p.name for p in optimized["main"].params] == names[:1], "main takes its runtime input only"
    assert calls(optimized, "relax.nn.conv2d") == 2
    want = run(tvm.compile(mod, "llvm"), *inputs, *[w.numpy() for w in weights.values()])
    assert_close(run(tvm.compile(optimized, "llvm"), *inputs), want)


def test_weights_a_frontend_attached_are_found_without_params():
    mod, inputs = exported(cnn, keep_params_as_input=True)  # values in main's "params" attribute
    optimized = Optimize(rules.default(), mode="greedy")(mod)
    assert len(optimized["main"].params) == 1 and "params" not in (optimized["main"].attrs or {})
    detached, values = relax.frontend.detach_params(mod)
    want = run(tvm.compile(detached, "llvm"), *inputs, *[v.numpy() for v in values["main"]])
    assert_close(run(tvm.compile(optimized, "llvm"), *inputs), want)


def test_every_relax_function_is_optimized_or_the_named_ones():
    mod, inputs = exported(cnn)
    two = mod.clone()
    two["second"] = mod["main"].with_attr("global_symbol", "second")
    both = Optimize(rules.default(), mode="greedy")(two)
    assert calls(both, "relax.nn.conv2d", "main") == calls(both, "relax.nn.conv2d", "second") == 2
    assert both["second"].attrs["global_symbol"] == "second"
    only = Optimize(rules.default(), mode="greedy", functions=["second"])
    one = only(two)
    assert calls(one, "relax.nn.conv2d", "main") == 3 and [r.function for r in only.runs] == ["second"]
    with pytest.raises(GslEqError, match=r"functions \['third'\] are not Relax functions"):
        Optimize(functions=["third"])(two)


def test_a_function_after_legalization_is_refused_with_the_fix():
    mod, _ = exported(cnn)
    legalized = relax.transform.LegalizeOps()(mod)
    with pytest.raises(UnsupportedModuleError, match="cannot read function 'main'.*before LegalizeOps"):
        Optimize(rules.default())(legalized)


def test_bind_sizes_a_symbolic_batch():
    model, _ = cnn()
    batch = torch.export.Dim("batch", max=8)
    program = torch.export.export(model, (torch.randn(2, 3, 16, 16),), dynamic_shapes={"x": {0: batch}})
    mod = from_exported_program(program)
    (name,) = {str(v) for v in relax.analysis.defined_symbolic_vars(mod["main"])}
    with pytest.raises(UnsupportedModuleError, match=f"bind={{'{name}': 1}}"):
        Optimize(rules.default(), mode="greedy")(mod)
    with pytest.raises(GslEqError, match=r"bind names \['seq'\]"):
        Optimize(bind={"seq": 1})(mod)
    optimized = Optimize(rules.default(), mode="greedy", bind={name: 3})(mod)
    x = np.random.default_rng(0).standard_normal((3, 3, 16, 16)).astype("float32")
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    assert_close(run(tvm.compile(optimized, "llvm"), x), [want])


def test_a_module_straight_from_tvms_onnx_frontend_is_read():
    """TVM's ONNX frontend computes a Gather's table shape at run time (shape_of a constant)."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    from tvm.relax.frontend.onnx import from_onnx

    table = numpy_helper.from_array(np.random.default_rng(0).standard_normal((10, 8)).astype("float32"), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["e"]), helper.make_node("Relu", ["e"], ["y"])], "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])], [table])
    mod = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), shape_dict={"ids": [1, 4]})
    assert calls(mod, "relax.shape_of") == 1
    opt = Optimize(rules.default(), mode="greedy")
    ex = tvm.compile(mod, "llvm", relax_pipeline=pipeline(opt))
    assert len(opt.runs) == 1, "pipeline runs the Optimize it is given, whose runs stay readable"
    ids = np.array([[0, 3, 9, 3]], "int64")
    np.testing.assert_allclose(run(ex, ids)[0], np.maximum(numpy_helper.to_array(table)[ids], 0), rtol=1e-6)
    with pytest.raises(GslEqError, match="options .mode. or an Optimize pass, not both"):
        pipeline(opt, mode="saturate")
