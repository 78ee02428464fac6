"""Small building blocks of well-known networks, as Relax expressions and Workloads.

Each ``*_block`` function returns a :class:`~gsl_eq.Workload` with random
parameters and the runtime input ``x``; they are the models the tests and the
demo use. The helpers (``conv``, ``bn``, ``dense``...) build Relax expressions
and name every parameter they create after the layer.
"""

from __future__ import annotations

from tvm import relax

from ..errors import WorkloadError
from ..workload import Workload


def check_sizes(model: str, **sizes: object) -> None:
    """A WorkloadError naming the first of ``sizes`` (a model's size arguments) that is not a positive int."""
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise WorkloadError(f"{model}: {name} must be a positive int; got {value!r}")

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
    """Seed 002's example: conv2d(x, w1) + conv2d(x, w2)."""
    x = var("x", 2, 2, 4, 4)
    y = R.add(R.nn.conv2d(x, var("w1", 4, 2, 1, 1)), R.nn.conv2d(x, var("w2", 4, 2, 1, 1)))
    return Workload.from_expr(y, {"x"})


def resnet_bottleneck(ch: int = 64, mid: int = 16, size: int = 8) -> Workload:
    """A ResNet-50 bottleneck: three conv + batch_norm (+ relu) and the identity shortcut."""
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


def inception_block(ch: int = 32, size: int = 8) -> Workload:
    """An Inception-style block: four parallel branches, concatenated, then split in two."""
    x = var("x", 1, ch, size, size)
    parts = R.split(inception(x, "", ch), 2, axis=1)
    y = R.add(relax.TupleGetItem(parts, 0), relax.TupleGetItem(parts, 1))
    return Workload.from_expr(y, {"x"})


def inception_network(blocks: int = 6, ch: int = 32, size: int = 16) -> Workload:
    """An Inception-style CNN: a stem conv, ``blocks`` inception blocks (pooling halfway), a classifier."""
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


def transformer_encoder_layer(seq: int = 16, dim: int = 64, heads: int = 4, ffn: int = 128) -> Workload:
    """One transformer encoder layer on a (1, seq, dim) input."""
    x = var("x", 1, seq, dim)
    return Workload.from_expr(encoder_layer(x, "", seq, dim, heads, ffn), {"x"})


def bert_encoder(layers: int = 12, seq: int = 32, dim: int = 128, heads: int = 4, ffn: int = 512) -> Workload:
    """A BERT-style encoder: ``layers`` encoder layers on a (1, seq, dim) input."""
    check_sizes("bert_encoder", layers=layers, seq=seq, dim=dim, heads=heads, ffn=ffn)
    if dim % heads:
        raise WorkloadError(f"bert_encoder: dim {dim} must be a multiple of heads {heads} (each head takes dim / heads)")
    h = var("x", 1, seq, dim)
    for k in range(layers):
        h = encoder_layer(h, f"l{k}_", seq, dim, heads, ffn)
    return Workload.from_expr(h, {"x"})


def ac_sum(terms: int = 16, shape: tuple[int, ...] = (2, 3)) -> Workload:
    """``a0 + a1 + ... + a<terms-1>``, left to right, every term a runtime input: the classic
    explosive case for commutativity and associativity (every sum order is equivalent)."""
    xs = [var(f"a{k}", *shape) for k in range(terms)]
    h = xs[0]
    for v in xs[1:]:
        h = R.add(h, v)
    return Workload.from_expr(h, {f"a{k}" for k in range(terms)})


def polynomial(ops: int = 300, inputs: int = 8, shape: tuple[int, ...] = (4, 4), seed: int = 0) -> Workload:
    """A random chain of about ``ops`` element-wise adds and multiplies over ``inputs`` runtime inputs
    of one shape (no broadcasting), each step also reading a random earlier value: every ring rule
    matches almost everywhere. Values stay within [-1, 1] for inputs there: a step multiplies by an
    input, or adds an earlier value and halves."""
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
