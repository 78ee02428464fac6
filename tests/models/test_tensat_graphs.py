"""TENSAT's own benchmark graphs: rebuilt operator for operator from its Rust sources and TASO's
serialized models, TASO's rules rewrite them, and bad model files are refused by line."""

import pytest

from gsl_eq.errors import WorkloadError
from gsl_eq import optimize, rules
from gsl_eq.models.tensat import TENSAT_MODELS, load_taso_model, tensat_bert, tensat_model, tensat_nasrnn, tensat_resnext50

CONV, MATMUL, CONCAT, RELU = "relax.nn.conv2d", "relax.matmul", "relax.concat", "relax.nn.relu"

#: Published sizes: output shapes and the op counts of TENSAT's graphs (its sources and TASO's files:
#: SqueezeNet's 26 convs, 8 concats, 3 max and 1 average pool are its file's; VGG's 2 dropouts are
#: identities here).
PUBLISHED = {
    "bert": ([(64, 1024)] * 9, {MATMUL: 8 * 6, RELU: 1, "relax.permute_dims": 8 * 4}),
    "nasrnn": ([(1, 512)], {MATMUL: 5 * 16, "relax.tanh": 5 * 8, "relax.sigmoid": 5 * 5, "relax.multiply": 5 * 4}),
    "resnext50": ([(1, 2048, 7, 7)], {CONV: 1 + 16 * 3 + 4, "relax.add": 16, RELU: 53}),
    "nasnet_a": ([(1, 5120, 7, 7)], {CONV: 1 + 15 * 12 + 3 * 12, CONCAT: 18, "relax.nn.avg_pool2d": 15 * 3 + 3 * 2}),
    "inception_v3": ([(1, 2048, 1, 1)], {CONV: 94, CONCAT: 30, "relax.nn.max_pool2d": 5, "relax.nn.avg_pool2d": 9}),
    "squeezenet": ([(1, 1000)], {CONV: 26, CONCAT: 8, "relax.nn.max_pool2d": 3, "relax.nn.avg_pool2d": 1}),
    "vgg19": ([(1, 1000)], {CONV: 16, MATMUL: 3, RELU: 18, "relax.nn.max_pool2d": 5}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_graphs_have_tensats_shape(name):
    shapes, counts = PUBLISHED[name]
    graph = tensat_model(name).graph
    assert [tuple(o.type.shape) for o in graph.outputs] == shapes
    found = graph.op_counts()
    assert {op: found.get(op, 0) for op in counts} == counts
    assert "relax.add" not in found or name in ("nasrnn", "resnext50", "nasnet_a")  # no biases anywhere


def test_every_model_is_named():
    assert set(TENSAT_MODELS) == set(PUBLISHED)
    with pytest.raises(WorkloadError, match="TENSAT has no model 'resnet50'"):
        tensat_model("resnet50")


@pytest.mark.slow
@pytest.mark.parametrize("wl, fewer", [
    (tensat_bert(layers=2, seq=16, hidden=64, heads=4), MATMUL),   # Q, K, V and the next layer's input merge
    (tensat_nasrnn(steps=2, hidden=32), MATMUL),                   # the eight x @ W of a step merge
    (tensat_resnext50(image_size=32, blocks=(1, 1, 1, 1)), CONV),  # the first block's two 1x1 convs of one input
], ids=["bert", "nasrnn", "resnext50"])
def test_tasos_rules_rewrite_tensats_graphs(wl, fewer, same_outputs):
    result = optimize(wl, rules.tensat(), mode="saturate", cost="gpu", node_limit=20_000, iter_limit=15,
                      multi_iterations=1, cycles="filter")
    r = result.report
    assert r.cost_after < r.cost_before and not r.input_returned
    assert result.workload.graph.op_counts()[fewer] < wl.graph.op_counts()[fewer]
    same_outputs(wl, result.workload)


SQUARE = """1
0
0:0
1,2,8,8
2
1
0:0
4,2,3,3
3
3
1:0,2:0
1,2,8,8,4,2,3,3,1,1,0,2,1,1
4
7
3:0,2:0
1,4,8,8,7,2,2,2,2,1,0,0,0
"""


def test_a_taso_file_loads_with_fused_activation_and_padding(same_outputs):
    wl = load_taso_model(SQUARE)
    assert wl.input_names == ["x"] and [tuple(o.type.shape) for o in wl.graph.outputs] == [(1, 4, 4, 4)]
    assert wl.graph.op_counts() == {CONV: 1, RELU: 1, "relax.nn.avg_pool2d": 1}


@pytest.mark.parametrize("text, message", [
    (SQUARE.replace("3:0,2:0", "9:0"), r"node 4 \(line 13\) reads node '9', not defined before it"),
    (SQUARE.replace("\n7\n", "\n13\n"), r"node 4 \(line 13\): TASO operator 13 is not one TENSAT's loader reads"),
    (SQUARE + "5\n8\n", "not a whole number of 4-line nodes"),
    (SQUARE.replace("1,1,0,2,1,1", "1,1,0,5,1,1"), r"node 3 \(line 9\): unknown TASO activation mode 5"),
    (SQUARE.replace("4,2,3,3\n3", "4,3,3,3\n3"), r"node 3 \(line 9\): conv2d: 2 input channels do not divide"),
])
def test_bad_taso_files_are_refused_by_line(text, message):
    with pytest.raises(WorkloadError, match=message):
        load_taso_model(text, source="m.model")
