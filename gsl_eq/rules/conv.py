"""Convolution rules of GSL's collection: fusing convs that add up or run side by side.

Every rule keeps the attributes of the convs it replaces. Rules that concatenate
or split along channels require the NCHW/OIHW layouts (channels on axis 1 of the
data, axis 0 of the kernel).
"""

from __future__ import annotations

from ..frontend import Subst, attr, op, pat
from ._common import CONV_ATTRS, NCHW, concat_each, same_padding, split_back, when


def diamond_conv_add() -> Subst:
    """``conv2d(x, w1) + conv2d(x, w2) -> conv2d(x, w1 + w2)``.

    When: both convs read the same ``x``, have kernels of the same shape and the
    same attributes (convolution is linear in the kernel). The README's first rule.
    """
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable()
    w2 = pat.Variable(shape=w1.shape, dtype=w1.dtype)
    # Source pattern: conv2d(x, w1) + conv2d(x, w2)
    conv1 = op.Conv2D(x, w1)
    conv2 = op.Conv2D(x, w2, **pat.same_attr(conv1, CONV_ATTRS))
    y1 = conv1 + conv2
    # Target pattern: conv2d(x, w1 + w2)
    y2 = op.Conv2D(x, w1 + w2, **pat.same_attr(conv1, CONV_ATTRS))
    return Subst(y1, y2, name="diamond_conv_add")


def two_conv_add() -> Subst:
    """``conv2d(x1, w1) + conv2d(x2, w2) -> conv2d(concat(x1, x2), concat(w1, w2))`` along input channels.

    When: ungrouped NCHW convs with the same attributes, kernels with the same
    number of output channels and spatial size, inputs with the same batch and
    spatial size (the input channel counts may differ). ``x1`` and ``x2`` are
    different values; the same value twice is :func:`diamond_conv_add`.
    """
    # Input
    x1 = pat.Wildcard()
    w1 = pat.Variable()
    x2 = pat.Wildcard(shape=(x1.shape[0], None, x1.shape[2], x1.shape[3]), dtype=x1.dtype)
    w2 = pat.Variable(shape=(w1.shape[0], None, w1.shape[2], w1.shape[3]), dtype=w1.dtype)
    # Source pattern: conv2d(x1, w1) + conv2d(x2, w2)
    conv1 = op.Conv2D(x1, w1, groups=1, **NCHW)
    conv2 = op.Conv2D(x2, w2, **pat.same_attr(conv1, CONV_ATTRS))
    y1 = conv1 + conv2
    # Target pattern: conv2d(concat(x1, x2), concat(w1, w2))
    x = op.Concatenate((x1, x2), axis=1)
    w = op.Concatenate((w1, w2), axis=1)
    y2 = op.Conv2D(x, w, **pat.same_attr(conv1, CONV_ATTRS))
    return Subst(y1, y2, name="two_conv_add")


def conv_shortcut_add() -> Subst:
    """``conv2d(x, w) + x -> conv2d(x, w + I)``, ``I`` the identity kernel.

    When: an ungrouped NCHW conv with unit strides and dilation whose output has
    the shape of its input (so the kernel is square in channels and the padding
    keeps the size). ``I`` is built from attributes: an ``O x O`` identity matrix
    (``relax.eye``) reshaped to ``(O, O, 1, 1)`` and padded to the kernel size so
    that its 1 sits at the tap reading the unshifted input (row ``padding[0]``,
    column ``padding[1]``).
    """
    # Input
    x = pat.Wildcard()
    w = pat.Variable()
    # Source pattern: conv2d(x, w) + x
    conv = op.Conv2D(x, w, strides=(1, 1), dilation=(1, 1), groups=1, shape=x.shape, **NCHW)
    y1 = conv + x
    # Target pattern: conv2d(x, w + I)
    o, pad = w.shape[0], conv.padding
    eye = op.Reshape(op.Eye(n=o, m=o, dtype=w.dtype), shape=(o, o, 1, 1))
    identity = op.Pad(eye, pad_width=(0, 0, 0, 0, pad[0], pad[2], pad[1], pad[3]))
    y2 = op.Conv2D(x, w + identity, **pat.same_attr(conv, CONV_ATTRS))
    return Subst(y1, y2, name="conv_shortcut_add")


