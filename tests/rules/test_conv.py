"""Conv rules on small models: where they apply, and where a constraint forbids them."""

import pytest

from gsl_eq import rules
from gsl_eq.models.blocks import diamond_conv
from gsl_eq.greedy import rewrite

from .support import R, ops, outputs, var, workload


def x_nchw(c=4, size=6):
    return var("x", 1, c, size, size)


def conv(x, name, out_ch, in_ch, kh, kw=None, **attrs):
    return R.nn.conv2d(x, var(name, out_ch, in_ch, kh, kw or kh), **attrs)


# --- diamond conv add -------------------------------------------------------------------


def test_diamond_conv_add_as_in_seed_002(applies, same_outputs):
    wl = diamond_conv()
    applies(wl, rules.diamond_conv_add(), {"nn.conv2d": 1}, {"nn.conv2d": 1, "add": 1})
    # Seed 002: new_wl = subst(wl) prints main(%x, %v_param_1), the kernels folded into one new parameter.
    subst = rules.diamond_conv_add()
    new_wl = subst(wl)
    assert new_wl.input_names == ["x"] and set(new_wl.params) == {"v_param_1"}
    assert ops(new_wl) == {"nn.conv2d": 1}
    same_outputs(wl, new_wl)


def test_diamond_conv_add_keeps_attributes(applies):
    x = x_nchw()
    y = R.add(conv(x, "w1", 5, 4, 3, strides=2, padding=1), conv(x, "w2", 5, 4, 3, strides=2, padding=1))
    applies(workload(y), rules.diamond_conv_add(), {"nn.conv2d": 1}, {"nn.conv2d": 1, "add": 1})


def test_diamond_conv_add_needs_the_same_attributes(rejects):
    x = x_nchw()
    y = R.add(conv(x, "w1", 4, 4, 3, padding=1), conv(x, "w2", 4, 4, 3, padding=2, dilation=2))
    rejects(workload(y), rules.diamond_conv_add())


# --- two conv add -----------------------------------------------------------------------


def test_two_conv_add(applies):
    x, x2 = x_nchw(), var("x2", 1, 3, 6, 6)
    y = R.add(conv(x, "w1", 5, 4, 3, padding=1), conv(x2, "w2", 5, 3, 3, padding=1))
    applies(workload(y, {"x", "x2"}), rules.two_conv_add(),
            {"concat": 1, "nn.conv2d": 1}, {"concat": 2, "nn.conv2d": 1})


def test_two_conv_add_needs_kernels_of_one_size(rejects):
    x, x2 = x_nchw(), var("x2", 1, 3, 6, 6)
    y = R.add(conv(x, "w1", 5, 4, 3, padding=1), conv(x2, "w2", 5, 3, 1))
    rejects(workload(y, {"x", "x2"}), rules.two_conv_add())


# --- conv shortcut add ------------------------------------------------------------------


@pytest.mark.parametrize("kernel, padding", [
    ((3, 3), (1, 1, 1, 1)), ((1, 1), (0, 0, 0, 0)), ((3, 2), (1, 0, 1, 1)), ((2, 4), (1, 2, 0, 1))])
def test_conv_shortcut_add(applies, kernel, padding):
    x = x_nchw()
    y = R.add(conv(x, "w", 4, 4, *kernel, padding=padding), x)
    applies(workload(y), rules.conv_shortcut_add(),
            {"nn.conv2d": 1}, {"eye": 1, "reshape": 1, "nn.pad": 1, "add": 1, "nn.conv2d": 1})


def test_conv_shortcut_add_needs_unit_dilation(rejects):
    x = x_nchw()
    y = R.add(conv(x, "w", 4, 4, 3, padding=2, dilation=2), x)
    rejects(workload(y), rules.conv_shortcut_add())


# --- conv mul ---------------------------------------------------------------------------


