"""Rules for TVM's CPU backend: forms its scheduled kernels may run faster, found by timing both
sides (``benchmarks/cpu_rewrites.py``, BENCHMARKS.md's cpu-rewrites section).

A 1x1 convolution is a matrix product over channels, and the reshapes around the product are
views. Tuned by MetaSchedule, the product runs faster than some 1x1 convs and slower than others:
a choice for a cost model that sees TVM's kernels (``cost="tvm"``) or for measured selection, not
a rewrite that always pays, so these rules are not in ``default()``.
"""

from __future__ import annotations

from ..frontend import Subst, op, pat
from ._common import NCHW


def conv1x1_as_matmul() -> Subst:
    """``conv2d(x, w)`` with a 1x1 kernel -> ``reshape(reshape(w, (O, C)) @ reshape(x, (N, C, H*W)), (N, O, H, W))``.

    When: an ungrouped NCHW/OIHW conv with a 1x1 kernel, unit strides and no padding (dilation
    does not matter for one tap). The kernel's reshape reads only a parameter and folds away.
    """
    # Input
    x = pat.Wildcard(ndim=4)
    w = pat.Variable(shape=(None, x.shape[1], 1, 1))
    # Source pattern: a 1x1 convolution
    conv = op.Conv2D(x, w, strides=(1, 1), padding=(0, 0, 0, 0), groups=1, **NCHW)
    # Target pattern: a product over channels, batched over images
    n, c, h, width = x.shape[0], x.shape[1], x.shape[2], x.shape[3]
    o = w.shape[0]
    product = op.MatMul(op.Reshape(w, shape=(o, c)), op.Reshape(x, shape=(n, c, h * width)), out_dtype=conv.out_dtype)
    y = op.Reshape(product, shape=(n, o, h, width))
    return Subst(conv, y, name="conv1x1_as_matmul")


def strided_conv1x1_as_matmul() -> Subst:
    """``conv2d(x, w)`` with a 1x1 kernel and strides ``(s, t)`` -> the pixels it reads, ``x[:, :, ::s, ::t]``,
    times the kernel: ``reshape(reshape(w, (O, C)) @ reshape(strided_slice(x), (N, C, h*w)), (N, O, h, w))``.

    When: an ungrouped NCHW/OIHW conv with a 1x1 kernel, no padding and strides other than
    ``(1, 1)`` (unit strides are :func:`conv1x1_as_matmul`, with no slice). ``h = (H - 1) // s + 1``
    and ``w = (W - 1) // t + 1`` are the conv's output size.
    """
    # Input
    x = pat.Wildcard(ndim=4)
    w = pat.Variable(shape=(None, x.shape[1], 1, 1))
    # Source pattern: a strided 1x1 convolution
    conv = op.Conv2D(x, w, padding=(0, 0, 0, 0), groups=1, **NCHW)
    # Target pattern: the pixels read, then a product over channels
    n, c, o = x.shape[0], x.shape[1], w.shape[0]
    s, t = conv.strides[0], conv.strides[1]
    h, width = (x.shape[2] - 1) // s + 1, (x.shape[3] - 1) // t + 1
    pixels = op.StridedSlice(x, axes=(2, 3), begin=(0, 0), end=(x.shape[2], x.shape[3]), strides=(s, t))
    product = op.MatMul(op.Reshape(w, shape=(o, c)), op.Reshape(pixels, shape=(n, c, h * width)),
                        out_dtype=conv.out_dtype)
    y = op.Reshape(product, shape=(n, o, h, width))
    return Subst(conv, y, where=conv.strides != (1, 1), name="strided_conv1x1_as_matmul")