def conv_mul() -> Subst:
    """``conv2d(x, w) * c -> conv2d(x, w * reshape(c, (O, 1, 1, 1)))``.

    When: ``c`` is a parameter of shape ``(1, O, 1, 1)`` (one factor per output
    channel, ``O`` the kernel's output channels) and the conv is NCHW/OIHW;
    groups are free, the factor scales each output channel's own filter.
    """
    # Input
    x = pat.Wildcard()
    w = pat.Variable()
    c = pat.Variable(shape=(1, w.shape[0], 1, 1), dtype=w.dtype)
    # Source pattern: conv2d(x, w) * c
    conv = op.Conv2D(x, w, **NCHW)
    y1 = conv * c
    # Target pattern: conv2d(x, w * c^T)
    y2 = op.Conv2D(x, w * op.Reshape(c, shape=(w.shape[0], 1, 1, 1)), **pat.same_attr(conv, CONV_ATTRS))
    return Subst(y1, y2, name="conv_mul")


def parallel_conv() -> Subst:
    """Two convs of one input -> one conv on the concatenated kernels, split in two.

    When: ungrouped NCHW convs with kernels of the same shape and the same
    attributes. A multi-pattern rule: its target has two outputs.
    """
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable()
    w2 = pat.Variable(shape=w1.shape, dtype=w1.dtype)
    # Source pattern
    conv1 = op.Conv2D(x, w1, groups=1, **NCHW)
    conv2 = op.Conv2D(x, w2, **pat.same_attr(conv1, CONV_ATTRS))
    # Target pattern
    w = op.Concatenate((w1, w2), axis=0)
    conv = op.Conv2D(x, w, **pat.same_attr(conv1, CONV_ATTRS))
    split = op.Split(conv, indices_or_sections=2, axis=1)
    return Subst([conv1, conv2], [split[0], split[1]], name="parallel_conv")


def parallel_conv_variadic() -> Subst:
    """Any number (at least two) of convs of one input -> one conv, split back per conv.

    When: ungrouped NCHW convs with the same attributes and kernels of the same
    spatial size; output channel counts may differ. A variadic pattern's example.
    """
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable()
    w = pat.Variable(shape=(None, None, w1.shape[2], w1.shape[3]), dtype=w1.dtype)
    # Source pattern
    conv1 = op.Conv2D(x, w1, groups=1, **NCHW)
    conv = op.Conv2D(x, w, **pat.same_attr(conv1, CONV_ATTRS))
    src = pat.Variadic(conv, templates=[conv, w], first=[conv1, w1], min_len=2)
    # Target pattern
    concat = concat_each(src, w, axis=0)
    conv = op.Conv2D(x, concat, **pat.same_attr(conv1, CONV_ATTRS))
    tgt = split_back(conv, src, w, 0, axis=1)
    return Subst(src, tgt, name="parallel_conv_variadic", symmetric=True)


