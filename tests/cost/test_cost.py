"""Cost models: op counting, analytic roofline, measured times with an on-disk cache."""

from __future__ import annotations

import json
import math

import pytest

from gsl_eq.cost import CostModel, Measured, OpCount, Roofline, get_cost_model, graph_cost, op_bytes, op_flops
from gsl_eq.graph import Graph, Node, TensorType, TupleType, from_relax
from gsl_eq.models import diamond_conv


def f32(*shape: int) -> TensorType:
    return TensorType(shape, "float32")


def call_types(op, inputs, **attrs):
    """(op, canonical attrs, input types, output type) of a call TVM types for us."""
    node = Node.call(op, [Node.var(f"in{i}", t) if isinstance(t, TensorType) else Node.tuple(
        [Node.var(f"in{i}_{j}", f) for j, f in enumerate(t.fields)]) for i, t in enumerate(inputs)], attrs)
    return node.op, node.attrs, [i.type for i in node.inputs], node.type


# ---------------------------------------------------------------- OpCount and graph_cost


def test_opcount_counts_the_calls_of_the_diamond():
    graph = from_relax(diamond_conv().mod)
    assert graph_cost(graph, OpCount()) == 3.0          # two conv2d and an add
    assert graph_cost(graph, "OpCount") == 3.0


def test_graph_cost_charges_calls_only():
    x = Node.var("x", f32(1, 8, 4, 4))
    parts = Node.call("relax.split", [x], {"indices_or_sections": 2, "axis": 1})
    a, b = Node.getitem(parts, 0), Node.getitem(parts, 1)
    y = Node.call("relax.concat", [Node.tuple([Node.call("relax.nn.relu", [a]), b])], {"axis": 1})
    graph = Graph([x], [y])
    seen = []

    class Spy:
        name = "spy"

        def __call__(self, op, attrs, inputs, output):
            seen.append((op, list(inputs), output))
            return 1.5

    assert isinstance(Spy(), CostModel)
    assert graph_cost(graph, Spy()) == 4.5
    assert sorted(op for op, _, _ in seen) == ["relax.concat", "relax.nn.relu", "relax.split"]
    concat = next(s for s in seen if s[0] == "relax.concat")
    assert concat[1] == [TupleType((f32(1, 4, 4, 4), f32(1, 4, 4, 4)))] and concat[2] == f32(1, 8, 4, 4)


# ---------------------------------------------------------------- Roofline


def test_conv2d_flops_match_hand_count():
    op, attrs, inputs, out = call_types("relax.nn.conv2d", [f32(2, 16, 32, 32), f32(32, 16, 3, 3)],
                                        padding=(1, 1), strides=(2, 2))
    assert out == f32(2, 32, 16, 16)
    assert op_flops(op, attrs, inputs, out) == 2 * 2 * 32 * 16 * 16 * 16 * 3 * 3
    assert op_bytes(op, attrs, inputs, out) == 4 * (2 * 16 * 32 * 32 + 32 * 16 * 9 + 2 * 32 * 16 * 16)


