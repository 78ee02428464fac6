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


@pytest.mark.slow
@pytest.mark.parametrize("sets", ["tensat+default", "default+algebraic"])
def test_a_pytorch_cnn_with_a_batch_optimizes_under_the_readme_combinations(same_outputs, sets):
    """A user's CNN exported from PyTorch (out_dtype="float32" on every conv), batch 2, with a plain and a
    grouped conv of one input and two 1x1 convs of another: the combinations the README shows run to the
    end in saturate mode (tensat()+default() raised mid-run before: its convs without out_dtype met the
    exported ones) and keep what the model computes."""
    torch = pytest.importorskip("torch")
    from gsl_eq import Workload, optimize
    from gsl_eq.rules.sets import rule_set

    class Net(torch.nn.Module):
        def __init__(self, c: int = 8):
            super().__init__()
            self.stem, self.plain = torch.nn.Conv2d(3, c, 3, padding=1), torch.nn.Conv2d(c, c, 3, padding=1)
            self.grouped = torch.nn.Conv2d(c, c, 3, padding=1, groups=4)
            self.left, self.right = torch.nn.Conv2d(c, c, 1), torch.nn.Conv2d(c, c, 1)

        def forward(self, x):
            x = torch.relu(self.stem(x))
            y = torch.relu(self.plain(x))
            return torch.relu(self.left(y) + self.right(y) + self.grouped(x))

    wl = Workload.from_torch(Net().eval(), (torch.randn(2, 3, 10, 10),))
    result = optimize(wl, rule_set(sets), mode="saturate", cost="gpu", node_limit=3_000, time_limit=10)
    assert result.report.cost_after < result.report.cost_before
    assert ops(result.workload)["nn.conv2d"] < ops(wl)["nn.conv2d"]
    same_outputs(wl, result.workload)