def parallel_conv_expand_kernels() -> Subst:
    """Two convs of one input with kernels of different sizes -> one conv with the larger kernel.

    The smaller kernel is zero-padded (``relax.nn.pad``) to the larger size so
    that its taps stay aligned, then the kernels are concatenated and the result
    split. When: ungrouped NCHW convs with unit dilation, the same strides, and
    "same" padding (``((kh-1)//2, (kw-1)//2, kh//2, kw//2)``, which keeps both
    outputs the same size; odd or even kernels).
    """
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable()
    w2 = pat.Variable(dtype=w1.dtype)
    # Source pattern
    conv1 = op.Conv2D(x, w1, padding=same_padding(w1), dilation=(1, 1), groups=1, **NCHW)
    conv2 = op.Conv2D(x, w2, padding=same_padding(w2),
                      **pat.same_attr(conv1, ["strides", "dilation", "groups", *NCHW, "out_dtype"]))
    # Target pattern
    kh, kw = attr.Max(w1.shape[2], w2.shape[2]), attr.Max(w1.shape[3], w2.shape[3])

    def expand(w: pat.Pattern) -> pat.Call:
        top, left = (kh - 1) // 2 - (w.shape[2] - 1) // 2, (kw - 1) // 2 - (w.shape[3] - 1) // 2
        return op.Pad(w, pad_width=(0, 0, 0, 0, top, kh - w.shape[2] - top, left, kw - w.shape[3] - left))

    w = op.Concatenate((expand(w1), expand(w2)), axis=0)
    conv = op.Conv2D(x, w, padding=((kh - 1) // 2, (kw - 1) // 2, kh // 2, kw // 2),
                     **pat.same_attr(conv1, ["strides", "dilation", "groups", *NCHW, "out_dtype"]))
    split = op.Split(conv, indices_or_sections=(w1.shape[0],), axis=1)
    return Subst([conv1, conv2], [split[0], split[1]], name="parallel_conv_expand_kernels")


def parallel_group_conv_variadic() -> Subst:
    """Any number (at least two) of grouped convs of one input -> one grouped conv, split back.

    Group ``g`` of the combined conv must read input group ``g`` only, so the
    kernels are interleaved group by group: concatenated ``(n*O, I/G, kh, kw)``,
    reshaped to ``(n, G, O/G, ...)``, groups moved first, flattened back; the
    output channels come out as ``(G, n, O/G)`` and are reordered to ``(n, G, O/G)``
    before the split. When: NCHW convs with ``groups > 1``, the same attributes
    and kernels of the same shape (ungrouped convs are :func:`parallel_conv_variadic`'s).
    """
    # Input
    x = pat.Wildcard()
    w1 = pat.Variable()
    w = pat.Variable(shape=w1.shape, dtype=w1.dtype)
    # Source pattern
    conv1 = op.Conv2D(x, w1, **NCHW)
    conv = op.Conv2D(x, w, groups=when(conv1.groups > 1, conv1.groups), **pat.same_attr(conv1, [
        "strides", "padding", "dilation", *NCHW, "out_dtype"]))
    src = pat.Variadic(conv, templates=[conv, w], first=[conv1, w1], min_len=2)
    # Target pattern: interleave the kernels by group
    n, g = src.length, conv1.groups
    o, per_group = w1.shape[0], w1.shape[0] // conv1.groups
    w_cat = concat_each(src, w, axis=0)
    w_split = op.Reshape(w_cat, shape=(n, g, per_group, w1.shape[1], w1.shape[2], w1.shape[3]))
    w_comb = op.Reshape(op.Transpose(w_split, axes=(1, 0, 2, 3, 4, 5)),
                        shape=(n * o, w1.shape[1], w1.shape[2], w1.shape[3]))
    conv = op.Conv2D(x, w_comb, **pat.same_attr(conv1, CONV_ATTRS))
    # ... and put the output channels back in conv order
    batch, h, wd = conv1.shape[0], conv1.shape[2], conv1.shape[3]
    y_split = op.Reshape(conv, shape=(batch, g, n, per_group, h, wd))
    y_comb = op.Reshape(op.Transpose(y_split, axes=(0, 2, 1, 3, 4, 5)), shape=(batch, n * o, h, wd))
    split = op.Split(y_comb, indices_or_sections=n, axis=1)
    i = attr.Symbol()
    item = split[i]
    tgt = pat.Variadic(item, templates=[item], index=i)
    return Subst(src, tgt, name="parallel_group_conv_variadic", symmetric=True)
