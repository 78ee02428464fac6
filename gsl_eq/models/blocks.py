"""Small building blocks of well-known networks, as Relax expressions and Workloads.

Each ``*_block`` function returns a :class:`~gsl_eq.Workload` with random
parameters and the runtime input ``x``; they are the models the tests and the
demo use. The helpers (``conv``, ``bn``, ``dense``...) build Relax expressions
and name every parameter they create after the layer.
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable, TypeVar

from tvm import relax

from ..errors import WorkloadError
from ..graph.types import TensorType, TupleType
from ..workload import Workload

Build = TypeVar("Build", bound=Callable[..., Workload])


def sized(build: Build) -> Build:
    """A model constructor whose size arguments are checked, so that bad sizes raise a
    :class:`WorkloadError` naming the argument or the layer, not an error from inside TVM.

    An argument whose default is an int must be a positive int; one whose default is a tuple of
    ints, a sequence of non-negative ints (block counts, shapes). Sizes that pass but make no valid
    graph (an image shrunk to nothing by the network's strides, a width not dividing into groups)
    are named with the first layer whose output has no elements, or TVM's reason.
    """
    signature = inspect.signature(build)

    @functools.wraps(build)
    def checked(*args: object, **kwargs: object) -> Workload:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise WorkloadError(f"{build.__name__}: {error}; its arguments: {', '.join(signature.parameters)}") from None
        bound.apply_defaults()
        call = f"{build.__name__}({', '.join(f'{k}={v!r}' for k, v in bound.arguments.items())})"
        for name, value in bound.arguments.items():
            default = signature.parameters[name].default
            if isinstance(default, bool) or name == "seed":
                continue
            if isinstance(default, int) and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise WorkloadError(f"{build.__name__}: {name} must be a positive int; got {value!r}")
            if isinstance(default, tuple) and all(isinstance(d, int) for d in default) and (
                    not isinstance(value, (tuple, list))
                    or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in value)):
                raise WorkloadError(f"{build.__name__}: {name} must be a sequence of non-negative ints; got {value!r}")
        try:
            workload = build(*args, **kwargs)
        except WorkloadError as error:
            if str(error).startswith(build.__name__):
                raise
            raise WorkloadError(f"{call}: {error}") from None
        except (RuntimeError, ValueError, ZeroDivisionError, IndexError) as error:  # TVM's errors are RuntimeErrors
            reason = str(error).strip().splitlines()
            raise WorkloadError(f"{call} makes no valid graph: {reason[-1] if reason else type(error).__name__}") from None
        for node in workload.graph:
            empty = [t for t in _tensor_types(node.type) if any(d < 1 for d in t.shape)]
            if empty:
                where = node.name or node.op
                raise WorkloadError(f"{call}: the sizes are too small: {where} gives {empty[0]}")
        return workload

    return checked  # type: ignore[return-value]


def check_heads(model: str, width_name: str, width: int, heads: int) -> None:
    """A WorkloadError unless attention's ``width`` splits into ``heads`` heads of one size.

    Parameters
    ----------
    model
        The model's name, for the message.
    width_name
        The width argument's name, for the message.
    width, heads
        The width and the number of heads.
    """
    if width % heads:
        raise WorkloadError(f"{model}: {width_name} {width} must be a multiple of heads {heads} "
                            f"(each head takes {width_name} / heads)")


def _tensor_types(ty: object) -> list[TensorType]:
    if isinstance(ty, TupleType):
        return [t for field in ty.fields for t in _tensor_types(field)]
    return [ty] if isinstance(ty, TensorType) else []

R = relax.op


def var(name: str, *shape: int, dtype: str = "float32") -> relax.Var:
    return relax.Var(name, relax.TensorType(shape, dtype))


def conv(x: relax.Expr, name: str, in_ch: int, out_ch: int, k: int = 1, stride: int = 1, groups: int = 1) -> relax.Expr:
    w = var(f"{name}_w", out_ch, in_ch // groups, k, k)
    return R.nn.conv2d(x, w, strides=stride, padding=k // 2, groups=groups)


def bn(x: relax.Expr, name: str, ch: int) -> relax.Expr:
    stats = [var(f"{name}_{p}", ch) for p in ("gamma", "beta", "mean", "var")]
    return relax.TupleGetItem(R.nn.batch_norm(x, *stats, axis=1, training=False), 0)


def dense(x: relax.Expr, name: str, in_dim: int, out_dim: int) -> relax.Expr:
    return R.add(R.matmul(x, var(f"{name}_w", in_dim, out_dim)), var(f"{name}_b", out_dim))


def layer_norm(x: relax.Expr, name: str, dim: int) -> relax.Expr:
    return R.nn.layer_norm(x, var(f"{name}_gamma", dim), var(f"{name}_beta", dim), axes=[-1])


def diamond_conv() -> Workload:
    """The diamond of the README's first rule: ``conv2d(x, w1) + conv2d(x, w2)``, two 1x1 convs of one
    input summed, which :func:`gsl_eq.rules.conv.diamond_conv_add` folds into one conv.

    Returns
    -------
    Workload
        ``x`` of shape (2, 2, 4, 4) its runtime input; the kernels ``w1`` and ``w2`` its parameters.
    """
    x = var("x", 2, 2, 4, 4)
    y = R.add(R.nn.conv2d(x, var("w1", 4, 2, 1, 1)), R.nn.conv2d(x, var("w2", 4, 2, 1, 1)))
    return Workload.from_expr(y, {"x"})


@sized
def resnet_bottleneck(ch: int = 64, mid: int = 16, size: int = 8) -> Workload:
    """A ResNet-50 bottleneck: three conv + batch_norm (+ relu) and the identity shortcut.

    Parameters
    ----------
    ch
        The input's (and output's) channels.
    mid
        The inner channels.
    size
        The input's height and width.
    """
    x = var("x", 1, ch, size, size)
    h = R.nn.relu(bn(conv(x, "conv1", ch, mid), "bn1", mid))
    h = R.nn.relu(bn(conv(h, "conv2", mid, mid, k=3), "bn2", mid))
    h = bn(conv(h, "conv3", mid, ch), "bn3", ch)
    return Workload.from_expr(R.nn.relu(R.add(h, x)), {"x"})


def inception(x: relax.Expr, name: str, ch: int) -> relax.Expr:
    """Four parallel branches (1x1; 1x1-3x3; 1x1-5x5; pool-1x1) concatenated: 48 channels out."""
    b1 = R.nn.relu(conv(x, f"{name}b1", ch, 16))
    b2 = R.nn.relu(conv(R.nn.relu(conv(x, f"{name}b2a", ch, 8)), f"{name}b2b", 8, 16, k=3))
    b3 = R.nn.relu(conv(R.nn.relu(conv(x, f"{name}b3a", ch, 8)), f"{name}b3b", 8, 8, k=5))
    b4 = R.nn.relu(conv(R.nn.max_pool2d(x, 3, padding=1), f"{name}b4", ch, 8))
    return R.concat([b1, b2, b3, b4], axis=1)


@sized
def inception_block(ch: int = 32, size: int = 8) -> Workload:
    """An Inception-style block: four parallel branches, concatenated, then split in two (and the
    halves added).

    Parameters
    ----------
    ch
        The input's channels.
    size
        The input's height and width.
    """
    x = var("x", 1, ch, size, size)
    parts = R.split(inception(x, "", ch), 2, axis=1)
    y = R.add(relax.TupleGetItem(parts, 0), relax.TupleGetItem(parts, 1))
    return Workload.from_expr(y, {"x"})


@sized
def inception_network(blocks: int = 6, ch: int = 32, size: int = 16) -> Workload:
    """An Inception-style CNN: a stem conv, ``blocks`` inception blocks (pooling halfway), a classifier.

    Parameters
    ----------
    blocks
        Inception blocks.
    ch
        The stem's channels.
    size
        The (3-channel) input image's height and width.
    """
    x = var("x", 1, 3, size, size)
    h = R.nn.relu(conv(x, "stem", 3, ch, k=3))
    for k in range(blocks):
        h = inception(h, f"inc{k}_", ch if k == 0 else 48)
        if k == blocks // 2:
            h = R.nn.max_pool2d(h, 2, strides=2)
    pooled = R.reshape(R.mean(h, axis=[2, 3]), (1, 48))
    return Workload.from_expr(dense(pooled, "fc", 48, 10), {"x"})


def encoder_layer(x: relax.Expr, name: str, seq: int, dim: int, heads: int, ffn: int) -> relax.Expr:
    """A post-norm transformer encoder layer: multi-head self-attention and a GELU feed-forward."""
    head_dim = dim // heads

    def split_heads(t: relax.Expr) -> relax.Expr:
        return R.permute_dims(R.reshape(t, (1, seq, heads, head_dim)), [0, 2, 1, 3])

    q = split_heads(dense(x, f"{name}q", dim, dim))
    k = split_heads(dense(x, f"{name}k", dim, dim))
    v = split_heads(dense(x, f"{name}v", dim, dim))
    scores = R.divide(R.matmul(q, R.permute_dims(k, [0, 1, 3, 2])), relax.const(head_dim**0.5, "float32"))
    attn = R.matmul(R.nn.softmax(scores, axis=-1), v)
    attn = R.reshape(R.permute_dims(attn, [0, 2, 1, 3]), (1, seq, dim))
    h = layer_norm(R.add(x, dense(attn, f"{name}o", dim, dim)), f"{name}ln1", dim)
    ff = dense(R.nn.gelu(dense(h, f"{name}ff1", dim, ffn)), f"{name}ff2", ffn, dim)
    return layer_norm(R.add(h, ff), f"{name}ln2", dim)


@sized
def transformer_encoder_layer(seq: int = 16, dim: int = 64, heads: int = 4, ffn: int = 128) -> Workload:
    """One transformer encoder layer on a (1, seq, dim) input.

    Parameters
    ----------
    seq, dim, heads, ffn
        As in :func:`bert_encoder`.
    """
    check_heads("transformer_encoder_layer", "dim", dim, heads)
    x = var("x", 1, seq, dim)
    return Workload.from_expr(encoder_layer(x, "", seq, dim, heads, ffn), {"x"})


@sized
def bert_encoder(layers: int = 12, seq: int = 32, dim: int = 128, heads: int = 4, ffn: int = 512) -> Workload:
    """A BERT-style encoder: ``layers`` encoder layers on a (1, seq, dim) input.

    Parameters
    ----------
    layers
        Encoder layers.
    seq
        Sequence length.
    dim
        Model width; ``heads`` must divide it.
    heads
        Attention heads.
    ffn
        The feed-forward layer's width.
    """
    check_heads("bert_encoder", "dim", dim, heads)
    h = var("x", 1, seq, dim)
    for k in range(layers):
        h = encoder_layer(h, f"l{k}_", seq, dim, heads, ffn)
    return Workload.from_expr(h, {"x"})


@sized
def ac_sum(terms: int = 16, shape: tuple[int, ...] = (2, 3)) -> Workload:
    """``a0 + a1 + ... + a<terms-1>``, left to right, every term a runtime input: the classic
    explosive case for commutativity and associativity (every sum order is equivalent).

    Parameters
    ----------
    terms
        The terms summed.
    shape
        Every term's shape.
    """
    xs = [var(f"a{k}", *shape) for k in range(terms)]
    h = xs[0]
    for v in xs[1:]:
        h = R.add(h, v)
    return Workload.from_expr(h, {f"a{k}" for k in range(terms)})


@sized
def polynomial(ops: int = 300, inputs: int = 8, shape: tuple[int, ...] = (4, 4), seed: int = 0) -> Workload:
    """A random chain of about ``ops`` element-wise adds and multiplies over ``inputs`` runtime inputs
    of one shape (no broadcasting), each step also reading a random earlier value: every ring rule
    matches almost everywhere. Values stay within [-1, 1] for inputs there: a step multiplies by an
    input, or adds an earlier value and halves.

    Parameters
    ----------
    ops
        About how many adds and multiplies.
    inputs
        The runtime inputs.
    shape
        Every input's shape.
    seed
        The seed of the random choices.
    """
    import random

    rng = random.Random(seed)
    xs = [var(f"x{k}", *shape) for k in range(inputs)]
    values: list[relax.Expr] = list(xs)
    half = relax.const(0.5, "float32")
    h, count = xs[0], 0
    while count < ops:
        if rng.random() < 0.5:
            h, count = R.multiply(h, rng.choice(xs)), count + 1
        else:
            h, count = R.multiply(R.add(h, rng.choice(values)), half), count + 2
        values.append(h)
    return Workload.from_expr(h, {f"x{k}" for k in range(inputs)})