def test_grouped_and_nhwc_conv2d_flops():
    op, attrs, inputs, out = call_types("relax.nn.conv2d", [f32(1, 8, 8, 16), f32(3, 3, 4, 16)],
                                        data_layout="NHWC", kernel_layout="HWIO", groups=4)
    assert out == f32(1, 6, 6, 16)
    assert op_flops(op, attrs, inputs, out) == 2 * 1 * 16 * 6 * 6 * (16 // 4) * 3 * 3


def test_conv2d_transpose_flops():
    op, attrs, inputs, out = call_types("relax.nn.conv2d_transpose", [f32(1, 8, 5, 5), f32(8, 4, 3, 3)])
    assert out == f32(1, 4, 7, 7)
    assert op_flops(op, attrs, inputs, out) == 2 * 8 * 5 * 5 * 4 * 3 * 3


def test_batched_broadcast_matmul_flops():
    op, attrs, inputs, out = call_types("relax.matmul", [f32(3, 1, 8, 16), f32(5, 16, 4)])
    assert out == f32(3, 5, 8, 4)
    assert op_flops(op, attrs, inputs, out) == 2 * (3 * 5) * 8 * 4 * 16


def test_einsum_flops():
    op, attrs, inputs, out = call_types("relax.einsum", [TupleType((f32(8, 16), f32(16, 4)))], subscripts="ij,jk->ik")
    assert op_flops(op, attrs, inputs, out) == 2 * 8 * 16 * 4


def test_bigger_conv_costs_more():
    model = Roofline()
    small = call_types("relax.nn.conv2d", [f32(1, 16, 16, 16), f32(16, 16, 3, 3)])
    big = call_types("relax.nn.conv2d", [f32(1, 64, 32, 32), f32(64, 64, 3, 3)])
    assert model(*big) > model(*small) > model.overhead


def test_big_conv_is_compute_bound():
    model = Roofline()
    op, attrs, inputs, out = call_types("relax.nn.conv2d", [f32(1, 64, 56, 56), f32(64, 64, 3, 3)])
    flops = op_flops(op, attrs, inputs, out)
    assert model(op, attrs, inputs, out) == pytest.approx(flops / model.peak_flops + model.overhead)


def test_elementwise_add_is_memory_bound():
    model = Roofline()
    call = call_types("relax.add", [f32(1, 64, 56, 56), f32(1, 64, 56, 56)])
    n = 64 * 56 * 56
    assert op_flops(*call) == n
    assert op_bytes(*call) == 3 * 4 * n
    assert model(*call) == pytest.approx(3 * 4 * n / model.bandwidth + model.overhead)
    assert 3 * 4 * n / model.bandwidth > n / model.peak_flops


def test_costlier_elementwise_ops_and_reductions():
    x = [f32(4, 1024)]
    assert op_flops(*call_types("relax.exp", x)) > op_flops(*call_types("relax.nn.relu", x)) == 4 * 1024
    assert op_flops(*call_types("relax.sum", x, axis=(1,))) == 4 * 1024
    assert op_flops(*call_types("relax.nn.softmax", x)) == 5 * 4 * 1024
    assert op_flops(*call_types("relax.nn.max_pool2d", [f32(1, 4, 8, 8)], pool_size=(2, 2), strides=(2, 2))) == 4 * 4 * 4 * 4


@pytest.mark.parametrize("op, attrs", [
    ("relax.reshape", {"shape": (64, 16)}),
    ("relax.expand_dims", {"axis": 0}),
    ("relax.flatten", {}),
])
def test_views_cost_only_the_overhead(op, attrs):
    model = Roofline(overhead=3e-6)
    call = call_types(op, [f32(8, 8, 16)], **attrs)
    assert op_flops(*call) == op_bytes(*call) == 0
    assert model(*call) == 3e-6


def test_data_movement_moves_bytes_without_flops():
    call = call_types("relax.permute_dims", [f32(8, 8, 16)])
    assert op_flops(*call) == 0
    assert op_bytes(*call) == 2 * 4 * 8 * 8 * 16
    assert Roofline()(*call) > Roofline().overhead


def test_unknown_op_falls_back_to_elementwise():
    inputs, out = [f32(10, 10), TensorType((10, 10), "float16")], f32(10, 10)
    assert op_flops("relax.no_such_op", {}, inputs, out) == 100
    assert op_bytes("relax.no_such_op", {}, inputs, out) == 400 + 200 + 400
    assert math.isfinite(Roofline()("relax.no_such_op", {}, inputs, out))


def test_roofline_rejects_nonsense_parameters():
    with pytest.raises(ValueError, match="peak_flops"):
        Roofline(peak_flops=0)


# ---------------------------------------------------------------- Measured


MEASURED_CALLS = [
    call_types("relax.nn.conv2d", [f32(1, 8, 16, 16), f32(8, 8, 3, 3)], padding=(1, 1)),
    call_types("relax.add", [f32(1, 8, 16, 16), f32(1, 8, 16, 16)]),
    call_types("relax.concat", [TupleType((f32(1, 4, 8, 8), f32(1, 6, 8, 8)))], axis=1),
    call_types("relax.take", [f32(10, 4), TensorType((3,), "int64")], axis=0),
]


def test_measured_times_are_cached_on_disk(tmp_path):
    first = Measured(cache_dir=tmp_path, number=2, repeat=2)
    times = [first(*call) for call in MEASURED_CALLS]
    assert all(t > 0 and math.isfinite(t) for t in times)
    assert first.measurements == len(MEASURED_CALLS)
    assert [first(*call) for call in MEASURED_CALLS] == times    # in memory now
    assert first.measurements == len(MEASURED_CALLS)

    second = Measured(cache_dir=tmp_path)
    assert [second(*call) for call in MEASURED_CALLS] == times
    assert second.measurements == 0
    other_target = Measured(target="llvm -mcpu=generic", cache_dir=tmp_path, number=1, repeat=1)
    assert other_target.key(*MEASURED_CALLS[1][:3]) != second.key(*MEASURED_CALLS[1][:3])


def test_measured_instances_merge_their_entries(tmp_path):
    a, b = Measured(cache_dir=tmp_path, number=1, repeat=1), Measured(cache_dir=tmp_path, number=1, repeat=1)
    ta = a(*MEASURED_CALLS[1])          # both loaded an empty cache before either wrote
    tb = b(*MEASURED_CALLS[2])
    assert b(*MEASURED_CALLS[1]) == ta and b.measurements == 1   # picked up a's entry from disk
    stored = json.loads((tmp_path / Measured.CACHE_FILE).read_text())["times"]
    assert set(stored) == {a.key(*MEASURED_CALLS[1][:3]), a.key(*MEASURED_CALLS[2][:3])}
    assert Measured(cache_dir=tmp_path)(*MEASURED_CALLS[2]) == tb


def test_measured_uses_env_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GSL_EQ_CACHE", str(tmp_path / "env"))
    assert Measured().cache_path == tmp_path / "env" / Measured.CACHE_FILE


def test_measured_falls_back_to_roofline_when_tvm_fails(tmp_path):
    model = Measured(cache_dir=tmp_path)
    inputs, out = [f32(4, 4)], f32(4, 4)
    with pytest.warns(RuntimeWarning, match="roofline"):
        cost = model("relax.no_such_op", {}, inputs, out)
    assert cost == Roofline()("relax.no_such_op", {}, inputs, out)
    assert model.failures == 1 and model.measurements == 0
    assert not (tmp_path / Measured.CACHE_FILE).exists()


# ---------------------------------------------------------------- get_cost_model


def test_get_cost_model_by_name_or_object():
    assert isinstance(get_cost_model("opcount"), OpCount)
    assert isinstance(get_cost_model("ROOFLINE"), Roofline)
    assert isinstance(get_cost_model("Measured"), Measured)
    model = Roofline(overhead=0)
    assert get_cost_model(model) is model


@pytest.mark.parametrize("bad", ["flops", 3, None])
def test_get_cost_model_error_names_the_choices(bad):
    with pytest.raises(ValueError, match="opcount, roofline, measured"):
        get_cost_model(bad)