@pytest.mark.parametrize("groups", [1, 2])
def test_conv_mul(applies, groups):
    x = x_nchw()
    y = R.multiply(conv(x, "w", 6, 4 // groups, 3, groups=groups), var("c", 1, 6, 1, 1))
    applies(workload(y), rules.conv_mul(), {"nn.conv2d": 1}, {"reshape": 1, "multiply": 1, "nn.conv2d": 1})


def test_conv_mul_needs_one_factor_per_channel(rejects):
    x = x_nchw()
    y = R.multiply(conv(x, "w", 6, 4, 1), var("c", 1, 1, 6, 6))
    rejects(workload(y), rules.conv_mul())


# --- parallel conv ----------------------------------------------------------------------


def test_parallel_conv(applies):
    x = x_nchw()
    y = outputs(R.nn.relu(conv(x, "w1", 4, 4, 3, padding=1)), R.sigmoid(conv(x, "w2", 4, 4, 3, padding=1)))
    applies(workload(y), rules.parallel_conv(),
            {"nn.conv2d": 1, "split": 1, "nn.relu": 1, "sigmoid": 1},
            {"concat": 1, "nn.conv2d": 1, "split": 1, "nn.relu": 1, "sigmoid": 1})


def test_parallel_conv_needs_the_same_strides(rejects):
    x = x_nchw()
    y = outputs(conv(x, "w1", 4, 4, 3, padding=1), conv(x, "w2", 4, 4, 3, padding=1, strides=2))
    rejects(workload(y), rules.parallel_conv())


def test_parallel_conv_variadic(applies):
    x = x_nchw()
    y = outputs(*(conv(x, f"w{k}", 3 + k, 4, 3, padding=1) for k in range(3)))
    applies(workload(y), rules.parallel_conv_variadic(),
            {"nn.conv2d": 1, "split": 1}, {"concat": 1, "nn.conv2d": 1, "split": 1})


def test_parallel_conv_variadic_needs_the_same_padding(rejects):
    x = x_nchw()
    y = outputs(conv(x, "w1", 4, 4, 3, padding=1), conv(x, "w2", 3, 4, 3))
    rejects(workload(y), rules.parallel_conv_variadic())


# --- parallel conv with expanded kernels --------------------------------------------------


def same(kh, kw):
    return ((kh - 1) // 2, (kw - 1) // 2, kh // 2, kw // 2)


@pytest.mark.parametrize("k1, k2, strides", [
    ((3, 3), (1, 1), 1), ((3, 3), (2, 2), 1), ((1, 5), (4, 2), 1), ((5, 5), (3, 3), 2)])
def test_parallel_conv_expand_kernels(applies, k1, k2, strides):
    x = x_nchw(size=7)
    y = outputs(conv(x, "w1", 3, 4, *k1, padding=same(*k1), strides=strides),
                conv(x, "w2", 5, 4, *k2, padding=same(*k2), strides=strides))
    applies(workload(y), rules.parallel_conv_expand_kernels(),
            {"nn.conv2d": 1, "split": 1}, {"nn.pad": 2, "concat": 1, "nn.conv2d": 1, "split": 1})


@pytest.mark.parametrize("padding, dilation", [(0, 1), (2, 2)])
def test_parallel_conv_expand_kernels_needs_same_padding_and_unit_dilation(rejects, padding, dilation):
    x = x_nchw()
    y = outputs(conv(x, "w1", 3, 4, 3, padding=padding, dilation=dilation), conv(x, "w2", 5, 4, 1))
    rejects(workload(y), rules.parallel_conv_expand_kernels())


# --- parallel group conv ------------------------------------------------------------------


def test_parallel_group_conv_variadic(applies):
    x = x_nchw()
    y = outputs(*(conv(x, f"w{k}", 6, 2, 3, padding=1, groups=2) for k in range(3)))
    applies(workload(y), rules.parallel_group_conv_variadic(),
            {"nn.conv2d": 1, "reshape": 2, "permute_dims": 1, "split": 1},
            {"concat": 1, "reshape": 4, "permute_dims": 2, "nn.conv2d": 1, "split": 1})


def test_parallel_group_conv_variadic_needs_groups(rejects):
    x = x_nchw()
    y = outputs(*(conv(x, f"w{k}", 6, 4, 3, padding=1) for k in range(2)))
    rejects(workload(y), rules.parallel_group_conv_variadic())


def test_parallel_group_conv_variadic_leaves_other_convs(applies):
    x = x_nchw()
    grouped = [conv(x, f"w{k}", 4, 1, 3, padding=1, groups=4) for k in range(2)]
    y = outputs(*grouped, conv(x, "dense", 4, 4, 3, padding=1))
    new, _ = applies(workload(y), rules.parallel_group_conv_variadic(),
                     {"nn.conv2d": 2, "reshape": 2, "permute_dims": 1, "split": 1},
                     {"concat": 1, "reshape": 4, "permute_dims": 2, "nn.conv2d": 2, "split": 1})
    assert rewrite(new, rules.parallel_group_conv_variadic())[1] == 0
