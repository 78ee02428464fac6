"""Rules for TVM's CPU backend: forms its scheduled kernels may run faster, found by timing both
sides (``benchmarks/cpu_rewrites.py``, BENCHMARKS.md's cpu-rewrites section).

A 1x1 convolution is a matrix product over channels, and the reshapes around the product are
views. Tuned by MetaSchedule, the product runs faster than some 1x1 convs and slower than others.
A channel shuffle (reshape, transpose, reshape, as ShuffleNet writes it) is a gather of channels by
constant indices, which TVM fuses into a plain copy where the shuffle's kernel computes every
element's source index. Each is a choice for a cost model that sees TVM's kernels (``cost="tvm"``)
or for measured selection, not a rewrite that always pays, so these rules are not in ``default()``.
"""

from __future__ import annotations

import numpy as np

from ..frontend import Subst, attr, op, pat
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



def _shuffled(channels: int, groups: int, start: int, stop: int) -> np.ndarray:
    """The channels a shuffle of ``channels`` in ``groups`` puts at places ``start`` to ``stop``:
    place ``i * groups + j`` holds channel ``j * (channels // groups) + i``."""
    order = np.arange(channels).reshape(groups, channels // groups).T.reshape(-1)
    return order[start:stop].astype("int64")


def _channel_shuffle() -> tuple[pat.Pattern, pat.Pattern, pat.Pattern, attr.AttrExpr]:
    """``x``, the grouping reshape, and ``reshape(permute_dims(reshape(x, (N, g, C/g, H, W)), (0, 2, 1, 3, 4)), x.shape)``."""
    x = pat.Wildcard(ndim=4)
    n, c, h, w = x.shape[0], x.shape[1], x.shape[2], x.shape[3]
    grouped = op.Reshape(x, ndim=5)
    swapped = op.Transpose(grouped, axes=(0, 2, 1, 3, 4))
    shuffled = op.Reshape(swapped, shape=x.shape)
    grouping = (grouped.shape[0] == n) & (grouped.shape[1] * grouped.shape[2] == c) & (grouped.shape[3] == h) \
        & (grouped.shape[4] == w)
    return x, grouped, shuffled, grouping


def channel_shuffle_as_take() -> Subst:
    """A channel shuffle -> ``take(x, order, axis=1)``, ``order`` the constant channel indices it takes.

    The shuffle is ``reshape(permute_dims(reshape(x, (N, g, C/g, H, W)), (0, 2, 1, 3, 4)), (N, C, H, W))``.
    When: the first reshape splits only the channel axis, into ``g`` groups.
    """
    # Input, and source pattern: the shuffle
    x, grouped, shuffled, grouping = _channel_shuffle()
    # Target pattern: a gather of channels
    order = pat.Const(fill=_shuffled, channels=x.shape[1], groups=grouped.shape[1], start=0, stop=x.shape[1])
    return Subst(shuffled, op.Take(x, order, axis=1, mode="clip"), where=grouping, name="channel_shuffle_as_take")


def split_of_channel_shuffle() -> Subst:
    """``split(shuffle(x), 2, axis=1)`` -> ``take(x, order[:k], axis=1), take(x, order[k:], axis=1)``: each
    part of a shuffled tensor gathered from ``x`` at once (a ShuffleNet unit splits what the
    unit before shuffled).

    When: a channel shuffle as :func:`channel_shuffle_as_take` takes it, split in two along channels.
    """
    # Input, and source pattern: a split of the shuffle
    x, grouped, shuffled, grouping = _channel_shuffle()
    split = op.Split(shuffled, length=2, axis=1)
    first, second = split[0], split[1]
    # Target pattern: a gather for each part
    c, k = x.shape[1], first.shape[1]

    def gather(start: attr.AttrExpr, stop: attr.AttrExpr) -> pat.Call:
        order = pat.Const(fill=_shuffled, channels=c, groups=grouped.shape[1], start=start, stop=stop)
        return op.Take(x, order, axis=1, mode="clip")

    return Subst([first, second], [gather(0, k), gather(k, c)], where=grouping, name="split_of_channel_shuffle")
