"""Layout rules: convs and their chains channels-last, the transposes at a chain's ends only.

Soundness on random instances is test_cpu.py's (``rules.cpu()`` holds these rules)."""

import pytest

from gsl_eq import optimize, rules
from gsl_eq.cost import Roofline
from gsl_eq.greedy import greedy

from .support import R, ops, var, workload


def residual_chain(channels=8, size=6):
    """conv+bias+relu, conv+bias, + shortcut, relu, max pool, concat with a conv of it, global pool."""
    x = var("x", 1, channels, size, size)
    y = R.nn.relu(R.add(R.nn.conv2d(x, var("w1", channels, channels, 3, 3), padding=1), var("b1", 1, channels, 1, 1)))
    y = R.add(R.nn.conv2d(y, var("w2", channels, channels, 3, 3), padding=1), var("b2", 1, channels, 1, 1))
    y = R.nn.max_pool2d(R.nn.relu(R.add(y, x)), pool_size=(2, 2), strides=(2, 2))
    y = R.concat([y, R.nn.conv2d(y, var("w3", channels, channels, 1, 1))], axis=1)
    return workload(R.nn.adaptive_avg_pool2d(y, output_size=(1, 1)))


def test_conv_nhwc_folds_the_kernels_transpose(applies):
    x = var("x", 2, 8, 5, 7)
    y = R.nn.conv2d(x, var("w", 6, 8, 3, 3), padding=1, strides=2)
    applies(workload(y), rules.conv_nhwc(), {"nn.conv2d": 1, "permute_dims": 2}, {"nn.conv2d": 1, "permute_dims": 3})


@pytest.mark.parametrize("groups, out", [(2, 8), (4, 16)], ids=["grouped", "grouped-wider"])
def test_grouped_convs_go_channels_last(applies, groups, out):
    x = var("x", 1, 8, 6, 6)
    y = R.nn.conv2d(x, var("w", out, 8 // groups, 3, 3), padding=1, groups=groups)
    applies(workload(y), rules.conv_nhwc(), {"nn.conv2d": 1, "permute_dims": 2}, {"nn.conv2d": 1, "permute_dims": 3})


@pytest.mark.parametrize("conv", [
    lambda x: R.nn.conv2d(x, var("w", 8, 1, 3, 3), padding=1, groups=8),  # depthwise: slower channels-last
    lambda x: R.nn.conv2d(x, var("w", 16, 1, 3, 3), padding=1, groups=8),  # depthwise, two outputs per channel
    lambda x: R.nn.conv2d(R.permute_dims(x, [0, 2, 3, 1]), var("w", 3, 3, 8, 4), data_layout="NHWC",
                          kernel_layout="HWIO"),
], ids=["depthwise", "depth-multiplier-2", "nhwc"])
def test_other_convs_stay(rejects, conv):
    rejects(workload(conv(var("x", 1, 8, 6, 6))), rules.conv_nhwc())


def test_greedy_mode_moves_a_transpose_past_its_only_reader(same_outputs):
    """Greedy mode converts a chain without fan-out whole, as TVM's ConvertLayout would."""
    x = var("x", 1, 8, 6, 6)
    y = R.nn.relu(R.add(R.nn.conv2d(x, var("w1", 8, 8, 3, 3), padding=1), var("b1", 1, 8, 1, 1)))
    y = R.nn.max_pool2d(R.nn.relu(R.nn.conv2d(y, var("w2", 8, 8, 3, 3), padding=1)), pool_size=(2, 2), strides=(2, 2))
    wl = workload(R.nn.adaptive_avg_pool2d(R.nn.conv2d(y, var("w3", 8, 8, 1, 1)), output_size=(1, 1)))
    result = greedy(wl, rules.layouts())
    assert result.converged and ops(result.workload)["permute_dims"] == 2
    assert all(f.attrs["data_layout"] == "NHWC" for f in _calls(result.workload, "relax.nn.conv2d"))
    same_outputs(wl, result.workload)


def test_a_vector_bias_is_left_in_nchw(same_outputs):
    """A bias of shape (C, 1, 1) broadcasts against NCHW only: the chain's transpose stays before it."""
    x = var("x", 1, 8, 6, 6)
    wl = workload(R.add(R.nn.conv2d(x, var("w", 8, 8, 3, 3), padding=1), var("b", 8, 1, 1)))
    result = greedy(wl, rules.layouts())
    assert result.fired["broadcast_of_nchw"] == 0 and result.fired["conv_nhwc"] == 1
    same_outputs(wl, result.workload)


def hard_swish_chain():
    x = var("x", 1, 16, 8, 8)
    y = R.nn.conv2d(x, var("w", 16, 16, 3, 3), padding=1)
    hard_swish = R.divide(R.multiply(y, R.clip(R.add(y, relax_scalar(3.0)), 0, 6)), relax_scalar(6.0))
    return workload(R.nn.conv2d(hard_swish, var("w2", 16, 16, 3, 3), padding=1))


class ChannelsLastPrice(Roofline):
    """Roofline, with a conv's price scaled by ``factor`` when it runs channels-last."""

    name = "channels-last"

    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def __call__(self, op, attrs, inputs, output):
        cost = super().__call__(op, attrs, inputs, output)
        return cost * self.factor if op == "relax.nn.conv2d" and attrs.get("data_layout") == "NHWC" else cost


CHAINS = {"residual": lambda: residual_chain(channels=16, size=8), "hard-swish": hard_swish_chain}


@pytest.mark.parametrize("chain", CHAINS)
@pytest.mark.parametrize("factor", [0.25, 4.0], ids=["nhwc-cheaper", "nhwc-dearer"])
def test_extraction_prices_a_chain_with_its_transposes(same_outputs, chain, factor):
    """Saturate mode holds every place a chain could change layout (fan-out included: a shortcut, hard
    swish's two reads): channels-last is taken whole, one transpose in and one out, or not at all."""
    wl = CHAINS[chain]()
    result = optimize(wl, rules.default() + rules.layouts(), mode="saturate", cost=ChannelsLastPrice(factor),
                      time_limit=60)
    assert ops(result.workload).get("permute_dims", 0) == (2 if factor < 1 else 0)
    nhwc = factor < 1
    assert {f.attrs["data_layout"] for f in _calls(result.workload, "relax.nn.conv2d")} == {"NHWC" if nhwc else "NCHW"}
    assert {f.attrs["layout"] for f in _calls(result.workload, "relax.nn.max_pool2d")} <= {"NHWC" if nhwc else "NCHW"}
    assert {f.attrs["axis"] for f in _calls(result.workload, "relax.concat")} <= {3 if nhwc else 1}
    same_outputs(wl, result.workload)


def relax_scalar(value: float):
    from tvm import relax

    return relax.const(value, "float32")


def _calls(wl, name: str):
    return [n for n in wl.graph.rpo() if n.op == name]

