"""CPU rules: forms TVM's CPU backend runs faster, sound and exact."""

import pytest

from gsl_eq import rules
from gsl_eq.soundness import Verdict, check_rule

from .support import R, item, ops, var, workload


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


def shuffle(x, groups, shape):
    n, c, h, w = shape
    grouped = R.reshape(x, (n, groups, c // groups, h, w))
    return R.reshape(R.permute_dims(grouped, [0, 2, 1, 3, 4]), shape)


@pytest.mark.parametrize("groups, shape", [(2, (1, 8, 5, 5)), (3, (2, 12, 3, 4)), (4, (1, 8, 2, 2))])
def test_a_channel_shuffle_becomes_a_gather(applies, groups, shape):
    x = var("x", *shape)
    applies(workload(R.nn.relu(shuffle(x, groups, shape))), rules.channel_shuffle_as_take(),
            {"take": 1, "nn.relu": 1})


def test_a_split_shuffle_becomes_two_gathers(applies):
    # a ShuffleNet unit: one part passes on, the other goes through a branch, both after the shuffle
    x = var("x", 1, 8, 4, 4)
    parts = R.split(shuffle(R.nn.relu(x), 2, (1, 8, 4, 4)), [4], axis=1)
    y = R.concat([item(parts, 0), R.nn.conv2d(item(parts, 1), var("w", 4, 4, 1, 1))], axis=1)
    applies(workload(y), rules.split_of_channel_shuffle(), {"take": 2, "nn.relu": 1, "nn.conv2d": 1, "concat": 1})


@pytest.mark.parametrize("split_at", [[2], [5]])
def test_an_uneven_split_of_a_shuffle_gathers_each_part(applies, split_at):
    x = var("x", 1, 6, 3, 3)
    parts = R.split(shuffle(x, 3, (1, 6, 3, 3)), split_at, axis=1)
    y = R.concat([R.nn.relu(item(parts, 0)), item(parts, 1)], axis=1)
    applies(workload(y), rules.split_of_channel_shuffle(), {"take": 2, "nn.relu": 1, "concat": 1})


@pytest.mark.parametrize("body", [
    # the first reshape splits a spatial axis, not the channels
    lambda x: R.reshape(R.permute_dims(R.reshape(x, (1, 4, 2, 3, 6)), [0, 2, 1, 3, 4]), (1, 4, 6, 6)),
    # another permutation
    lambda x: R.reshape(R.permute_dims(R.reshape(x, (1, 2, 2, 6, 6)), [0, 1, 2, 4, 3]), (1, 4, 6, 6)),
], ids=["spatial", "other-axes"])
def test_other_reshape_transposes_stay(rejects, body):
    rejects(workload(body(var("x", 1, 4, 6, 6))), rules.channel_shuffle_as_take())


def test_saturate_mode_under_tvm_cost_runs_the_shuffle_in_the_form_measured_faster():
    """The gather and the reshape-transpose-reshape are both in the e-graph, each priced by the kernels
    TVM builds for it: the result is the one measured faster on this machine (which one differs
    between CPUs), and greedy mode's result, the gather, is the other candidate."""
    from gsl_eq import optimize
    from gsl_eq.cost.tvm_cost import TVMCost
    from gsl_eq.measure.schedule_db import ScheduleDatabase

    a, b = var("a", 1, 24, 12, 12), var("b", 1, 24, 12, 12)
    parts = R.split(shuffle(R.concat([a, b], axis=1), 2, (1, 48, 12, 12)), [24], axis=1)
    wl = workload(R.add(item(parts, 0), R.nn.relu(item(parts, 1))), inputs=("a", "b"))
    result = optimize(wl, rules.cpu(), mode="saturate", cost=TVMCost(ScheduleDatabase(samples=1)))
    report = result.report
    gathered = {"concat": 1, "take": 2, "nn.relu": 1, "add": 1}
    assert report.greedy_cost is not None and report.greedy_cost != report.cost_before
    if report.greedy_cost < report.cost_before:
        assert ops(result.workload) == gathered and report.cost_after == report.greedy_cost
    else:
        assert ops(result.workload) == ops(wl) and report.cost_after == report.cost_before
    inputs = wl.random_inputs(0)
    assert (result.workload(**inputs) == wl(**inputs)).all()
