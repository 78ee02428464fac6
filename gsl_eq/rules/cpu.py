"""Rules that pay on TVM's CPU backend: forms its scheduled kernels run faster, found by measurement
(``benchmarks/cpu_rewrites.py`` times both sides of each rule through one schedule database).

A 1x1 convolution is a matrix product over channels. TVM's llvm schedules run the product form
faster than the convolution's loops (the convolution's schedule space tiles four output axes and
reduces over channels; the product's tiles two and vectorizes the pixel axis), and the reshapes
around it are views the virtual machine does not copy.
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


def cpu() -> list[Subst]:
    """Rewrites that pay on TVM's CPU backend (see the module's docstring)."""
    return [conv1x1_as_matmul()]
