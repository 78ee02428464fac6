"""The gpu cost model: device presets, launches, fused epilogues, free splits, and extraction under it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gsl_eq import Workload, models, optimize, rules
from gsl_eq.cost import DEVICES, GPU, Device, get_cost_model, graph_cost
from gsl_eq.graph import Graph, Node, TensorType, to_relax

US = 1e-6


def f32(*shape: int) -> TensorType:
    return TensorType(shape, "float32")


def one_call(op: str, *shapes: tuple[int, ...], **attrs) -> Graph:
    inputs = [Node.var(f"in{i}", f32(*s)) for i, s in enumerate(shapes)]
    return Graph(inputs, [Node.call(op, inputs, attrs)])


@pytest.mark.parametrize("device, lo, hi", [("v100", 1, 1), ("a100", 0.5, 1)])
def test_presets_describe_the_devices(device, lo, hi):
    """The issue's bounds on the V100; the A100 the same or faster on each."""
    gpu = GPU(device)
    matmul = graph_cost(one_call("relax.matmul", (1024, 1024), (1024, 1024)), gpu)
    small_relu = graph_cost(one_call("relax.nn.relu", (1024,)), gpu)
    big_relu = graph_cost(one_call("relax.nn.relu", (4096, 4096)), gpu)  # 16M elements
    assert 100 * US * lo <= matmul <= 300 * US * hi
    assert 3 * US * lo <= small_relu <= 20 * US * hi
    assert 100 * US * lo <= big_relu <= 250 * US * hi
    assert small_relu == pytest.approx(gpu.device.launch, rel=0.01)   # a launch, nothing else
    assert big_relu - gpu.device.launch == pytest.approx(2 * 4 * 4096 * 4096 / gpu.device.bandwidth)


def test_a100_is_faster_than_v100_on_every_kernel():
    for graph in (one_call("relax.matmul", (1024, 1024), (1024, 1024)), one_call("relax.nn.relu", (4096, 4096)),
                  one_call("relax.nn.relu", (8,))):
        assert graph_cost(graph, GPU("a100")) < graph_cost(graph, GPU("v100"))


def test_one_merged_matmul_is_cheaper_than_three_small_ones():
    x = Node.var("x", f32(64, 1024))
    ws = [Node.var(f"w{i}", f32(1024, 1024)) for i in range(3)]
    three = Graph([x, *ws], [Node.tuple([Node.call("relax.matmul", [x, w]) for w in ws])])
    merged_w = Node.var("w", f32(1024, 3072))
    parts = Node.call("relax.split", [Node.call("relax.matmul", [x, merged_w])], {"indices_or_sections": 3, "axis": 1})
    merged = Graph([x, merged_w], [Node.tuple([Node.getitem(parts, k) for k in range(3)])])
    gpu = GPU()
    assert graph_cost(merged, gpu) < graph_cost(three, gpu)
    # the same work; the merged graph saves two launches (the split is free)
    assert graph_cost(three, gpu) - graph_cost(merged, gpu) == pytest.approx(2 * gpu.device.launch, rel=0.01)


def test_a_kernel_that_does_not_fill_the_device_computes_at_the_share_it_fills():
    """A batch-1 conv of 17 x 17 x 192 outputs fills a third of a V100's 163,840 resident threads: its
    arithmetic takes three times its peak time. Three such convs merged fill the device and cost
    about a third of the three (TASO's measured costs make small convs dear in the same way)."""
    gpu = GPU()
    x = Node.var("x", f32(1, 192, 17, 17))
    ws = [Node.var(f"w{i}", f32(192, 192, 3, 3)) for i in range(3)]
    flops = 2 * 192 * 17 * 17 * 192 * 9
    one = graph_cost(Graph([x, ws[0]], [Node.call("relax.nn.conv2d", [x, ws[0]], {"padding": (1, 1, 1, 1)})]), gpu)
    occupancy = 192 * 17 * 17 / (80 * 2048)
    assert one == pytest.approx(flops / (14e12 * occupancy) + gpu.device.launch)
    three = Graph([x, *ws], [Node.tuple([Node.call("relax.nn.conv2d", [x, w], {"padding": (1, 1, 1, 1)}) for w in ws])])
    merged_w = Node.var("w", f32(576, 192, 3, 3))
    parts = Node.call("relax.split", [Node.call("relax.nn.conv2d", [x, merged_w], {"padding": (1, 1, 1, 1)})],
                      {"indices_or_sections": 3, "axis": 1})
    merged = Graph([x, merged_w], [Node.tuple([Node.getitem(parts, k) for k in range(3)])])
    assert graph_cost(three, gpu) == pytest.approx(3 * one)
    assert graph_cost(merged, gpu) == pytest.approx(3 * flops / 14e12 + gpu.device.launch)
    assert graph_cost(merged, gpu) < 0.4 * graph_cost(three, gpu)
    # on a plain roofline (a device without a thread count) the merge saves two launches only
    roofline = GPU(Device("roofline", peak_flops=14e12, bandwidth=800e9, launch=5e-6))
    assert graph_cost(three, roofline) - graph_cost(merged, roofline) == pytest.approx(2 * 5e-6)


