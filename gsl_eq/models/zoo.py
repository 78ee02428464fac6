"""The model zoo: the seven networks TASO and TENSAT report on, plus ResNet-50 and MobileNet-V2.

Every model is a function returning a :class:`~gsl_eq.Workload` with batch 1,
one runtime input ``x`` and deterministic random parameters (see
:meth:`Workload.from_expr`; the CNNs' weights are scaled to He-uniform so their
outputs depend on their inputs). Keyword arguments are the size knobs; their
defaults are the published sizes, so ``zoo_model("resnet50")`` is the real
network and ``resnet50(image_size=32, layers=(1, 1, 1, 1))`` a small one for
quick tests. Images are NCHW, kernels OIHW.

Normalization. TASO's and TENSAT's benchmark graphs carry no batch norm: at
inference it folds into the preceding convolution, which leaves a bias. The
convolutional networks of that benchmark set (ResNeXt-50, NasNet-A,
Inception-v3) therefore default to conv + bias, and take ``batch_norm=True``
for the published training-time form (conv + batch_norm). ResNet-50 defaults to
batch norm, as does MobileNet-V2; VGG-19 and SqueezeNet never had any and always use biases.
Dropout is omitted everywhere (identity at inference).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from tvm import relax

from ..errors import WorkloadError
from ..workload import Workload
from .blocks import bn, check_heads, conv, dense, encoder_layer, sized, var

R = relax.op

Kernel = int | tuple[int, int]


# --------------------------------------------------------------------------- helpers


def _norm(x: relax.Expr, name: str, ch: int, batch_norm: bool) -> relax.Expr:
    """Inference-mode batch norm over channels, or (its folded form) a per-channel bias."""
    return bn(x, name, ch) if batch_norm else R.add(x, var(f"{name}_b", 1, ch, 1, 1))


def _unit(
    x: relax.Expr,
    name: str,
    in_ch: int,
    out_ch: int,
    kernel: Kernel = 1,
    stride: int = 1,
    padding: int | None = None,
    groups: int = 1,
    *,
    batch_norm: bool,
    relu: bool = True,
) -> relax.Expr:
    """conv2d -> batch norm or bias -> relu (optional).

    A square kernel with "same" padding (``kernel // 2``) is :func:`blocks.conv`;
    a ``(kh, kw)`` kernel is padded by ``(kh // 2, kw // 2)``; ``padding`` overrides
    either (``padding=0``: a "valid" convolution).
    """
    if isinstance(kernel, int) and padding is None:
        h = conv(x, name, in_ch, out_ch, kernel, stride, groups)
    else:
        kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
        pad = (kh // 2, kw // 2) if padding is None else padding
        w = var(f"{name}_w", out_ch, in_ch // groups, kh, kw)
        h = R.nn.conv2d(x, w, strides=stride, padding=pad, groups=groups)
    h = _norm(h, name, out_ch, batch_norm)
    return R.nn.relu(h) if relu else h


# One conv unit of a chain: (out_ch, kernel) or (out_ch, kernel, stride) or (out_ch, kernel, stride, padding).
Layer = tuple[int, Kernel] | tuple[int, Kernel, int] | tuple[int, Kernel, int, int]


def _chain(x: relax.Expr, name: str, in_ch: int, layers: Sequence[Layer], batch_norm: bool) -> tuple[relax.Expr, int]:
    """Conv units (with relu) in sequence, named ``{name}{i}``; returns the output and its channels."""
    for i, (out_ch, kernel, *rest) in enumerate(layers):
        x = _unit(x, f"{name}{i}", in_ch, out_ch, kernel, *rest, batch_norm=batch_norm)
        in_ch = out_ch
    return x, in_ch


def _max_pool(x: relax.Expr, k: int = 3, stride: int = 2, padding: int = 0, ceil_mode: bool = False) -> relax.Expr:
    return R.nn.max_pool2d(x, k, strides=stride, padding=padding, ceil_mode=ceil_mode)


def _avg_pool(x: relax.Expr, k: int = 3, stride: int = 1) -> relax.Expr:
    """Average pooling with "same" padding (padded positions not counted)."""
    return R.nn.avg_pool2d(x, k, strides=stride, padding=k // 2)


def _classifier(x: relax.Expr, ch: int, classes: int) -> relax.Expr:
    """Global average pooling, flatten, fully connected layer: (1, ch, h, w) -> (1, classes)."""
    pooled = R.reshape(R.nn.adaptive_avg_pool2d(x, 1), (1, ch))
    return dense(pooled, "fc", ch, classes)


def _image(image_size: int) -> relax.Var:
    return var("x", 1, 3, image_size, image_size)


def _cnn_workload(expr: relax.Expr) -> Workload:
    """The workload of a CNN's expression (input ``x``), its conv and dense weights He-uniform."""
    return he_uniform(Workload.from_expr(expr, {"x"}), lambda name, value: name.endswith("_w") and value.ndim >= 2)


def he_uniform(wl: Workload,
               is_weight: Callable[[str, np.ndarray], bool] = lambda name, value: value.ndim >= 2) -> Workload:
    """``wl`` with the parameters ``is_weight`` selects (by default every one of rank >= 2) scaled up by sqrt(6).

    :meth:`Workload.from_expr` draws weights from U[-b, b), b = 1/sqrt(fan_in),
    which shrinks the variance of a relu network's signal six-fold per layer:
    after tens of layers the output no longer depends on the input, only on the
    biases, and comparing outputs checks nothing. Scaling gives He-uniform
    weights, b = sqrt(6/fan_in), which keep the signal's variance through relus.

    Parameters
    ----------
    wl
        The workload; it is left as it is.
    is_weight
        Which parameters to scale, from their name and value.
    """
    scale = np.float32(np.sqrt(6.0))
    return Workload(wl.mod, {k: v * scale if is_weight(k, v) else v for k, v in wl.params.items()})


def _conv_out(size: int, k: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - k) // stride + 1


# --------------------------------------------------------------------------- transformers and RNNs


@sized
def bert(layers: int = 8, seq: int = 64, hidden: int = 1024, heads: int = 16, ffn: int = 4096) -> Workload:
    """BERT encoder stack as in TASO/TENSAT's BERT benchmark: 8 layers, sequence 64, hidden 1024, 16 heads.

    Each layer is BERT's post-norm encoder layer (:func:`blocks.encoder_layer`):
    Q, K and V projections of the same input (dense = matmul + bias), scaled
    dot-product attention with softmax, output projection, residual + layer norm,
    then a GELU feed-forward of width ``ffn`` (BERT-large: 4096) with residual +
    layer norm. The input ``x`` is the (1, seq, hidden) embedded sequence.

    Parameters
    ----------
    layers
        Encoder layers.
    seq
        Sequence length.
    hidden
        Model width; ``heads`` must divide it.
    heads
        Attention heads.
    ffn
        The feed-forward layer's width.
    """
    check_heads("bert", "hidden", hidden, heads)
    h = var("x", 1, seq, hidden)
    for k in range(layers):
        h = encoder_layer(h, f"l{k}_", seq, hidden, heads, ffn)
    return Workload.from_expr(h, {"x"})


# Layer 1 of the NAS cell (Zoph & Le 2017, the recurrent cell found on Penn Treebank):
# for each of its 8 branches, how x @ W_i and h @ U_i are combined, and the activation.
_NAS_BRANCHES: list[tuple[Callable[..., relax.Expr], Callable[..., relax.Expr]]] = [
    (R.add, R.sigmoid), (R.add, R.nn.relu), (R.add, R.sigmoid), (R.multiply, R.nn.relu),
    (R.add, R.tanh), (R.add, R.sigmoid), (R.add, R.tanh), (R.add, R.sigmoid),
]


@sized
def nasrnn(steps: int = 5, hidden: int = 512) -> Workload:
    """The NAS recurrent cell (Zoph & Le 2017), unrolled over ``steps`` time steps as in TASO/TENSAT's NasRNN:
    5 steps, hidden size 512.

    At each step, 8 branches each multiply the step input and the hidden state by
    their own weights (16 matmuls: 8 of ``x_t``, 8 of ``h``) and combine them;
    the cell tree then mixes the branches with element-wise add/multiply and
    sigmoid/tanh/relu, injecting the memory cell ``c``:

        a = tanh(tanh(l0 * l1) + c);  c' = a * tanh(l2 + l3)
        h' = tanh(c' * tanh(tanh(l4 * l5) + sigmoid(l6 + l7)))

    Weights are shared across steps. ``x`` is (steps, hidden), one row per step;
    the initial states ``h0`` and ``c0`` are parameters. Returns the last ``h``.

    Parameters
    ----------
    steps
        Time steps unrolled.
    hidden
        The hidden state's (and each step input's) width.
    """
    x = var("x", steps, hidden)
    h, c = var("h0", 1, hidden), var("c0", 1, hidden)
    wx = [var(f"wx{i}", hidden, hidden) for i in range(len(_NAS_BRANCHES))]
    wh = [var(f"wh{i}", hidden, hidden) for i in range(len(_NAS_BRANCHES))]
    rows = R.split(x, steps, axis=0)
    for t in range(steps):
        xt = relax.TupleGetItem(rows, t) if steps > 1 else x  # TVM types a 1-way split as a tensor
        br = [act(combine(R.matmul(xt, u), R.matmul(h, v))) for (combine, act), u, v in zip(_NAS_BRANCHES, wx, wh)]
        a = R.tanh(R.add(R.tanh(R.multiply(br[0], br[1])), c))
        c = R.multiply(a, R.tanh(R.add(br[2], br[3])))
        b = R.tanh(R.add(R.tanh(R.multiply(br[4], br[5])), R.sigmoid(R.add(br[6], br[7]))))
        h = R.tanh(R.multiply(c, b))
    return Workload.from_expr(h, {"x"})


# --------------------------------------------------------------------------- residual networks


def _bottleneck_network(
    image_size: int, layers: Sequence[int], width: int, groups: int, batch_norm: bool, classes: int
) -> relax.Expr:
    """ResNet/ResNeXt: 7x7/2 stem, 3x3/2 max pool, bottleneck stages, classifier.

    Stage ``s`` has ``layers[s]`` bottlenecks 1x1 -> 3x3 (``groups`` groups) -> 1x1
    of inner width ``width * 2**s`` and output ``256 * 2**s``; the first block of
    stages 2-4 downsamples with a stride-2 3x3 conv, and the first block of every
    stage has a 1x1 projection shortcut.
    """
    h = _unit(_image(image_size), "stem", 3, 64, 7, stride=2, batch_norm=batch_norm)
    h = _max_pool(h, padding=1)
    in_ch = 64
    for s, blocks in enumerate(layers):
        mid, out = width * 2**s, 256 * 2**s
        for b in range(blocks):
            name, stride = f"s{s + 1}b{b}_", 2 if b == 0 and s > 0 else 1
            y = _unit(h, name + "c1", in_ch, mid, batch_norm=batch_norm)
            y = _unit(y, name + "c2", mid, mid, 3, stride, groups=groups, batch_norm=batch_norm)
            y = _unit(y, name + "c3", mid, out, batch_norm=batch_norm, relu=False)
            if b == 0:
                h = _unit(h, name + "proj", in_ch, out, 1, stride, batch_norm=batch_norm, relu=False)
            h = R.nn.relu(R.add(y, h))
            in_ch = out
    return _classifier(h, in_ch, classes)


@sized
def resnet50(
    image_size: int = 224, layers: Sequence[int] = (3, 4, 6, 3), batch_norm: bool = True, classes: int = 1000
) -> Workload:
    """ResNet-50 (He et al. 2016) at 224x224: bottleneck stages [3, 4, 6, 3] of widths 64-512, 53 convs.

    Each conv is followed by batch norm (inference mode) and relu; downsampling
    is on the 3x3 conv of each stage's first block (the "v1.5" placement).

    Parameters
    ----------
    image_size
        The input image's height and width.
    layers
        The bottleneck blocks of each stage (published: 3, 4, 6, 3).
    batch_norm
        Conv + batch norm (inference mode) where True, conv + bias where False.
    classes
        The classifier's outputs.
    """
    return _cnn_workload(_bottleneck_network(image_size, layers, 64, 1, batch_norm, classes))


@sized
def resnext50(
    image_size: int = 224,
    layers: Sequence[int] = (3, 4, 6, 3),
    groups: int = 32,
    group_width: int = 4,
    batch_norm: bool = False,
    classes: int = 1000,
) -> Workload:
    """ResNeXt-50 32x4d (Xie et al. 2017) at 224x224, as in TASO/TENSAT: ResNet-50's layout with
    grouped 3x3 convs (32 groups of width 4, so inner widths 128-1024).

    Convs carry a bias instead of batch norm unless ``batch_norm`` (see the module docstring).

    Parameters
    ----------
    image_size
        The input image's height and width.
    layers
        The bottleneck blocks of each stage (published: 3, 4, 6, 3).
    groups
        Groups of the 3x3 convs.
    group_width
        Channels per group in the first stage (doubling at each stage).
    batch_norm
        Conv + batch norm (inference mode) where True, conv + bias where False.
    classes
        The classifier's outputs.
    """
    expr = _bottleneck_network(image_size, layers, groups * group_width, groups, batch_norm, classes)
    return _cnn_workload(expr)


# --------------------------------------------------------------------------- MobileNet-V2

#: MobileNet-V2's inverted-residual stages: (expansion, output channels, blocks, first block's stride).
_MOBILENET_V2_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                        (6, 320, 1, 1))


def _relu6(x: relax.Expr) -> relax.Expr:
    return R.clip(x, 0.0, 6.0)


@sized
def mobilenet_v2(
    image_size: int = 224, blocks: Sequence[int] = (1, 2, 3, 4, 3, 3, 1), batch_norm: bool = True, classes: int = 1000
) -> Workload:
    """MobileNet-V2 (Sandler et al. 2018) at 224x224: a 3x3/2 stem of 32 channels, seven stages of
    inverted residuals (1x1 expansion -> 3x3 depthwise -> linear 1x1 projection, a shortcut where
    shapes allow), a 1x1 conv to 1,280 channels and the classifier; 52 convs, relu6 activations.

    Parameters
    ----------
    image_size
        The input image's height and width.
    blocks
        The blocks of each of the seven stages (published: 1, 2, 3, 4, 3, 3, 1).
    batch_norm
        Conv + batch norm (inference mode) where True, conv + bias where False.
    classes
        The classifier's outputs.

    Raises
    ------
    WorkloadError
        ``blocks`` not of seven stages.
    """
    if len(blocks) != len(_MOBILENET_V2_STAGES):
        raise WorkloadError(f"mobilenet_v2 has {len(_MOBILENET_V2_STAGES)} stages; blocks={tuple(blocks)} gives "
                            f"{len(blocks)}")

    def unit(x: relax.Expr, name: str, in_ch: int, out_ch: int, k: int = 1, stride: int = 1, groups: int = 1,
             act: bool = True) -> relax.Expr:
        y = _norm(conv(x, name, in_ch, out_ch, k, stride, groups), name, out_ch, batch_norm)
        return _relu6(y) if act else y

    h, in_ch = unit(_image(image_size), "stem", 3, 32, 3, 2), 32
    for s, ((expansion, out_ch, _, stride), count) in enumerate(zip(_MOBILENET_V2_STAGES, blocks)):
        for b in range(count):
            name, mid = f"s{s + 1}b{b}_", in_ch * expansion
            y = h if expansion == 1 else unit(h, name + "expand", in_ch, mid)
            y = unit(y, name + "dw", mid, mid, 3, stride if b == 0 else 1, groups=mid)
            y = unit(y, name + "project", mid, out_ch, act=False)
            h = R.add(h, y) if b > 0 or (stride == 1 and in_ch == out_ch) else y
            in_ch = out_ch
    h = unit(h, "head", in_ch, 1280)
    return _cnn_workload(_classifier(h, 1280, classes))


# --------------------------------------------------------------------------- NasNet-A


def _sep_conv(x: relax.Expr, name: str, ch: int, k: int, stride: int, batch_norm: bool) -> relax.Expr:
    """NasNet's separable conv, applied twice: relu -> depthwise kxk -> pointwise 1x1 -> norm."""
    for rep in range(2):
        x = conv(R.nn.relu(x), f"{name}_{rep}dw", ch, ch, k, stride if rep == 0 else 1, groups=ch)
        x = _norm(conv(x, f"{name}_{rep}pw", ch, ch), f"{name}_{rep}pw", ch, batch_norm)
    return x


def _cell_inputs(
    cur: tuple[relax.Expr, int, int], prev: tuple[relax.Expr, int, int], name: str, filters: int, batch_norm: bool
) -> tuple[relax.Expr, relax.Expr]:
    """Bring both cell inputs, given as (value, channels, size), to ``filters`` channels at
    ``cur``'s size: relu -> 1x1 conv -> norm, strided when ``prev`` is twice as large."""

    def adjust(t: tuple[relax.Expr, int, int], tag: str) -> relax.Expr:
        value, ch, size = t
        stride = 2 if size > cur[2] else 1
        return _unit(R.nn.relu(value), f"{name}{tag}", ch, filters, 1, stride, batch_norm=batch_norm, relu=False)

    return adjust(cur, "adj_h"), adjust(prev, "adj_p")


def _normal_cell(h: relax.Expr, p: relax.Expr, name: str, f: int, batch_norm: bool) -> relax.Expr:
    """NasNet-A normal cell (Zoph et al. 2018, Fig. 4): five pairwise sums, concatenated with ``p``: 6f channels."""

    def sep(t: relax.Expr, k: int, tag: str) -> relax.Expr:
        return _sep_conv(t, f"{name}{tag}", f, k, 1, batch_norm)

    pooled_p = _avg_pool(p)
    blocks = [
        R.add(sep(h, 3, "b0h"), h),
        R.add(sep(p, 3, "b1p"), sep(h, 5, "b1h")),
        R.add(_avg_pool(h), p),
        R.add(pooled_p, pooled_p),
        R.add(sep(p, 5, "b4p5"), sep(p, 3, "b4p3")),
    ]
    return R.concat([p, *blocks], axis=1)


def _reduction_cell(h: relax.Expr, p: relax.Expr, name: str, f: int, batch_norm: bool) -> relax.Expr:
    """NasNet-A reduction cell (Zoph et al. 2018, Fig. 4): halves the size; 4f channels."""

    def sep(t: relax.Expr, k: int, stride: int, tag: str) -> relax.Expr:
        return _sep_conv(t, f"{name}{tag}", f, k, stride, batch_norm)

    max_h = _max_pool(h, padding=1)
    b0 = R.add(sep(p, 7, 2, "b0p"), sep(h, 5, 2, "b0h"))
    b1 = R.add(max_h, sep(p, 7, 2, "b1p"))
    b2 = R.add(R.nn.avg_pool2d(h, 3, strides=2, padding=1), sep(p, 5, 2, "b2p"))
    b3 = R.add(max_h, sep(b0, 3, 1, "b3"))
    b4 = R.add(_avg_pool(b0), b1)
    return R.concat([b1, b2, b3, b4], axis=1)


@sized
def nasnet_a(
    image_size: int = 224, cells: int = 4, filters: int = 44, batch_norm: bool = False, classes: int = 1000
) -> Workload:
    """NASNet-A Mobile, "4 @ 1056" (Zoph et al. 2018), at 224x224.

    A 3x3/2 stem conv (32 channels), two reduction cells as stem (``filters/4``
    and ``filters/2`` channels), then three stacks of ``cells`` normal cells with
    ``filters``, ``2*filters`` and ``4*filters`` channels per branch, separated by
    reduction cells; the last cell outputs ``24*filters`` = 1056 channels.
    Separable convs are applied twice (relu, depthwise, pointwise, norm), as
    published. Simplification: when a cell's previous input is twice as large as
    its current one, it is brought down by a strided 1x1 conv instead of
    NASNet's two-path factorized reduction.

    Parameters
    ----------
    image_size
        The input image's height and width.
    cells
        Normal cells in each of the three stacks.
    filters
        Channels per branch in the first stack; at least 4.
    batch_norm
        Conv + batch norm (inference mode) where True, conv + bias where False.
    classes
        The classifier's outputs.
    """
    if filters < 4:
        raise WorkloadError(f"nasnet_a needs filters >= 4 (the stem's first reduction cell has filters / 4), got {filters}")
    x = _image(image_size)
    size = _conv_out(image_size, 3, 2, 1)
    stem = (_unit(x, "stem", 3, 32, 3, 2, batch_norm=batch_norm, relu=False), 32, size)
    prev, cur = stem, stem
    plan = [("reduce", filters // 4), ("reduce", filters // 2)]
    for stack in range(3):
        if stack > 0:
            plan.append(("reduce", filters * 2**stack))
        plan += [("normal", filters * 2**stack)] * cells
    for i, (kind, f) in enumerate(plan):
        name = f"cell{i}_"
        h, p = _cell_inputs(cur, prev, name, f, batch_norm)
        if kind == "reduce":
            out = (_reduction_cell(h, p, name, f, batch_norm), 4 * f, _conv_out(cur[2], 3, 2, 1))
        else:
            out = (_normal_cell(h, p, name, f, batch_norm), 6 * f, cur[2])
        prev, cur = cur, out
    return _cnn_workload(_classifier(R.nn.relu(cur[0]), cur[1], classes))


# --------------------------------------------------------------------------- Inception-v3


def _inception_35(x: relax.Expr, name: str, in_ch: int, pool_ch: int, batch_norm: bool) -> tuple[relax.Expr, int]:
    """35x35 module (Szegedy et al. 2016, Fig. 5; the 5x5 branch kept as in the released model)."""
    b1, c1 = _chain(x, f"{name}b1_", in_ch, [(64, 1)], batch_norm)
    b2, c2 = _chain(x, f"{name}b2_", in_ch, [(48, 1), (64, 5)], batch_norm)
    b3, c3 = _chain(x, f"{name}b3_", in_ch, [(64, 1), (96, 3), (96, 3)], batch_norm)
    b4, c4 = _chain(_avg_pool(x), f"{name}b4_", in_ch, [(pool_ch, 1)], batch_norm)
    return R.concat([b1, b2, b3, b4], axis=1), c1 + c2 + c3 + c4


def _inception_17(x: relax.Expr, name: str, in_ch: int, c7: int, batch_norm: bool) -> tuple[relax.Expr, int]:
    """17x17 module with 7x7 convs factorized into 1x7 and 7x1 (Fig. 6): 768 channels out."""
    b1, _ = _chain(x, f"{name}b1_", in_ch, [(192, 1)], batch_norm)
    b2, _ = _chain(x, f"{name}b2_", in_ch, [(c7, 1), (c7, (1, 7)), (192, (7, 1))], batch_norm)
    b3, _ = _chain(
        x, f"{name}b3_", in_ch, [(c7, 1), (c7, (7, 1)), (c7, (1, 7)), (c7, (7, 1)), (192, (1, 7))], batch_norm
    )
    b4, _ = _chain(_avg_pool(x), f"{name}b4_", in_ch, [(192, 1)], batch_norm)
    return R.concat([b1, b2, b3, b4], axis=1), 768


def _inception_8(x: relax.Expr, name: str, in_ch: int, batch_norm: bool) -> tuple[relax.Expr, int]:
    """8x8 module with expanded filter banks (Fig. 7): the 3x3 outputs split into parallel 1x3 and 3x1 convs."""

    def fork(t: relax.Expr, tag: str, ch: int) -> list[relax.Expr]:
        return [
            _unit(t, f"{name}{tag}_{kh}x{kw}", ch, 384, (kh, kw), batch_norm=batch_norm) for kh, kw in ((1, 3), (3, 1))
        ]

    b1, _ = _chain(x, f"{name}b1_", in_ch, [(320, 1)], batch_norm)
    b2, c2 = _chain(x, f"{name}b2_", in_ch, [(384, 1)], batch_norm)
    b3, c3 = _chain(x, f"{name}b3_", in_ch, [(448, 1), (384, 3)], batch_norm)
    b4, _ = _chain(_avg_pool(x), f"{name}b4_", in_ch, [(192, 1)], batch_norm)
    return R.concat([b1, *fork(b2, "b2", c2), *fork(b3, "b3", c3), b4], axis=1), 2048


def _grid_reduction(
    x: relax.Expr, name: str, in_ch: int, branches: list[list[Layer]], batch_norm: bool
) -> tuple[relax.Expr, int]:
    """Grid-size reduction (Fig. 10): conv branches ending in a valid stride-2 conv, beside a 3x3/2 max pool."""
    convs = [_chain(x, f"{name}b{i}_", in_ch, layers, batch_norm) for i, layers in enumerate(branches)]
    return R.concat([out for out, _ in convs] + [_max_pool(x)], axis=1), sum(ch for _, ch in convs) + in_ch


@sized
def inception_v3(
    image_size: int = 299, modules: Sequence[int] = (3, 4, 2), batch_norm: bool = False, classes: int = 1000
) -> Workload:
    """Inception-v3 (Szegedy et al. 2016) at 299x299, as released (94 convs, no auxiliary head).

    Stem of five convs (three valid) and two max pools down to 35x35x192;
    ``modules[0]`` 35x35 modules, a grid reduction to 17x17x768, ``modules[1]``
    17x17 modules (1x7/7x1 factorized, 128/160/160/192 inner channels), a grid
    reduction to 8x8x1280, ``modules[2]`` 8x8 modules (2048 channels), global
    average pool and classifier. Convs carry a bias instead of batch norm unless
    ``batch_norm`` (TASO's Inception-v3 has none; see the module docstring).
    ``image_size`` must be at least 75.

    Parameters
    ----------
    image_size
        The input image's height and width.
    modules
        The 35x35, 17x17 and 8x8 modules.
    batch_norm
        Conv + batch norm (inference mode) where True, conv + bias where False.
    classes
        The classifier's outputs.
    """
    if image_size < 75:
        raise WorkloadError(f"inception_v3 needs image_size >= 75, got {image_size}")
    h, ch = _chain(_image(image_size), "stem_a", 3, [(32, 3, 2, 0), (32, 3, 1, 0), (64, 3)], batch_norm)
    h, ch = _chain(_max_pool(h), "stem_b", ch, [(80, 1), (192, 3, 1, 0)], batch_norm)
    h = _max_pool(h)
    for i in range(modules[0]):
        h, ch = _inception_35(h, f"a{i}_", ch, 32 if i == 0 else 64, batch_norm)
    h, ch = _grid_reduction(h, "ra_", ch, [[(384, 3, 2, 0)], [(64, 1), (96, 3), (96, 3, 2, 0)]], batch_norm)
    for i in range(modules[1]):
        c7 = 128 if i == 0 else 192 if i == modules[1] - 1 else 160
        h, ch = _inception_17(h, f"b{i}_", ch, c7, batch_norm)
    h, ch = _grid_reduction(
        h, "rb_", ch, [[(192, 1), (320, 3, 2, 0)], [(192, 1), (192, (1, 7)), (192, (7, 1)), (192, 3, 2, 0)]], batch_norm
    )
    for i in range(modules[2]):
        h, ch = _inception_8(h, f"c{i}_", ch, batch_norm)
    return _cnn_workload(_classifier(h, ch, classes))


# --------------------------------------------------------------------------- plain CNNs


def _fire(x: relax.Expr, name: str, in_ch: int, squeeze: int, expand: int) -> tuple[relax.Expr, int]:
    """SqueezeNet's fire module: 1x1 squeeze, then 1x1 and 3x3 expands concatenated."""
    s = _unit(x, f"{name}s", in_ch, squeeze, batch_norm=False)
    e1 = _unit(s, f"{name}e1", squeeze, expand, 1, batch_norm=False)
    e3 = _unit(s, f"{name}e3", squeeze, expand, 3, batch_norm=False)
    return R.concat([e1, e3], axis=1), 2 * expand


@sized
def squeezenet(image_size: int = 224, classes: int = 1000) -> Workload:
    """SqueezeNet 1.1 (Iandola et al. 2016, v1.1 release) at 224x224: a 3x3/2 conv, 8 fire modules
    (squeeze 16-64, expand 64-256) with 3x3/2 max pools (ceil mode) after conv1, fire3 and fire5,
    a 1x1 conv to ``classes`` channels with relu, global average pool. Convs carry biases.

    Parameters
    ----------
    image_size
        The input image's height and width.
    classes
        The classifier's outputs.
    """
    h = _max_pool(_unit(_image(image_size), "conv1", 3, 64, 3, 2, padding=0, batch_norm=False), ceil_mode=True)
    ch = 64
    for i, squeeze in enumerate([16, 16, 32, 32, 48, 48, 64, 64]):
        h, ch = _fire(h, f"fire{i + 2}_", ch, squeeze, 4 * squeeze)
        if i in (1, 3):
            h = _max_pool(h, ceil_mode=True)
    h = _unit(h, "conv10", ch, classes, batch_norm=False)
    return _cnn_workload(R.reshape(R.nn.adaptive_avg_pool2d(h, 1), (1, classes)))


# VGG-19 (configuration E): (channels, number of 3x3 convs) of each stage.
_VGG19_STAGES = [(64, 2), (128, 2), (256, 4), (512, 4), (512, 4)]


@sized
def vgg19(image_size: int = 224, fc: int = 4096, classes: int = 1000) -> Workload:
    """VGG-19 (Simonyan & Zisserman 2015, configuration E) at 224x224: 16 3x3 convs (+ bias, relu)
    in five stages of 64-512 channels, each closed by a 2x2/2 max pool, then three fully
    connected layers (``fc`` = 4096, 4096, ``classes``) on the flattened 512x7x7 features.

    Parameters
    ----------
    image_size
        The input image's height and width; at least 32 (five 2x2 pools).
    fc
        The width of the first two fully connected layers.
    classes
        The classifier's outputs.
    """
    if image_size < 2 ** len(_VGG19_STAGES):
        raise WorkloadError(f"vgg19 needs image_size >= {2 ** len(_VGG19_STAGES)} (five 2x2 pools), got {image_size}")
    h, ch = _image(image_size), 3
    for s, (width, convs) in enumerate(_VGG19_STAGES):
        h, ch = _chain(h, f"conv{s + 1}_", ch, [(width, 3)] * convs, False)
        h = _max_pool(h, 2, 2)
    size = image_size // 2 ** len(_VGG19_STAGES)
    h = R.reshape(h, (1, ch * size * size))
    h = R.nn.relu(dense(h, "fc6", ch * size * size, fc))
    h = R.nn.relu(dense(h, "fc7", fc, fc))
    return _cnn_workload(dense(h, "fc8", fc, classes))


# --------------------------------------------------------------------------- registry

ZOO: dict[str, Callable[..., Workload]] = {
    "bert": bert,
    "nasrnn": nasrnn,
    "resnext50": resnext50,
    "nasnet_a": nasnet_a,
    "inception_v3": inception_v3,
    "squeezenet": squeezenet,
    "vgg19": vgg19,
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
}


def zoo_model(name: str, **kwargs: object) -> Workload:
    """The zoo model ``name`` (case-insensitive), with size knobs ``kwargs``: what the command line
    and the benchmarks load a model by.

    Parameters
    ----------
    name
        A key of :data:`ZOO` (``"resnet50"``, ``"bert"``, ...).
    **kwargs
        The model function's size arguments (``zoo_model("bert", layers=2)``).

    Raises
    ------
    WorkloadError
        An unknown ``name``.
    """
    try:
        model = ZOO[name.lower()]
    except KeyError:
        raise WorkloadError(f"unknown model {name!r}; the zoo has {', '.join(ZOO)}") from None
    return model(**kwargs)
