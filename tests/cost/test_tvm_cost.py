"""The tvm cost model: a graph costs its fused, scheduled kernels; a call is priced alone or as an epilogue."""

import pytest
from tvm import relax
from tvm.s_tir import meta_schedule as ms

from gsl_eq import Workload, optimize, rules
from gsl_eq.cost import get_cost_model, graph_cost
from gsl_eq.cost.tvm_cost import TVMCost
from gsl_eq.graph.types import TensorType
from gsl_eq.measure.schedule_db import ScheduleDatabase

F32 = "float32"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("schedules")


def database(cache):
    return ScheduleDatabase(samples=1, cache_dir=cache, number=2, repeat=1)


def conv_bias_relu() -> Workload:
    x = relax.Var("x", relax.TensorType((1, 8, 8, 8), F32))
    w = relax.Var("w", relax.TensorType((8, 8, 3, 3), F32))
    b = relax.Var("b", relax.TensorType((1, 8, 1, 1), F32))
    conv = relax.op.nn.conv2d(x, w, padding=(1, 1))
    return Workload.from_expr(relax.op.nn.relu(relax.op.add(conv, b)), ["x"])


@pytest.mark.slow
def test_a_graph_costs_its_fused_kernels_plus_dispatch_and_a_second_instance_measures_nothing(cache):
    wl = conv_bias_relu()
    model = TVMCost(database(cache))
    kernels = ms.relax_integration.extract_tasks(model.schedules.fuse(wl.mod), model.schedules.target)
    assert [t.weight for t in kernels] == [1]  # conv, add and relu: one fused kernel
    kernel = kernels[0].dispatched[0]
    assert 0 < model.dispatch < 1e-4
    assert graph_cost(wl.graph, model) == pytest.approx(model.schedules.choice(kernel).seconds + model.dispatch)
    assert model.schedules.measurements >= 1

    again = TVMCost(database(cache))
    assert graph_cost(wl.graph, again) == pytest.approx(model.schedules.choice(kernel).seconds + again.dispatch)
    assert again.schedules.measurements == 0


@pytest.mark.slow
def test_an_epilogue_costs_what_it_adds_to_a_kernel_an_anchor_its_kernel_alone(cache):
    model = TVMCost(database(cache))
    x, y = TensorType((1, 8, 32, 32), F32), TensorType((1, 8, 1, 1), F32)
    conv = model("relax.nn.conv2d", {"padding": (1, 1, 1, 1)}, [x, TensorType((8, 8, 3, 3), F32)], x)
    alone = model._kernels(relax_module(x))  # relu built as its own kernel
    assert len(alone) == 1
    relu = model("relax.nn.relu", {}, [x], x)
    assert 0 <= relu < model.schedules.choice(alone[0][0]).seconds + model.dispatch
    assert 0 <= model("relax.add", {}, [x, y], x) < conv
    # no input shaped like the output: not an epilogue, priced as its own kernel
    outer = TensorType((8, 8), F32)
    priced = model("relax.add", {}, [TensorType((8, 1), F32), TensorType((1, 8), F32)], outer)
    assert priced >= model.dispatch
    assert model("relax.nn.relu", {}, [x], x) == relu  # remembered


def relax_module(ty: TensorType):
    x = relax.Var("x", relax.TensorType(ty.shape, ty.dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.nn.relu(x))
        bb.emit_func_output(out)
    return bb.get()


def test_optimize_under_tvm_keeps_the_outputs_and_prices_with_the_given_database(cache, same_outputs):
    wl = conv_bias_relu()
    schedules = database(cache)
    result = optimize(wl, rules.default(), cost="tvm", schedules=schedules, time_limit=60)
    assert result.report.cost_model == "tvm" and result.report.cost_unit == "s"
    assert result.report.cost_before == pytest.approx(graph_cost(wl.fold_params().graph, TVMCost(schedules)), rel=0.2)
    same_outputs(wl, result.workload)


def test_tvm_is_a_named_model():
    assert isinstance(get_cost_model("TVM"), TVMCost)