@settings(max_examples=60, deadline=None)
@given(channels=st.integers(1, 512), size=st.integers(1, 64), kernel=st.sampled_from([1, 3]),
       outs=st.lists(st.integers(1, 512), min_size=2, max_size=4), device=st.sampled_from(["v100", "a100"]))
def test_merging_convs_of_one_input_never_costs_more(channels, size, kernel, outs, device):
    """Whatever the shapes: occupancy never makes a kernel cheaper than its plain roofline, and one
    conv computing every output channel of several convs of one input (their parts read in place)
    costs no more than the convs: its arithmetic fills at least the device their largest fills, it
    reads the input once, and it launches once."""
    gpu = GPU(device)
    roofline = GPU(Device("roofline", gpu.device.peak_flops, gpu.device.bandwidth, gpu.device.launch))
    x = Node.var("x", f32(1, channels, size, size))
    pad = {"padding": (kernel // 2,) * 4}
    ws = [Node.var(f"w{i}", f32(o, channels, kernel, kernel)) for i, o in enumerate(outs)]
    apart = Graph([x, *ws], [Node.tuple([Node.call("relax.nn.conv2d", [x, w], pad) for w in ws])])
    merged_w = Node.var("w", f32(sum(outs), channels, kernel, kernel))
    parts = Node.call("relax.split", [Node.call("relax.nn.conv2d", [x, merged_w], pad)],
                      {"indices_or_sections": tuple(itertools.accumulate(outs))[:-1], "axis": 1})
    merged = Graph([x, merged_w], [Node.tuple([Node.getitem(parts, k) for k in range(len(outs))])])
    assert graph_cost(apart, gpu) >= graph_cost(apart, roofline)
    assert graph_cost(merged, gpu) <= graph_cost(apart, gpu) - (len(outs) - 1) * gpu.device.launch * (1 - 1e-9)


def test_a_gemv_is_bound_by_reading_its_weight():
    """A matmul of one row spreads each output's reduction over a warp (cuBLAS's GEMV): 1,024 outputs
    x 32 threads fill a fifth of a V100, so its 2 MFLOP take 0.75 us, below the 5.2 us of reading
    its 4 MB weight; 1,024 threads alone would have made it 24 us of arithmetic."""
    gpu = GPU()
    gemv = graph_cost(one_call("relax.matmul", (1, 1024), (1024, 1024)), gpu)
    nbytes = 4 * (1024 + 1024 * 1024 + 1024)
    assert gemv == pytest.approx(nbytes / 800e9 + gpu.device.launch)
    assert 5 * US < gemv < 15 * US


def conv_then(*ops: str, second_reader: bool = False) -> Graph:
    x, w, b = Node.var("x", f32(1, 64, 56, 56)), Node.var("w", f32(64, 64, 3, 3)), Node.var("b", f32(1, 64, 1, 1))
    y = Node.call("relax.nn.conv2d", [x, w], {"padding": (1, 1, 1, 1)})
    conv = y
    for name in ops:
        y = Node.call(name, [y, b] if name == "relax.add" else [y])
    outputs = [y, Node.call("relax.nn.relu", [conv])] if second_reader else [y]
    return Graph([x, w, b], outputs)


def test_an_epilogue_after_a_conv_is_free():
    gpu = GPU()
    conv = graph_cost(conv_then(), gpu)
    fused = graph_cost(conv_then("relax.add", "relax.nn.relu"), gpu)
    # bias add and relu run in the conv's kernel: no launch, no round trip, only their FLOPs and the bias read
    assert conv < fused < conv + 0.01 * gpu.device.launch
    # alone, the same relu is a kernel: a launch and its memory traffic
    relu_alone = graph_cost(one_call("relax.nn.relu", (1, 64, 56, 56)), gpu)
    assert relu_alone > gpu.device.launch


def test_an_epilogue_is_not_fused_into_an_output_others_read():
    gpu = GPU()
    once = graph_cost(conv_then("relax.nn.relu"), gpu)
    read_twice = graph_cost(conv_then("relax.nn.relu", second_reader=True), gpu)
    relu_alone = graph_cost(one_call("relax.nn.relu", (1, 64, 56, 56)), gpu)
    # two relus of a conv read by both: each is a kernel of its own
    assert read_twice == pytest.approx(once + 2 * relu_alone, rel=1e-3)


def test_an_epilogue_reading_its_producer_twice_is_fused():
    """add(a, a) has one reader of a (an e-graph makes one node of two equal pools, as in NasNet-A's
    cells): it runs in a's kernel like any epilogue."""
    gpu = GPU()
    x, w = Node.var("x", f32(1, 64, 56, 56)), Node.var("w", f32(64, 64, 3, 3))
    conv = Node.call("relax.nn.conv2d", [x, w], {"padding": (1, 1, 1, 1)})
    doubled = Graph([x, w], [Node.call("relax.add", [conv, conv])])
    assert graph_cost(conv_then(), gpu) < graph_cost(doubled, gpu) < graph_cost(conv_then(), gpu) + 0.01 * gpu.device.launch


def test_splits_and_views_are_free():
    gpu = GPU()
    assert graph_cost(one_call("relax.split", (64, 3072), indices_or_sections=3, axis=1), gpu) == 0
    assert graph_cost(one_call("relax.reshape", (64, 3072), shape=(64, 3, 1024)), gpu) == 0
    assert gpu("relax.reshape", {}, [f32(64, 3072)], f32(64, 3, 1024)) == 0
    # a transpose moves its bytes: a kernel
    assert graph_cost(one_call("relax.permute_dims", (64, 3072), axes=(1, 0)), gpu) > gpu.device.launch


def test_extraction_prices_a_call_as_a_kernel_and_its_saving_as_an_epilogue():
    gpu = GPU()
    t = f32(1, 64, 56, 56)
    assert gpu("relax.nn.relu", {}, [f32(1024)], f32(1024)) == pytest.approx(gpu.device.launch, rel=0.01)
    # what whole graphs charge: the conv's kernel, plus the relu's kernel less what it saves inside the conv's
    conv = graph_cost(conv_then(), gpu)
    saving = gpu.epilogue_saving("relax.nn.relu", {}, [t], t, [0])
    assert graph_cost(conv_then("relax.nn.relu"), gpu) == pytest.approx(conv + gpu("relax.nn.relu", {}, [t], t) - saving)
    assert gpu.opens_kernel("relax.nn.conv2d", t) and gpu.opens_kernel("relax.nn.relu", t)  # epilogues chain
    assert not gpu.opens_kernel("relax.reshape", t) and not gpu.opens_kernel("relax.split", t)
    # a broadcast input is no kernel to run in; TASO's fusion: only activations, only into convs and the like
    assert gpu.epilogue_saving("relax.add", {}, [f32(1, 64, 1, 1), t], t, [0]) == 0
    taso = GPU(fusion="activations")
    assert taso.epilogue_saving("relax.add", {}, [t, t], t, [0]) == 0 < taso.epilogue_saving("relax.nn.relu", {}, [t], t, [0])
    assert taso.opens_kernel("relax.nn.conv2d", t) and not taso.opens_kernel("relax.add", t)
    assert not GPU(fusion="none").opens_kernel("relax.nn.conv2d", t)


class PerCall:
    """The gpu model with every call priced as a kernel in extraction (no fusion terms)."""

    name, unit = "gpu per call", "s"

    def __init__(self):
        self.gpu = GPU()

    def __call__(self, op, attrs, inputs, output):
        return self.gpu(op, attrs, inputs, output)

    def graph_cost(self, graph):
        return graph_cost(graph, self.gpu)


@pytest.mark.slow
def test_extraction_chooses_forms_and_fusions_together_on_nasrnn():
    """Two NasRNN steps under TASO's rules: extraction that prices epilogues finds a cheaper graph than
    one pricing each call as a kernel, at the cost the whole-graph model gives it; outputs equal."""
    wl = models.tensat_nasrnn(steps=2, hidden=64)
    settings = dict(mode="saturate", node_limit=50_000, iter_limit=15, time_limit=60, multi_iterations=1,
                    cycles="filter")
    fused = optimize(wl, rules.tensat(), cost="gpu", **settings)
    per_call = optimize(wl, rules.tensat(), cost=PerCall(), **settings)
    report = fused.report
    assert report.extraction_status == "optimal"
    assert report.extracted_cost == pytest.approx(report.cost_after)
    assert report.cost_after == pytest.approx(graph_cost(fused.workload.graph, GPU()))
    # Both graphs are priced by the whole-graph model, prologues included, so the per-call choice
    # keeps some of fusion's saving: the fused choice is 7 % cheaper (65.5 against 70.5 us).
    assert report.cost_after < 0.95 * per_call.report.cost_after < 0.9 * report.cost_before
    inputs = wl.random_inputs(0)
    for expected, actual in zip(wl(**inputs), fused.workload(**inputs)):
        np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-4, atol=1e-5)


def test_by_name_and_errors():
    assert isinstance(get_cost_model("gpu"), GPU) and get_cost_model("GPU").device == DEVICES["v100"]
    custom = Device("T4", peak_flops=8e12, bandwidth=300e9, launch=5e-6)
    assert GPU(custom).device is custom
    with pytest.raises(ValueError, match="unknown device 'h100'; the presets are v100, a100"):
        GPU("h100")
    with pytest.raises(ValueError, match="launch >= 0"):
        Device("bad", 1e12, 1e11, -1.0)
    with pytest.raises(ValueError, match="resident_threads > 0"):
        Device("bad", 1e12, 1e11, 1e-6, resident_threads=0)
    assert "163,840 threads" in repr(GPU())


@pytest.mark.slow
def test_tensat_merges_matmuls_sharing_an_operand_under_gpu_and_outputs_equal():
    """TASO's multi-pattern rule merges matmuls sharing an operand: under gpu the merged form (relu
    inside, one kernel) is chosen; under TENSAT's settings (merges in the first iteration) two of three."""
    x = Node.var("x", f32(64, 1024))
    ws = [Node.var(f"w{i}", f32(1024, 1024)) for i in range(3)]
    graph = Graph([x, *ws], [Node.tuple([Node.call("relax.nn.relu", [Node.call("relax.matmul", [x, w])]) for w in ws])])
    rng = np.random.default_rng(0)
    wl = Workload(to_relax(graph), {f"w{i}": rng.standard_normal((1024, 1024)).astype("float32") * 0.03 for i in range(3)})
    result = optimize(wl, rules.tensat(), mode="saturate", cost="gpu", node_limit=50_000, iter_limit=15,
                      time_limit=60, multi_iterations=1, cycles="filter")
    counts = result.workload.graph.op_counts()
    assert counts["relax.matmul"] < 3 and counts["relax.split"] >= 1
    assert result.report.cost_after < result.report.cost_before
    assert result.report.cost_after == pytest.approx(graph_cost(result.workload.graph, GPU()))
    inputs = wl.random_inputs(0)
    for expected, actual in zip(wl(**inputs), result.workload(**inputs)):
        np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-4, atol=1e-4)


