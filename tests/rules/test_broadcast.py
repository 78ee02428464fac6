"""Broadcast rules: per-channel broadcast ops (bias adds, scales) and element-wise ops moved across concat and split."""

import pytest

from gsl_eq import optimize, rules
from gsl_eq.soundness import Verdict, check_rule

from .support import R, item, ops, outputs, var, workload

MINE = ["concat_of_broadcast_variadic", "concat_of_broadcast", "split_of_broadcast_variadic", "split_of_broadcast",
        "split_of_element_wise", "split_of_split_broadcast", "parallel_conv_bias_act_variadic", "parallel_conv_bias_variadic",
        "parallel_conv_expand_kernels_bias_act"]


#: A broadcast b_i for every part of a split, each lined up with its part: one random draw in
#: several hundred (the tests below check the rule on built graphs).
FEW_DRAWN = {"split_of_broadcast_variadic": 1}


@pytest.mark.slow
@pytest.mark.parametrize("name", MINE)
def test_sound(name):
    result = check_rule(getattr(rules, name)(), trials=6, seed=0, tries=300)
    assert result.verdict is Verdict.SOUND, result.summary()
    assert result.instances >= FEW_DRAWN.get(name, 2) and result.untyped == 0 and result.failures == 0, \
        result.summary()


# --- concat ----------------------------------------------------------------------------


def branches(channels, bias_shape=lambda c: (1, c, 1, 1), op=R.add):
    x = var("x", 1, 4, 6, 6)
    return [op(R.nn.conv2d(x, var(f"w{k}", c, 4, 1, 1)), var(f"b{k}", *bias_shape(c))) for k, c in enumerate(channels)]


@pytest.mark.parametrize("op, name", [(R.add, "add"), (R.multiply, "multiply")])
def test_concat_of_bias_adds(applies, op, name):
    y = R.concat(branches([2, 3], op=op), axis=1)
    applies(workload(R.nn.relu(y)), rules.concat_of_broadcast(),
            {"nn.conv2d": 2, "concat": 1, name: 1, "nn.relu": 1},
            {"nn.conv2d": 2, "concat": 2, name: 1, "nn.relu": 1})


def test_concat_of_bias_adds_variadic(applies):
    y = R.concat(branches([2, 3, 1]), axis=1)
    applies(workload(y), rules.concat_of_broadcast_variadic(), {"nn.conv2d": 3, "concat": 1, "add": 1},
            {"nn.conv2d": 3, "concat": 2, "add": 1})


def test_concat_of_a_broadcast_along_another_axis(applies):
    # b_i broadcast along the last axis, concatenated along the one before it
    a, c = var("x", 2, 3, 4), var("y", 2, 5, 4)
    y = R.concat([R.subtract(a, var("p", 2, 3, 1)), R.subtract(c, var("q", 2, 5, 1))], axis=-2)
    applies(workload(y, inputs=("x", "y")), rules.concat_of_broadcast(), {"concat": 1, "subtract": 1},
            {"concat": 2, "subtract": 1})


def test_split_of_split_broadcast(applies, rejects):
    """Parts of two like splits, added part by part (NasRNN's projections of x and h): one add of
    the wholes, split once."""
    y, z = R.split(var("y", 2, 9), indices_or_sections=[2, 5], axis=1), R.split(var("z", 2, 9), [2, 5], axis=1)
    sums = outputs(*[R.add(item(y, k), item(z, k)) for k in range(3)])
    applies(workload(sums, inputs=("y", "z")), rules.split_of_split_broadcast(), {"add": 1, "split": 1})
    # parts of one shape from wholes split unlike (along another axis), or a part left out
    rows, cols = R.split(var("a", 4, 4), 2, axis=0), R.split(var("b", 2, 8), 2, axis=1)
    rejects(workload(outputs(*[R.add(item(rows, k), item(cols, k)) for k in range(2)]), inputs=("a", "b")),
            rules.split_of_split_broadcast())
    rejects(workload(outputs(*[R.add(item(y, k), item(z, k)) for k in range(2)]), inputs=("y", "z")),
            rules.split_of_split_broadcast())


