"""TENSAT's own benchmark graphs, as its repository builds them, for like-for-like comparisons.

The zoo's networks (:mod:`gsl_eq.models.zoo`) are the published architectures as a TVM user
writes them: biases (folded batch norms), softmax and layer norm, weights shared across an RNN's
steps. TENSAT's experiments optimize other graphs, built by its Rust sources (BERT, NasRNN,
ResNeXt-50, NasNet-A) or loaded from TASO's serialized models (Inception-v3, SqueezeNet, VGG-19,
kept in ``tensat_data/``): no biases and no normalization, TASO's fused activation on each conv
(here the conv followed by that activation), BERT's attention without softmax whose layers all read
the same input, and NasRNN with fresh weights at every step. This module rebuilds those graphs
operator for operator, so that TENSAT's figures can be compared on TENSAT's inputs.

    tensat_model("bert")      # TENSAT's BERT: 8 layers, (64, 1024) activations
    tensat_squeezenet()       # TASO's SqueezeNet, from tensat_data/squeezenet.model

Padding follows TASO: ``same`` pads each side by half the total padding, rounded up, and gives
ceil(size / stride) outputs; ``valid`` pads nothing. Weights are drawn as
:meth:`Workload.from_expr` draws them, scaled to He-uniform in the convolutional networks (see
:func:`gsl_eq.models.zoo.he_uniform`) so that outputs depend on inputs without biases.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Callable, Sequence

import numpy as np
from tvm import relax

from ..errors import WorkloadError
from ..workload import Workload
from .blocks import check_heads, sized, var
from .zoo import he_uniform

R = relax.op

SAME, VALID = 0, 1  # TASO's padding modes
_ACTIVATIONS: dict[int, Callable[[relax.Expr], relax.Expr] | None] = {
    0: None, 1: R.sigmoid, 2: R.nn.relu, 3: R.tanh}  # TASO's activation modes


@dataclass(frozen=True)
class _Tensor:
    expr: relax.Expr
    shape: tuple[int, ...]


def _window(size: int, kernel: int, stride: int, padding: int) -> tuple[int, int]:
    """(padding per side, output size) of a conv or pool window under TASO's padding mode."""
    if padding == VALID:
        return 0, (size - kernel) // stride + 1
    if padding != SAME:
        raise WorkloadError(f"unknown TASO padding mode {padding} (0: same, 1: valid)")
    total = max(kernel - (stride if size % stride == 0 else size % stride), 0)
    pad = (total + 1) // 2
    out = (size + 2 * pad - kernel) // stride + 1
    assert out == -(-size // stride), (size, kernel, stride)
    return pad, out


class _Graph:
    """TASO's graph-building calls (TENSAT's GraphConverter), each emitting the Relax operators."""

    def __init__(self) -> None:
        self.inputs: list[str] = []
        self.weights = 0

    def input(self, *shape: int) -> _Tensor:
        name = "x" if not self.inputs else f"x{len(self.inputs)}"
        self.inputs.append(name)
        return _Tensor(var(name, *shape), tuple(shape))

    def weight(self, *shape: int) -> _Tensor:
        self.weights += 1
        return _Tensor(var(f"w{self.weights}", *shape), tuple(shape))

    def activation(self, x: _Tensor, mode: int) -> _Tensor:
        if mode not in _ACTIVATIONS:
            raise WorkloadError(f"unknown TASO activation mode {mode} (0: none, 1: sigmoid, 2: relu, 3: tanh)")
        act = _ACTIVATIONS[mode]
        return x if act is None else _Tensor(act(x.expr), x.shape)

    def conv2d(self, x: _Tensor, w: _Tensor, stride: tuple[int, int], padding: int, activation: int) -> _Tensor:
        n, c, h, width = x.shape
        out_ch, in_per_group, kh, kw = w.shape
        if c % in_per_group:
            raise WorkloadError(f"conv2d: {c} input channels do not divide into groups of {in_per_group}")
        (ph, oh), (pw, ow) = _window(h, kh, stride[0], padding), _window(width, kw, stride[1], padding)
        y = R.nn.conv2d(x.expr, w.expr, strides=stride, padding=(ph, pw, ph, pw), groups=c // in_per_group)
        return self.activation(_Tensor(y, (n, out_ch, oh, ow)), activation)

    def pool2d(self, kind: str, x: _Tensor, kernel: tuple[int, int], stride: tuple[int, int], padding: int) -> _Tensor:
        n, c, h, width = x.shape
        (ph, oh), (pw, ow) = _window(h, kernel[0], stride[0], padding), _window(width, kernel[1], stride[1], padding)
        pool = R.nn.max_pool2d if kind == "max" else R.nn.avg_pool2d
        return _Tensor(pool(x.expr, kernel, stride, padding=(ph, pw, ph, pw)), (n, c, oh, ow))

    def matmul(self, a: _Tensor, b: _Tensor) -> _Tensor:
        if a.shape[-1] != b.shape[-2]:
            raise WorkloadError(f"matmul: {a.shape} by {b.shape}")
        return _Tensor(R.matmul(a.expr, b.expr), a.shape[:-1] + b.shape[-1:])

    def elementwise(self, op: Callable[..., relax.Expr], a: _Tensor, b: _Tensor) -> _Tensor:
        if a.shape != b.shape:
            raise WorkloadError(f"element-wise op on {a.shape} and {b.shape}")
        return _Tensor(op(a.expr, b.expr), a.shape)

    def reshape(self, x: _Tensor, shape: Sequence[int]) -> _Tensor:
        if int(np.prod(shape)) != int(np.prod(x.shape)):
            raise WorkloadError(f"reshape of {x.shape} to {tuple(shape)}")
        return _Tensor(R.reshape(x.expr, tuple(shape)), tuple(shape))

    def transpose(self, x: _Tensor, perm: Sequence[int]) -> _Tensor:
        return _Tensor(R.permute_dims(x.expr, list(perm)), tuple(x.shape[p] for p in perm))

    def concat(self, axis: int, xs: Sequence[_Tensor]) -> _Tensor:
        shape = list(xs[0].shape)
        shape[axis] = sum(x.shape[axis] for x in xs)
        return _Tensor(R.concat([x.expr for x in xs], axis=axis), tuple(shape))

    def workload(self, outputs: Sequence[_Tensor], scale_weights: bool) -> Workload:
        expr = outputs[0].expr if len(outputs) == 1 else relax.Tuple([o.expr for o in outputs])
        wl = Workload.from_expr(expr, self.inputs)
        return he_uniform(wl) if scale_weights else wl


# --------------------------------------------------------------------------- graphs TENSAT builds in Rust


@sized
def tensat_bert(layers: int = 8, seq: int = 64, hidden: int = 1024, heads: int = 16) -> Workload:
    """TENSAT's BERT (src/bert.rs): a relu of the (seq, hidden) input, then ``layers`` attention blocks.

    Each block multiplies its input by four (hidden, hidden) weights: Q, K, V and a "linear" whose
    product is the next block's input. Q, K and V are split into heads, multiplied without softmax
    (q @ k, then @ v) and joined back. The outputs are every block's attention and the last input.

    Parameters
    ----------
    layers
        Attention blocks.
    seq
        Sequence length.
    hidden
        Model width; ``heads`` must divide it.
    heads
        Attention heads.
    """
    check_heads("tensat_bert", "hidden", hidden, heads)
    g = _Graph()
    x = g.activation(g.input(seq, hidden), 2)
    head = hidden // heads
    outputs = []
    for _ in range(layers):
        q, k, v = (g.matmul(x, g.weight(hidden, hidden)) for _ in range(3))
        q, k, v = (g.transpose(g.reshape(t, (seq, heads, head)), (1, 0, 2)) for t in (q, k, v))
        attention = g.matmul(g.matmul(q, k), v)
        outputs.append(g.reshape(g.transpose(attention, (1, 0, 2)), (seq, hidden)))
        x = g.matmul(x, g.weight(hidden, hidden))
    return g.workload([*outputs, x], scale_weights=False)


@sized
def tensat_nasrnn(steps: int = 5, hidden: int = 512) -> Workload:
    """TENSAT's NasRNN (src/nasrnn.rs): the NAS cell over ``steps`` (1, hidden) inputs, fresh weights at
    every step; the initial state is a parameter.

    A step computes eight x @ W + h @ U and mixes them with relu/sigmoid/tanh and add/multiply.

    Parameters
    ----------
    steps
        Time steps, each a runtime input.
    hidden
        The state's width.
    """
    g = _Graph()
    xs = [g.input(1, hidden) for _ in range(steps)]
    state = g.weight(1, hidden)
    add, mul = (lambda a, b: g.elementwise(R.add, a, b)), (lambda a, b: g.elementwise(R.multiply, a, b))
    relu, sigmoid, tanh = (lambda t, mode=mode: g.activation(t, mode) for mode in (2, 1, 3))
    for x in xs:
        t = [add(g.matmul(x, g.weight(hidden, hidden)), g.matmul(state, g.weight(hidden, hidden))) for _ in range(8)]
        m = [add(relu(t[0]), sigmoid(t[3])), add(sigmoid(t[1]), tanh(t[2])),
             mul(sigmoid(t[4]), tanh(t[5])), mul(sigmoid(t[6]), relu(t[7]))]
        m.append(add(sigmoid(m[1]), tanh(m[2])))
        m.append(mul(tanh(m[0]), tanh(m[3])))
        m.append(mul(tanh(m[4]), tanh(m[5])))
        state = tanh(m[6])
    return g.workload([state], scale_weights=False)


def _resnext_block(g: _Graph, x: _Tensor, stride: int, channels: int, groups: int) -> _Tensor:
    in_ch = x.shape[1]
    t = g.conv2d(x, g.weight(channels, in_ch, 1, 1), (1, 1), SAME, 2)
    t = g.conv2d(t, g.weight(channels, channels // groups, 3, 3), (stride, stride), SAME, 2)
    t = g.conv2d(t, g.weight(2 * channels, channels, 1, 1), (1, 1), SAME, 0)
    if stride > 1 or in_ch != 2 * channels:
        x = g.conv2d(x, g.weight(2 * channels, in_ch, 1, 1), (stride, stride), SAME, 2)
    return g.activation(g.elementwise(R.add, x, t), 2)


@sized
def tensat_resnext50(image_size: int = 224, blocks: Sequence[int] = (3, 4, 6, 3), groups: int = 32) -> Workload:
    """TENSAT's ResNeXt-50 (src/resnext50.rs): a 7x7 stride-2 conv, a max pool, then bottleneck blocks
    (1x1, grouped 3x3, 1x1 convs; a 1x1 conv on the shortcut where the shape changes), no classifier.

    Parameters
    ----------
    image_size
        The input image's height and width.
    blocks
        The bottleneck blocks of each stage (published: 3, 4, 6, 3).
    groups
        Groups of the 3x3 convs.
    """
    g = _Graph()
    x = g.conv2d(g.input(1, 3, image_size, image_size), g.weight(64, 3, 7, 7), (2, 2), SAME, 2)
    x = g.pool2d("max", x, (3, 3), (2, 2), SAME)
    for stage, count in enumerate(blocks):
        for b in range(count):
            x = _resnext_block(g, x, 2 if stage and not b else 1, 128 << stage, groups)
    return g.workload([x], scale_weights=True)


def _squeeze(g: _Graph, channels: int, x: _Tensor) -> _Tensor:
    return g.conv2d(x, g.weight(channels, x.shape[1], 1, 1), (1, 1), SAME, 2)


def _fit(g: _Graph, current: _Tensor, x: _Tensor) -> _Tensor:
    if x.shape[2] == current.shape[2]:
        return _squeeze(g, current.shape[1], x)
    return g.conv2d(x, g.weight(current.shape[1], x.shape[1], 3, 3), (2, 2), SAME, 2)


def _separable(g: _Graph, x: _Tensor, channels: int, kernel: int, stride: int) -> _Tensor:
    t = g.conv2d(x, g.weight(channels, x.shape[1] // channels, kernel, kernel), (stride, stride), SAME, 0)
    return g.conv2d(t, g.weight(channels, channels, 1, 1), (1, 1), SAME, 0)


def _normal_cell(g: _Graph, prev: _Tensor, cur: _Tensor, channels: int) -> _Tensor:
    cur = _squeeze(g, channels, cur)
    prev = _fit(g, cur, prev)
    avg = lambda t: g.pool2d("avg", t, (3, 3), (1, 1), SAME)  # noqa: E731
    sep = lambda t: _separable(g, t, channels, 3, 1)  # noqa: E731
    pairs = [(sep(cur), cur), (sep(prev), sep(cur)), (avg(cur), prev), (avg(prev), avg(prev)), (sep(prev), sep(prev))]
    return g.concat(1, [g.elementwise(R.add, a, b) for a, b in pairs])


def _reduction_cell(g: _Graph, prev: _Tensor, cur: _Tensor, channels: int) -> _Tensor:
    cur = _squeeze(g, channels, cur)
    prev = _fit(g, cur, prev)
    add = lambda a, b: g.elementwise(R.add, a, b)  # noqa: E731
    out = [add(_separable(g, prev, channels, 7, 2), _separable(g, cur, channels, 5, 2))]
    out.append(add(g.pool2d("max", cur, (3, 3), (2, 2), SAME), _separable(g, prev, channels, 7, 2)))
    out.append(add(g.pool2d("avg", cur, (3, 3), (2, 2), SAME), _separable(g, prev, channels, 5, 2)))
    out.append(add(g.pool2d("max", cur, (3, 3), (2, 2), SAME), _separable(g, out[0], channels, 3, 1)))
    out.append(add(g.pool2d("avg", out[0], (3, 3), (1, 1), SAME), out[1]))
    return g.concat(1, out)


@sized
def tensat_nasnet_a(image_size: int = 224, stages: int = 3, cells: int = 5, channels: int = 128) -> Workload:
    """TENSAT's NasNet-A (src/nasneta.rs): a 7x7 stride-2 conv and a max pool, then ``stages`` times
    ``cells`` normal cells and a reduction cell (separable convs as a grouped conv and a 1x1 conv).

    Parameters
    ----------
    image_size
        The input image's height and width.
    stages
        Stages, each of normal cells and a reduction cell.
    cells
        Normal cells in a stage.
    channels
        The first stage's channels per branch, doubled by each reduction cell.
    """
    g = _Graph()
    x = g.conv2d(g.input(1, 3, image_size, image_size), g.weight(64, 3, 7, 7), (2, 2), SAME, 2)
    x = g.pool2d("max", x, (3, 3), (2, 2), SAME)
    for _ in range(stages):
        prev = cur = x
        for _ in range(cells):
            prev, cur = cur, _normal_cell(g, prev, cur, channels)
        channels *= 2
        x = _reduction_cell(g, prev, cur, channels)
    return g.workload([x], scale_weights=True)


# --------------------------------------------------------------------------- graphs TENSAT loads from TASO's files

#: TASO's operator numbers (its OpType) that TENSAT's model loader reads.
_INPUT, _WEIGHT, _CONV2D, _DROPOUT, _MAX_POOL, _AVG_POOL, _RELU, _SIGMOID, _TANH = 0, 1, 3, 4, 6, 7, 8, 9, 10
_CONCAT, _RESHAPE, _TRANSPOSE, _ADD, _MUL, _MATMUL = 12, 14, 15, 16, 17, 18


def load_taso_model(text: str, scale_weights: bool = True, source: str = "<text>") -> Workload:
    """A workload from a model serialized by TASO (the format of TENSAT's ``model/*.model``).

    Each node is four lines: its id; its TASO operator number; its inputs as ``id:output``
    separated by commas; its integer parameters. As TENSAT's loader does, a pool's activation is
    not read, a dropout is the identity, and the graph's output is every node no other reads.
    Parameters
    ----------
    text
        The file's text.
    scale_weights
        Weights He-uniform (:func:`gsl_eq.models.zoo.he_uniform`), as a relu network without
        biases needs for its output to depend on its input.
    source
        What names the text in error messages.

    Raises
    ------
    WorkloadError
        A text not of 4-line nodes, a node reading one not defined before it, an operator
        TENSAT's loader does not read, or parameters that make no valid node.
    """
    lines = text.split()
    if len(lines) % 4:
        raise WorkloadError(f"{source}: {len(lines)} lines, not a whole number of 4-line nodes")
    g, nodes, read, computed = _Graph(), {}, set(), []
    for at in range(0, len(lines), 4):
        guid, op, deps = lines[at], int(lines[at + 1]), lines[at + 2].split(",")
        where = f"{source}: node {guid} (line {at + 1})"
        try:
            params = [int(p) for p in lines[at + 3].split(",")]
            args = [] if op in (_INPUT, _WEIGHT) else [nodes[d.split(":")[0]] for d in deps]
            nodes[guid] = _taso_node(g, op, args, params)
        except KeyError as missing:
            raise WorkloadError(f"{where} reads node {missing}, not defined before it") from None
        except (WorkloadError, IndexError, ValueError) as err:
            raise WorkloadError(f"{where}: {err}") from None
        if nodes[guid] is None:
            raise WorkloadError(f"{where}: TASO operator {op} is not one TENSAT's loader reads")
        if op not in (_INPUT, _WEIGHT):
            computed.append(guid)
            read.update(d.split(":")[0] for d in deps)
    outputs = [nodes[guid] for guid in computed if guid not in read]
    return g.workload(outputs, scale_weights)


def _taso_node(g: _Graph, op: int, args: list[_Tensor], p: list[int]) -> _Tensor | None:
    if op == _INPUT:
        return g.input(*p)
    if op == _WEIGHT:
        return g.weight(*p)
    if op == _CONV2D:
        return g.conv2d(args[0], args[1], (p[8], p[9]), p[10], p[11])
    if op in (_MAX_POOL, _AVG_POOL):
        return g.pool2d("max" if op == _MAX_POOL else "avg", args[0], (p[5], p[6]), (p[7], p[8]), p[9])
    if op == _DROPOUT:
        return args[0]
    if op in (_RELU, _SIGMOID, _TANH):
        return g.activation(args[0], {_RELU: 2, _SIGMOID: 1, _TANH: 3}[op])
    if op in (_ADD, _MUL):
        return g.elementwise(R.add if op == _ADD else R.multiply, args[0], args[1])
    if op == _MATMUL:
        return g.matmul(args[0], args[1])
    if op == _CONCAT:
        return g.concat(p[0], args)
    if op == _RESHAPE:
        return g.reshape(args[0], p)
    if op == _TRANSPOSE:
        return g.transpose(args[0], p[1:1 + p[0]])
    return None


def _packaged(name: str) -> Workload:
    text = resources.files(__package__).joinpath("tensat_data", name).read_text()
    return load_taso_model(text, source=f"tensat_data/{name}")


def tensat_inception_v3() -> Workload:
    """TASO's Inception-v3 at 299x299 as TENSAT loads it (tensat_data/inceptionv3.model): convs with
    fused relus, pools and concats, no classifier."""
    return _packaged("inceptionv3.model")


def tensat_squeezenet() -> Workload:
    """TASO's SqueezeNet 1.0-style network at 224x224 as TENSAT loads it (tensat_data/squeezenet.model)."""
    return _packaged("squeezenet.model")


def tensat_vgg19() -> Workload:
    """TASO's VGG at 224x224 as TENSAT loads it (tensat_data/vgg.model): 16 3x3 convs with relus, five
    max pools, three fully connected layers as matmuls by transposed weights."""
    return _packaged("vgg.model")


TENSAT_MODELS: dict[str, Callable[[], Workload]] = {
    "bert": tensat_bert, "nasrnn": tensat_nasrnn, "resnext50": tensat_resnext50, "nasnet_a": tensat_nasnet_a,
    "inception_v3": tensat_inception_v3, "squeezenet": tensat_squeezenet, "vgg19": tensat_vgg19,
}


def tensat_model(name: str) -> Workload:
    """TENSAT's graph of ``name`` at its published size, to compare with TENSAT's results.

    Parameters
    ----------
    name
        A zoo name: bert, nasrnn, resnext50, nasnet_a, inception_v3, squeezenet, vgg19 (any case).

    Raises
    ------
    WorkloadError
        A model TENSAT does not have.
    """
    try:
        return TENSAT_MODELS[name.lower()]()
    except KeyError:
        raise WorkloadError(f"TENSAT has no model {name!r}; it has {', '.join(TENSAT_MODELS)}") from None
