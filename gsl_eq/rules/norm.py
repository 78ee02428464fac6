"""Normalization rules: batch norms folded into convs, batch and layer norm lowered to element-wise arithmetic.

An ``epsilon`` is read from the matched op and built as a one-element tensor (see
:func:`gsl_eq.rules._common.scalar`); with parameter folding every computation
on parameters alone (the per-channel scale and shift) becomes a new parameter.
"""

from __future__ import annotations

from ..frontend import Subst, attr, op, pat
from ._common import CONV_ATTRS, NCHW, channel_shape, scalar


def lower_batch_norm() -> Subst:
    """``batch_norm(x, gamma, beta, mean, var)[0] -> x * scale + shift`` in inference mode.

    ``scale = gamma / sqrt(var + eps)`` and ``shift = beta - mean * scale``, both
    reshaped to ``(1, .., C, .., 1)`` to broadcast along the op's ``axis``. When:
    ``training=False`` (the moving statistics are used) with ``center`` and
    ``scale`` on; only item 0 of the result is used (the updated statistics are
    not). The statistics may be any tensors; they fold away when they are
    parameters.
    """
    # Input
    x = pat.Wildcard()
    gamma = pat.Wildcard()
    beta = pat.Wildcard()
    mean = pat.Wildcard()
    var = pat.Wildcard()
    # Source pattern: batch_norm(x, gamma, beta, mean, var)[0]
    bn = op.BatchNorm(x, gamma, beta, mean, var, training=False, center=True, scale=True)
    y1 = bn[0]
    # Target pattern: x * scale + shift
    k = gamma / op.Sqrt(var + scalar(bn.epsilon, var.dtype))
    shape = channel_shape(gamma.shape[0], bn.axis % x.ndim, x.ndim)
    y2 = x * op.Reshape(k, shape=shape) + op.Reshape(beta - mean * k, shape=shape)
    return Subst(y1, y2, name="lower_batch_norm")


def lower_layer_norm() -> Subst:
    """``layer_norm(x, gamma, beta) -> (x - mean(x)) / sqrt(variance(x) + eps) * gamma + beta``.

    Mean and variance are taken over the normalized axes, keeping them. When:
    ``center`` and ``scale`` are on and the axes are the trailing ``gamma.ndim``
    axes written from the end (``(-k, ..., -1)``, as TVM's PyTorch importer
    writes them), so that ``gamma`` and ``beta`` broadcast as they are.
    """
    # Input
    x = pat.Wildcard()
    gamma = pat.Wildcard()
    beta = pat.Wildcard()
    # Source pattern: layer_norm(x, gamma, beta) over the trailing axes
    i = attr.Symbol()
    trailing = attr.Variadic(i - gamma.ndim, index=i, length=gamma.ndim)
    ln = op.LayerNorm(x, gamma, beta, axes=trailing, center=True, scale=True)
    # Target pattern
    centered = x - op.Mean(x, axis=ln.axes, keepdims=True)
    var = op.Variance(x, axis=ln.axes, keepdims=True)
    y2 = centered / op.Sqrt(var + scalar(ln.epsilon, x.dtype)) * gamma + beta
    return Subst(ln, y2, name="lower_layer_norm")


def conv_batch_norm() -> Subst:
    """``batch_norm(conv2d(x, w), gamma, beta, mean, var)[0] -> conv2d(x, w * scale) + shift``.

    ``scale = gamma / sqrt(var + eps)`` per output channel, reshaped to
    ``(O, 1, 1, 1)`` for the kernel; ``shift = beta - mean * scale`` reshaped to
    ``(1, O, 1, 1)``. When: an NCHW/OIHW conv, batch norm over axis 1 in inference
    mode (``training=False``) with ``center`` and ``scale`` on. What TVM's
    ``FoldBatchnormToConv2D`` does.
    """
    # Input
    x = pat.Wildcard()
    w = pat.Variable()
    gamma = pat.Wildcard()
    beta = pat.Wildcard()
    mean = pat.Wildcard()
    var = pat.Wildcard()
    # Source pattern: batch_norm(conv2d(x, w), gamma, beta, mean, var)[0]
    conv = op.Conv2D(x, w, **NCHW)
    bn = op.BatchNorm(conv, gamma, beta, mean, var, axis=1, training=False, center=True, scale=True)
    y1 = bn[0]
    # Target pattern: conv2d(x, w * scale) + shift
    k = gamma / op.Sqrt(var + scalar(bn.epsilon, var.dtype))
    o = w.shape[0]
    y2 = op.Conv2D(x, w * op.Reshape(k, shape=(o, 1, 1, 1)), **pat.same_attr(conv, CONV_ATTRS)) \
        + op.Reshape(beta - mean * k, shape=(1, o, 1, 1))
    return Subst(y1, y2, name="conv_batch_norm")


def conv_bias_batch_norm() -> Subst:
    """``batch_norm(conv2d(x, w) + b, gamma, beta, mean, var)[0] -> conv2d(x, w * scale) + (b * scale + shift)``.

    A conv with a bias before its batch norm, as PyTorch's ``Conv2d(bias=True)`` exports: the
    bias is scaled with the filters. ``scale`` and ``shift`` are :func:`conv_batch_norm`'s. When:
    ``b`` is a parameter of shape ``(1, O, 1, 1)`` and :func:`conv_batch_norm`'s conditions hold.
    """
    # Input
    x = pat.Wildcard()
    w = pat.Variable()
    b = pat.Variable(shape=(1, w.shape[0], 1, 1), dtype=w.dtype)
    gamma = pat.Wildcard()
    beta = pat.Wildcard()
    mean = pat.Wildcard()
    var = pat.Wildcard()
    # Source pattern: batch_norm(conv2d(x, w) + b, gamma, beta, mean, var)[0]
    conv = op.Conv2D(x, w, **NCHW)
    bn = op.BatchNorm(conv + b, gamma, beta, mean, var, axis=1, training=False, center=True, scale=True)
    y1 = bn[0]
    # Target pattern: conv2d(x, w * scale) + (b * scale + shift)
    k = gamma / op.Sqrt(var + scalar(bn.epsilon, var.dtype))
    o = w.shape[0]
    channel = (1, o, 1, 1)
    y2 = op.Conv2D(x, w * op.Reshape(k, shape=(o, 1, 1, 1)), **pat.same_attr(conv, CONV_ATTRS)) \
        + (b * op.Reshape(k, shape=channel) + op.Reshape(beta - mean * k, shape=channel))
    return Subst(y1, y2, name="conv_bias_batch_norm")