def test_full_shape_operands_are_no_broadcast(rejects):
    """An op of two tensors of one shape is no bias or scale: the concat and split forms leave it
    (under add_commutative its operands would match both ways round)."""
    a, c = var("x", 2, 3, 4), var("y", 2, 5, 4)
    y = R.concat([R.add(a, var("p", 2, 3, 4)), R.add(c, var("q", 2, 5, 4))], axis=-2)
    for rule in (rules.concat_of_broadcast(), rules.concat_of_broadcast_variadic()):
        rejects(workload(y, inputs=("x", "y")), rule)
    parts = R.split(var("z", 2, 8, 4), indices_or_sections=[3], axis=1)
    pair = outputs(R.add(item(parts, 0), var("p", 2, 3, 4)), R.add(item(parts, 1), var("q", 2, 5, 4)))
    for rule in (rules.split_of_broadcast(), rules.split_of_broadcast_variadic()):
        rejects(workload(pair, inputs=("z",)), rule)


def test_concat_rejects_a_bias_broadcast_along_the_axis(rejects):
    # b of extent 1 on the concat axis where a has 2 (or 3) channels: concatenating the bs gives 2, not 5
    for rule in (rules.concat_of_broadcast(), rules.concat_of_broadcast_variadic()):
        rejects(workload(R.concat(branches([2, 3], bias_shape=lambda c: (1, 1, 1, 1)), axis=1)), rule)
        rejects(workload(R.concat(branches([2, 3], bias_shape=lambda c: (1,)), axis=1)), rule)


def test_concat_rejects_biases_disagreeing_off_the_axis(rejects):
    # (1, 2, 1, 1) and (1, 3, 6, 6): each fits its conv, but their concatenation does not exist
    shapes = {2: (1, 2, 1, 1), 3: (1, 3, 6, 6)}
    for rule in (rules.concat_of_broadcast(), rules.concat_of_broadcast_variadic()):
        rejects(workload(R.concat(branches([2, 3], bias_shape=shapes.get), axis=1)), rule)


def test_concat_rejects_an_operand_broadcasting_the_first(rejects):
    a, c = var("x", 1, 2, 1, 1), var("y", 1, 3, 1, 1)
    y = R.concat([R.add(a, var("p", 1, 2, 5, 5)), R.add(c, var("q", 1, 3, 5, 5))], axis=1)
    rejects(workload(y, inputs=("x", "y")), rules.concat_of_broadcast())


def test_concat_rejects_two_ops(rejects):
    x = var("x", 1, 4, 6, 6)
    y = R.concat([R.add(x, var("p", 1, 4, 1, 1)), R.multiply(x, var("q", 1, 4, 1, 1))], axis=1)
    rejects(workload(y), rules.concat_of_broadcast())


# --- split -----------------------------------------------------------------------------


def split_parts(parts, channels=6):
    s = R.split(var("x", 1, channels, 4, 4), parts, axis=1)
    n = parts if isinstance(parts, int) else len(parts) + 1
    return [item(s, k) for k in range(n)]


@pytest.mark.parametrize("parts, sizes", [(2, [3, 3]), ((2,), [2, 4])])
def test_split_of_bias_adds(applies, parts, sizes):
    ys = [R.nn.relu(R.add(p, var(f"b{k}", 1, c, 1, 1))) for k, (p, c) in enumerate(zip(split_parts(parts), sizes))]
    applies(workload(outputs(*ys)), rules.split_of_broadcast(), {"split": 1, "add": 1, "nn.relu": 2},
            {"split": 1, "add": 1, "concat": 1, "nn.relu": 2})


def test_split_of_bias_adds_variadic(applies):
    ys = [R.add(p, var(f"b{k}", 1, 2, 1, 1)) for k, p in enumerate(split_parts(3))]
    applies(workload(outputs(*ys)), rules.split_of_broadcast_variadic(), {"split": 1, "add": 1},
            {"split": 1, "add": 1, "concat": 1})


def test_split_of_element_wise(applies):
    ys = [R.nn.relu(p) for p in split_parts((1, 4))]
    applies(workload(outputs(*ys)), rules.split_of_element_wise(), {"split": 1, "nn.relu": 1})


def test_split_rules_need_every_part(rejects):
    parts = split_parts(3)
    rejects(workload(outputs(*[R.add(p, var(f"b{k}", 1, 2, 1, 1)) for k, p in enumerate(parts[:2])])),
            rules.split_of_broadcast_variadic())
    rejects(workload(outputs(R.nn.relu(parts[0]), R.nn.relu(parts[1]), parts[2])), rules.split_of_element_wise())
    rejects(workload(outputs(R.nn.relu(parts[0]), R.nn.relu(parts[1]), R.sigmoid(parts[2]))),
            rules.split_of_element_wise())


