"""The rule groups on the example models: they fire where expected and keep what the models compute."""

import pytest
import tvm

from gsl_eq import rules
from gsl_eq.greedy import greedy
from gsl_eq.models import blocks

from .support import ops


@pytest.mark.parametrize("group", ["default", "all"])
def test_resnet_bottleneck_loses_its_batch_norms(same_outputs, group):
    wl = blocks.resnet_bottleneck(ch=16, mid=8, size=6)
    result = greedy(wl, getattr(rules, group)())
    assert result.converged and result.fired["conv_batch_norm"] == 3
    # every conv is kept, or (rules.all() holds rules.cpu()) a 1x1 one became a matmul
    convs = ops(result.workload)["nn.conv2d"] + result.fired.get("conv1x1_as_matmul", 0)
    assert "nn.batch_norm" not in ops(result.workload) and convs == 3
    assert tvm.relax.analysis.check_well_formed(result.workload.mod)
    same_outputs(wl, result.workload)


def test_lowering_lowers_every_batch_norm(same_outputs):
    wl = blocks.resnet_bottleneck(ch=16, mid=8, size=6)
    result = greedy(wl, rules.lowering())
    assert result.fired == {"lower_batch_norm": 3, "lower_layer_norm": 0}
    assert "nn.batch_norm" not in ops(result.workload)
    same_outputs(wl, result.workload)


def test_inception_block_merges_the_convs_reading_the_input(same_outputs):
    wl = blocks.inception_block(ch=8, size=6)
    result = greedy(wl, rules.default())
    assert result.fired["parallel_conv_variadic"] == 1
    assert ops(wl)["nn.conv2d"] == 6 and ops(result.workload)["nn.conv2d"] == 4
    same_outputs(wl, result.workload)


def test_transformer_layer_merges_q_k_v(same_outputs):
    wl = blocks.transformer_encoder_layer(seq=4, dim=16, heads=2, ffn=32)
    result = greedy(wl, rules.default())
    assert result.fired["parallel_matmul_bias_variadic"] == 1 and result.fired["transpose_transpose"] == 1
    assert ops(wl)["matmul"] == 8 and ops(result.workload)["matmul"] == 6
    same_outputs(wl, result.workload)


def test_transformer_layer_lowered(same_outputs):
    wl = blocks.transformer_encoder_layer(seq=4, dim=16, heads=2, ffn=32)
    result = greedy(wl, rules.all())
    assert result.fired["lower_layer_norm"] == 2 and "nn.layer_norm" not in ops(result.workload)
    same_outputs(wl, result.workload)
