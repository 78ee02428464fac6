"""CPU rules: forms TVM's CPU backend runs faster, sound and exact."""

import pytest

from gsl_eq import rules
from gsl_eq.soundness import Verdict, check_rule

from .support import R, ops, var, workload


@pytest.mark.slow
@pytest.mark.parametrize("rule", rules.cpu(), ids=lambda r: r.name)
def test_sound(rule):
    result = check_rule(rule, trials=6, seed=0, tries=300)
    assert result.verdict is Verdict.SOUND, result.summary()
    assert result.instances >= 2 and result.untyped == 0 and result.failures == 0, result.summary()


@pytest.mark.parametrize("batch", [1, 3])
def test_1x1_conv_becomes_a_matmul(applies, batch):
    x = var("x", batch, 8, 5, 7)
    y = R.nn.relu(R.nn.conv2d(x, var("w", 6, 8, 1, 1)))
    # folded: the kernel's reshape is a new parameter; unfolded it stays a call
    applies(workload(y), rules.conv1x1_as_matmul(), {"matmul": 1, "reshape": 2, "nn.relu": 1},
            {"matmul": 1, "reshape": 3, "nn.relu": 1})


@pytest.mark.parametrize("strides, size", [((2, 2), (6, 6)), ((2, 2), (7, 5)), ((3, 1), (7, 4))])
def test_strided_1x1_conv_becomes_a_slice_and_a_matmul(applies, strides, size):
    x = var("x", 2, 8, *size)
    y = R.nn.conv2d(x, var("w", 6, 8, 1, 1), strides=strides)
    applies(workload(y), rules.strided_conv1x1_as_matmul(), {"strided_slice": 1, "matmul": 1, "reshape": 2},
            {"strided_slice": 1, "matmul": 1, "reshape": 3})


def test_the_strided_rule_leaves_unit_strides_to_the_other(rejects):
    rejects(workload(R.nn.conv2d(var("x", 1, 8, 6, 6), var("w", 6, 8, 1, 1))), rules.strided_conv1x1_as_matmul())


@pytest.mark.parametrize("conv", [
    lambda x: R.nn.conv2d(x, var("w", 6, 8, 3, 3), padding=1),                 # not 1x1
    lambda x: R.nn.conv2d(x, var("w", 6, 8, 1, 1), strides=2),                 # strided
    lambda x: R.nn.conv2d(x, var("w", 6, 8, 1, 1), padding=1),                 # padded
    lambda x: R.nn.conv2d(x, var("w", 6, 4, 1, 1), groups=2),                  # grouped
    lambda x: R.permute_dims(R.nn.conv2d(R.permute_dims(x, [0, 2, 3, 1]), var("w", 1, 1, 8, 6),
                                         data_layout="NHWC", kernel_layout="HWIO"), [0, 3, 1, 2]),
], ids=["3x3", "stride-2", "padded", "grouped", "nhwc"])
def test_other_convs_stay(rejects, conv):
    rejects(workload(conv(var("x", 1, 8, 6, 6))), rules.conv1x1_as_matmul())