def test_split_rejects_a_bias_broadcast_along_the_axis(rejects):
    ys = [R.add(p, var(f"b{k}", 1, 1, 1, 1)) for k, p in enumerate(split_parts(2))]
    for rule in (rules.split_of_broadcast(), rules.split_of_broadcast_variadic()):
        rejects(workload(outputs(*ys)), rule)


def test_split_of_lower_rank_biases(applies):
    # a linear layer's bias (C,) against (N, C), a conv's (C, 1, 1) against NCHW: aligned from the right
    s = R.split(var("x", 3, 32), 2, axis=-1)
    ys = [R.add(item(s, k), var(f"b{k}", 16)) for k in range(2)]
    applies(workload(outputs(*ys)), rules.split_of_broadcast_variadic(), {"split": 1, "add": 1},
            {"split": 1, "add": 1, "concat": 1})
    s = R.split(var("x", 3, 32), (12,), axis=1)
    ys = [R.multiply(item(s, k), var(f"b{k}", c)) for k, c in enumerate((12, 20))]
    applies(workload(outputs(*ys)), rules.split_of_broadcast(), {"split": 1, "multiply": 1},
            {"split": 1, "multiply": 1, "concat": 1})
    ys = [R.add(p, var(f"b{k}", c, 1, 1)) for k, (p, c) in enumerate(zip(split_parts((2,)), (2, 4)))]
    applies(workload(outputs(*ys)), rules.split_of_broadcast_variadic(), {"split": 1, "add": 1},
            {"split": 1, "add": 1, "concat": 1})


def test_lower_rank_operands_must_line_up_with_the_axis(rejects):
    # rows split, each added to one (16,) vector broadcast over its rows: no axis of b is the split's
    s = R.split(var("x", 4, 16), 2, axis=0)
    for rule in (rules.split_of_broadcast(), rules.split_of_broadcast_variadic()):
        rejects(workload(outputs(*[R.add(item(s, k), var(f"b{k}", 16)) for k in range(2)])), rule)
    # the ranks of the two biases differ: (1, 3, 1, 1) and (3, 1, 1) do not concatenate
    ys = [R.add(p, var(f"b{k}", *shape)) for k, (p, shape) in enumerate(zip(split_parts(2), ((1, 3, 1, 1), (3, 1, 1))))]
    rejects(workload(outputs(*ys)), rules.split_of_broadcast())


def test_concat_of_lower_rank_operands(applies):
    a, c = var("x", 2, 3), var("y", 2, 5)
    y = R.concat([R.add(a, var("p", 3)), R.add(c, var("q", 5))], axis=1)
    applies(workload(y, inputs=("x", "y")), rules.concat_of_broadcast(), {"concat": 1, "add": 1},
            {"concat": 2, "add": 1})
    y = R.concat(branches([2, 3, 1], bias_shape=lambda c: (c, 1, 1)), axis=1)
    applies(workload(y), rules.concat_of_broadcast_variadic(), {"nn.conv2d": 3, "concat": 1, "add": 1},
            {"nn.conv2d": 3, "concat": 2, "add": 1})


def test_conv_merges_take_lower_rank_biases_along(applies):
    wl = workload(outputs(*[R.nn.relu(b) for b in branches([2, 3], bias_shape=lambda c: (c, 1, 1))]))
    applies(wl, rules.parallel_conv_bias_act_variadic(), {"nn.conv2d": 1, "add": 1, "nn.relu": 1, "split": 1},
            {"nn.conv2d": 1, "add": 1, "nn.relu": 1, "split": 1, "concat": 2})


# --- in a pipeline ---------------------------------------------------------------------


def inception_like():
    """Three conv -> bias add -> relu branches of one input, concatenated: an inception block's end."""
    return workload(R.concat([R.nn.relu(b) for b in branches([2, 3, 4])], axis=1))


def test_saturate_merges_the_branches_whole(same_outputs):
    wl = inception_like()
    mine = [rules.concat_of_broadcast_variadic(), rules.concat_of_broadcast()]
    result = optimize(wl, rules.default() + mine, mode="saturate", cost="gpu")
    same_outputs(wl, result.workload)
    assert result.report.calls_after < result.report.calls_before
    assert ops(result.workload) == {"nn.conv2d": 1, "add": 1, "nn.relu": 1}
    assert result.report.cost_after < result.report.cost_before