def test_tasos_fusion_fuses_activations_into_convs_only():
    taso, ours = GPU(fusion="activations"), GPU()
    conv = graph_cost(conv_then(), taso)
    # the relu rides in the conv (TASO's fused activation), the bias add is a kernel of its own
    assert graph_cost(conv_then("relax.nn.relu"), taso) < conv + 0.01 * taso.device.launch
    assert graph_cost(conv_then("relax.add"), taso) > conv + taso.device.launch
    assert graph_cost(conv_then("relax.add", "relax.nn.relu"), taso) > graph_cost(conv_then("relax.add", "relax.nn.relu"), ours)
    # a graph whose activations are ops of their own, priced before anything fuses them: a launch more
    unfused = GPU(fusion="none")
    assert graph_cost(conv_then("relax.nn.relu"), unfused) > conv + unfused.device.launch
    with pytest.raises(ValueError, match="unknown fusion 'some'"):
        GPU(fusion="some")


def fuse_ops_kernels(wl: Workload) -> int:
    """Kernels TVM launches for ``wl`` after FuseOps, not counting splits and views (TASO's offsets)."""
    import re

    import tvm
    from tvm import relax

    passes = tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                                       relax.transform.FuseOps(), relax.transform.FuseTIR()])
    callees = re.findall(r"R\.call_tir\((\w+),", passes(wl.mod)["main"].script())
    free = {"split", "reshape", "squeeze", "expand_dims", "flatten"}
    return sum(re.sub(r"\d+$", "", name) not in free for name in callees)


@pytest.mark.slow
@pytest.mark.parametrize("model, kwargs", [("tensat_nasrnn", dict(steps=2, hidden=64)),
                                           ("nasnet_a", dict(image_size=32, cells=1, filters=8))])
def test_kernels_are_those_tvm_fuse_ops_builds(model, kwargs):
    """With launches alone priced, the model counts the kernels FuseOps builds, before and after TASO's
    rules (merged matmuls with their parts read by element-wise trees; a tree of element-wise ops is one
    kernel, two matmuls feeding an add are two)."""
    count = GPU(Device("launches", peak_flops=1e30, bandwidth=1e30, launch=1.0))
    wl = getattr(models, model)(**kwargs)
    optimized = optimize(wl, rules.tensat(), mode="saturate", cost="gpu", node_limit=5_000, iter_limit=2,
                         time_limit=10, multi_iterations=1, cycles="filter").workload
    assert optimized.graph.op_counts() != wl.graph.op_counts()
    for w in (wl.fold_params(), optimized.fold_params()):
        assert round(graph_cost(w.graph, count), 6) == fuse_ops_kernels(w)
