"""Normalization rules: batch norm and layer norm lowered, batch norm folded into a conv."""

import pytest

from gsl_eq import rules

from .support import R, item, var, workload

LOWERED_BN = {"zeros": 1, "clip": 1, "add": 2, "sqrt": 1, "divide": 1, "reshape": 2, "multiply": 2, "subtract": 1}


def batch_norm(x, ch, **attrs):
    stats = [var(name, ch) for name in ("gamma", "beta", "mean", "var")]
    return item(R.nn.batch_norm(x, *stats, **{"axis": 1, "training": False, **attrs}), 0)


@pytest.mark.parametrize("shape, axis", [((2, 4, 3, 3), 1), ((2, 3, 4), -1), ((5, 4), 1), ((2, 4, 3), -2)])
def test_lower_batch_norm(applies, shape, axis):
    x = var("x", *shape)
    y = batch_norm(x, shape[axis], axis=axis, epsilon=1e-3)
    applies(workload(y), rules.lower_batch_norm(), {"multiply": 1, "add": 1}, LOWERED_BN)


@pytest.mark.parametrize("attrs", [{"training": True}, {"center": False}, {"scale": False}])
def test_lower_batch_norm_needs_inference_mode_with_scale_and_center(rejects, attrs):
    x = var("x", 2, 4, 3, 3)
    rejects(workload(batch_norm(x, 4, **attrs)), rules.lower_batch_norm())


def test_lower_batch_norm_leaves_a_batch_norm_whose_statistics_are_read(rejects):
    x = var("x", 2, 4, 3, 3)
    bn = R.nn.batch_norm(x, *(var(n, 4) for n in ("gamma", "beta", "mean", "var")), axis=1, training=False)
    rejects(workload(R.add(R.sum(item(bn, 0)), R.sum(item(bn, 1)))), rules.lower_batch_norm())


def test_conv_batch_norm(applies):
    x = var("x", 1, 3, 6, 6)
    y = batch_norm(R.nn.conv2d(x, var("w", 4, 3, 3, 3), padding=1, strides=2), 4, epsilon=1e-3)
    applies(workload(y), rules.conv_batch_norm(), {"nn.conv2d": 1, "add": 1}, {**LOWERED_BN, "nn.conv2d": 1})


def test_conv_batch_norm_needs_the_channel_axis(rejects):
    x = var("x", 1, 3, 6, 6)
    rejects(workload(batch_norm(R.nn.conv2d(x, var("w", 4, 3, 1, 1)), 6, axis=2)), rules.conv_batch_norm())


def test_conv_bias_batch_norm(applies):
    x = var("x", 1, 3, 6, 6)
    biased = R.add(R.nn.conv2d(x, var("w", 4, 3, 3, 3), padding=1), var("b", 1, 4, 1, 1))
    applies(workload(batch_norm(biased, 4, epsilon=1e-3)), rules.conv_bias_batch_norm(), {"nn.conv2d": 1, "add": 1},
            {**LOWERED_BN, "nn.conv2d": 1, "add": 3, "multiply": 3, "reshape": 3})


@pytest.mark.parametrize("bias_shape", [(4, 1, 1), (1, 1, 1, 1), (1, 4, 6, 6)])
def test_conv_bias_batch_norm_needs_one_bias_per_output_channel(rejects, bias_shape):
    x = var("x", 1, 3, 6, 6)
    biased = R.add(R.nn.conv2d(x, var("w", 4, 3, 3, 3), padding=1), var("b", *bias_shape))
    rejects(workload(batch_norm(biased, 4)), rules.conv_bias_batch_norm())


LOWERED_LN = {"mean": 1, "subtract": 1, "variance": 1, "zeros": 1, "clip": 1, "add": 2, "sqrt": 1, "divide": 1,
              "multiply": 1}


@pytest.mark.parametrize("shape, axes", [((2, 3, 8), [-1]), ((2, 3, 8), [-2, -1]), ((6, 5), [-1])])
def test_lower_layer_norm(applies, shape, axes):
    x = var("x", *shape)
    normalized = shape[len(shape) - len(axes):]
    y = R.nn.layer_norm(x, var("gamma", *normalized), var("beta", *normalized), axes=axes, epsilon=1e-3)
    folded = {k: v for k, v in LOWERED_LN.items() if k not in ("zeros", "clip")}
    applies(workload(y), rules.lower_layer_norm(), folded, LOWERED_LN)


@pytest.mark.parametrize("axes, normalized, attrs", [([1], (3,), {}), ([-1], (8,), {"center": False})])
def test_lower_layer_norm_needs_trailing_axes_with_scale_and_center(rejects, axes, normalized, attrs):
    x = var("x", 2, 3, 8)
    y = R.nn.layer_norm(x, var("gamma", *normalized), var("beta", *normalized), axes=axes, **attrs)
    rejects(workload(y), rules.lower_layer_norm())