def test_greedy_default_merges_the_branches_whole(same_outputs):
    wl = inception_like()
    result = optimize(wl, rules.default(), mode="greedy", cost="gpu")
    same_outputs(wl, result.workload)
    assert ops(result.workload) == {"nn.conv2d": 1, "add": 1, "nn.relu": 1}


def test_parallel_branches_without_concat(same_outputs):
    # the merged conv's parts each add their bias and apply relu: one add and one relu after the rules
    wl = workload(outputs(*[R.nn.relu(b) for b in branches([2, 3])]))
    result = optimize(wl, rules.default(), mode="saturate", cost="gpu")
    same_outputs(wl, result.workload)
    assert ops(result.workload) == {"nn.conv2d": 1, "add": 1, "nn.relu": 1, "split": 1}
    assert result.report.calls_after < result.report.calls_before


# --- convs merged with their bias adds and activations -----------------------------------


def test_parallel_conv_bias_act(applies):
    wl = workload(outputs(*[R.nn.relu(b) for b in branches([2, 3, 4])]))
    applies(wl, rules.parallel_conv_bias_act_variadic(), {"nn.conv2d": 1, "add": 1, "nn.relu": 1, "split": 1},
            {"nn.conv2d": 1, "add": 1, "nn.relu": 1, "split": 1, "concat": 2})


def test_parallel_conv_bias(applies):
    wl = workload(outputs(*[R.sigmoid(b) if k else b for k, b in enumerate(branches([2, 3], op=R.multiply))]))
    applies(wl, rules.parallel_conv_bias_variadic(), {"nn.conv2d": 1, "multiply": 1, "split": 1, "sigmoid": 1},
            {"nn.conv2d": 1, "multiply": 1, "split": 1, "sigmoid": 1, "concat": 2})


def test_parallel_conv_bias_rejects(rejects):
    # a bias broadcast along the channels; different ops; different activations
    rejects(workload(outputs(*branches([2, 3], bias_shape=lambda c: (1, 1, 1, 1)))), rules.parallel_conv_bias_variadic())
    x = var("x", 1, 4, 6, 6)
    convs = [R.nn.conv2d(x, var(f"w{k}", 2, 4, 1, 1)) for k in range(2)]
    rejects(workload(outputs(R.add(convs[0], var("p", 1, 2, 1, 1)), R.multiply(convs[1], var("q", 1, 2, 1, 1)))),
            rules.parallel_conv_bias_variadic())
    rejects(workload(outputs(*[act(b) for act, b in zip((R.nn.relu, R.sigmoid), branches([2, 3]))])),
            rules.parallel_conv_bias_act_variadic())
    # a tensor varying over the image (another branch's, a residual) rather than a per-channel bias
    for rule in (rules.parallel_conv_bias_variadic(), rules.parallel_conv_bias_act_variadic()):
        full = branches([2, 3], bias_shape=lambda c: (1, c, 6, 6))
        rejects(workload(outputs(*[R.nn.relu(b) for b in full])), rule)


def test_tensat_setting_merges_conv_bias_relu(same_outputs):
    """Merges searched in the first iteration only (TENSAT's setting): the conv merge must take its
    bias adds and relus along at once, or they stay one kernel per part."""
    wl = inception_like()
    result = optimize(wl, rules.default(), mode="saturate", cost="gpu", multi_iterations=1, cycles="filter")
    same_outputs(wl, result.workload)
    assert ops(result.workload) == {"nn.conv2d": 1, "add": 1, "nn.relu": 1}
    assert result.report.cost_after < result.report.cost_before


def test_parallel_conv_expand_kernels_bias_act(applies):
    # squeezenet's expand convs: 1x1 and 3x3 ("same" padding) of one input, each with bias and relu
    x = var("x", 1, 4, 6, 6)
    ys = [R.nn.relu(R.add(R.nn.conv2d(x, var(f"w{k}", c, 4, s, s), padding=(s // 2,) * 4), var(f"b{k}", 1, c, 1, 1)))
          for k, (c, s) in enumerate([(2, 1), (3, 3)])]
    applies(workload(R.concat(ys, axis=1)), rules.parallel_conv_expand_kernels_bias_act(),
            {"nn.conv2d": 1, "add": 1, "nn.relu": 1, "split": 1, "concat": 1},
            {"nn.conv2d": 1, "add": 1, "nn.relu": 1, "split": 1, "concat": 3, "nn.pad": 2})
