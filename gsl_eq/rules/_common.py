"""Small pieces the rules share: conv attribute lists and a few attribute idioms."""

from __future__ import annotations

from typing import Any

from ..frontend import attr, op, pat

#: Every attribute of relax.nn.conv2d: what a rewritten conv copies from the one it replaces.
CONV_ATTRS = ["strides", "padding", "dilation", "groups", "data_layout", "kernel_layout", "out_layout", "out_dtype"]

#: Layout constraints of a conv whose channels are axis 1 of data and output, and axis 0 of the kernel.
NCHW = {"data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": "NCHW"}

# A value no attribute has: a constraint that must fail compares against it.
_UNSATISFIABLE = "<gsl_eq: constraint not met>"


def when(pred: Any, value: Any) -> attr.AttrExpr:
    """A constraint value that is ``value`` if ``pred`` holds and matches nothing otherwise.

    GSL constraints are equalities ``name=expr``; a predicate over patterns matched
    earlier rides on one: ``groups=when(conv1.groups > 1, conv1.groups)``.
    """
    return attr.Cond(pred, value, _UNSATISFIABLE)


def scalar(value: Any, dtype: Any) -> pat.Call:
    """A one-element tensor (shape ``(1,)``) holding attribute expression ``value`` (such as ``bn.epsilon``).

    A target ``pat.Const`` takes a literal value only, so a number read from an
    attribute is built by ops: ``clip(zeros((1,), dtype), value, value)``. It
    reads no input, so parameter folding turns it into a constant parameter
    (of shape ``(1,)``, which broadcasts like a scalar).
    """
    return op.Clip(op.Zeros(shape=(1,), dtype=dtype), min=value, max=value)


def same_padding(kernel: pat.Pattern) -> tuple:
    """The padding (top, left, bottom, right) keeping a stride-1 conv's output size, as PyTorch's ``padding="same"``."""
    kh, kw = kernel.shape[2], kernel.shape[3]
    return ((kh - 1) // 2, (kw - 1) // 2, kh // 2, kw // 2)


def arange(n: Any) -> attr.AttrExpr:
    """The tuple ``(0, 1, ..., n - 1)``."""
    i = attr.Symbol("i")
    return attr.Variadic(i, index=i, length=n)


def channel_shape(channels: Any, axis: Any, ndim: Any) -> attr.AttrExpr:
    """The shape ``(1, .., channels, .., 1)`` of rank ``ndim``, ``channels`` at ``axis``: a vector broadcast along ``axis``."""
    i = attr.Symbol("i")
    return attr.Variadic(attr.Cond(i == axis, channels, 1), index=i, length=ndim)


def concat_each(src: pat.Variadic, template: pat.Pattern, axis: Any) -> pat.Call:
    """The concat, along ``axis``, of what ``template`` matched in each repetition of the variadic
    ``src`` (the weights of every merged conv: ``concat_each(src, w, axis=0)``)."""
    i = attr.Symbol()
    inst = src(template, i)
    return op.Concatenate(pat.Variadic(inst, templates=[inst], index=i, length=src.length), axis=axis)


def split_back(whole: pat.Pattern, src: pat.Variadic, template: pat.Pattern, dim: int, axis: int) -> pat.Variadic:
    """The parts of ``whole`` split along ``axis`` where the repetitions of the variadic ``src``
    end: one part per repetition, as wide as its ``template``'s extent ``dim`` (a merged conv's
    output back into one output per conv: ``split_back(conv, src, w, 0, axis=1)``)."""
    i, j = attr.Symbol(), attr.Symbol()
    split = op.Split(whole, axis=axis, indices_or_sections=attr.Variadic(
        attr.Sum(src(template, j).shape[dim], j, i + 1), index=i, length=src.length - 1))
    i = attr.Symbol()
    item = split[i]
    return pat.Variadic(item, templates=[item], index=i)
