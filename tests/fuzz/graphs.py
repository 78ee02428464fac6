"""A hypothesis strategy for random Relax graphs from the op mix the rule library touches.

A graph grows from an NCHW image and four matrix inputs (float32, float16, int32 and bool):
each step applies a random op
to tensors already built (convolutions with varied strides, padding, groups and
dilation, bias adds and broadcasting, element-wise ops, concat and split, reshape and
transpose chains, batch and layer norms, 2-D and batched matmuls, expand_dims; and integer
and boolean computations: comparisons and logical ops making masks, ``where`` selecting
floats or integers, casts among float32, float16, int32, int8 and bool, cumulative sums of
integers and masks),
sometimes reusing a weight. The newest tensor of each kind, and sometimes another, are the outputs. Every weight is a
parameter with a random value (``Workload.from_expr``). Hypothesis shrinks a failure to
the fewest steps.

Every graph drawn builds with TVM as it is (no need to build it here and reject what fails):
its LLVM backend cannot build a cumsum over bool that keeps the bool dtype, nor a comparison of
two bool tensors (``rules.legalize()`` rewrites those), so masks are scanned only into a numeric
dtype and combined only by logical ops. Only float32 is compared or cast to an integer or a
mask: a comparison flips when a rewrite's rounding moves a value across its threshold, and
integers and masks are compared exactly; float16's rounding error (~1e-3) would flip some in a
few percent of graphs, float32's (~1e-6) seldom.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st
from tvm import relax

from gsl_eq import Workload
from gsl_eq.models.blocks import var

CHANNELS, SIZE, ROWS, COLS = 4, 6, 4, 8


@dataclass
class Tensor:
    expr: relax.Expr
    shape: tuple[int, ...]


class Builder:
    """The graph being drawn: tensors built so far, weights to share, fresh names."""

    def __init__(self, draw):
        self.draw = draw
        self.images = [Tensor(var("x", 1, CHANNELS, SIZE, SIZE), (1, CHANNELS, SIZE, SIZE))]
        self.matrices = [Tensor(var("m", ROWS, COLS), (ROWS, COLS))]
        self.halves = [Tensor(var("h", ROWS, COLS, dtype="float16"), (ROWS, COLS))]
        self.ints = [Tensor(var("n", ROWS, COLS, dtype="int32"), (ROWS, COLS))]
        self.masks = [Tensor(var("b", ROWS, COLS, dtype="bool"), (ROWS, COLS))]
        self.bytes: list[Tensor] = []  # int8, from casts only (no arithmetic: it would overflow)
        #: the pools of tensors that are not images (at most 3-d), by dtype
        self.pools = {"float32": self.matrices, "float16": self.halves, "int32": self.ints, "int8": self.bytes,
                      "bool": self.masks}
        self.weights: dict[tuple, list[relax.Var]] = {}
        self.count = 0
        self.last_conv: dict = {}

    def weight(self, *shape: int, dtype: str = "float32") -> relax.Var:
        shared = self.weights.setdefault((shape, dtype), [])
        if shared and self.draw(st.booleans()):
            return self.draw(st.sampled_from(shared))
        self.count += 1
        shared.append(var(f"w{self.count}", *shape, dtype=dtype))
        return shared[-1]

    def dtype(self, pool: list[Tensor]) -> str:
        return "float32" if pool is self.images else next(dtype for dtype, p in self.pools.items() if p is pool)

    def pick(self, pool: list[Tensor]) -> Tensor:
        """Mostly one of the newest tensors, so that graphs grow deep as well as wide."""
        if len(pool) > 2 and self.draw(st.booleans()):
            return self.draw(st.sampled_from(pool[-2:]))
        return self.draw(st.sampled_from(pool))

    # --- image ops ---------------------------------------------------------------------------

    def conv(self, x: Tensor | None = None, same_as: dict | None = None) -> Tensor | None:
        """A random convolution (or one with ``same_as``'s attributes, another weight)."""
        x = x or self.pick(self.images)
        c = x.shape[1]
        if same_as is not None:
            y = relax.op.nn.conv2d(x.expr, self.weight(*same_as["weight"]), **same_as["attrs"])
            self.images.append(Tensor(y, same_as["shape"]))
            return self.images[-1]
        k = self.draw(st.sampled_from([1, 3]))
        groups = self.draw(st.sampled_from([1, c] if c > 1 else [1]))
        out = self.draw(st.sampled_from([c, 2 * c] if groups == c else [2, c, 2 * c]))
        stride = self.draw(st.sampled_from([1, 1, 2]))
        dilation = self.draw(st.sampled_from([1, 1, 2])) if k == 3 else 1
        padding = self.draw(st.sampled_from([0, dilation])) if k == 3 else 0
        span = dilation * (k - 1) + 1
        size = (x.shape[2] + 2 * padding - span) // stride + 1
        if size < 1:
            return
        attrs = dict(strides=stride, padding=padding, dilation=dilation, groups=groups)
        y = relax.op.nn.conv2d(x.expr, self.weight(out, c // groups, k, k), **attrs)
        self.images.append(Tensor(y, (1, out, size, size)))
        self.last_conv = {"weight": (out, c // groups, k, k), "attrs": attrs, "shape": (1, out, size, size)}
        return self.images[-1]

    def parallel_convs(self) -> None:
        """Two convolutions of one input with the same attributes, added or concatenated."""
        x = self.pick(self.images)
        first = self.conv(x)
        if first is None:
            return
        second = self.conv(x, same_as=self.last_conv)
        if self.draw(st.booleans()):
            self.images.append(Tensor(relax.op.add(first.expr, second.expr), first.shape))
        else:
            shape = (1, 2 * first.shape[1], *first.shape[2:])
            self.images.append(Tensor(relax.op.concat([first.expr, second.expr], axis=1), shape))

    def conv_then(self) -> None:
        """A convolution followed by a batch norm, a per-channel scale or a bias add."""
        y = self.conv()
        if y is None:
            return
        c = y.shape[1]
        then = self.draw(st.sampled_from(["batch_norm", "scale", "bias"]))
        if then == "batch_norm":
            bn = relax.op.nn.batch_norm(y.expr, self.weight(c), self.weight(c), self.weight(c), self.weight(c), axis=1,
                                        training=False)
            self.images.append(Tensor(relax.TupleGetItem(bn, 0), y.shape))
        else:
            op = relax.op.multiply if then == "scale" else relax.op.add
            self.images.append(Tensor(op(y.expr, self.weight(c, 1, 1)), y.shape))

    def parallel_matmuls(self) -> None:
        """Two or three matmuls of one 2-D input with weights of one shape."""
        a = self.pick([t for t in self.matrices if len(t.shape) == 2])
        n = self.draw(st.sampled_from([COLS, ROWS]))
        for _ in range(self.draw(st.integers(2, 3))):
            self.matrices.append(Tensor(relax.op.matmul(a.expr, self.weight(a.shape[1], n)), (a.shape[0], n)))

    def bias_add(self) -> None:
        x = self.pick(self.images)
        b = self.weight(x.shape[1], 1, 1)
        self.images.append(Tensor(relax.op.add(x.expr, b), x.shape))

    def element_wise(self) -> None:
        pool = self.draw(st.sampled_from([self.images, self.matrices, self.halves, self.ints]))
        x = self.pick(pool)
        arithmetic = ["add", "multiply", "subtract", "scale"]
        kind = self.draw(st.sampled_from(arithmetic if pool is self.ints else ["relu", "sigmoid", *arithmetic]))
        if kind in ("relu", "sigmoid"):
            y = getattr(relax.op.nn if kind == "relu" else relax.op, kind)(x.expr)
        elif kind == "scale":
            y = relax.op.multiply(x.expr, self.weight(1, dtype=self.dtype(pool)))
        else:
            same = [t for t in pool if t.shape == x.shape]
            y = getattr(relax.op, kind)(x.expr, self.pick(same).expr)
        pool.append(Tensor(y, x.shape))

    def concat_split(self) -> None:
        x = self.pick(self.images)
        same = [t for t in self.images if t.shape == x.shape]
        both = relax.op.concat([x.expr, self.pick(same).expr], axis=1)
        shape = (1, 2 * x.shape[1], *x.shape[2:])
        if self.draw(st.booleans()):
            self.images.append(Tensor(both, shape))
            return
        parts = relax.op.split(both, 2, axis=1)
        self.images.append(Tensor(relax.TupleGetItem(parts, self.draw(st.sampled_from([0, 1]))), x.shape))

    def norm(self) -> None:
        x = self.pick(self.images)
        c = x.shape[1]
        if self.draw(st.booleans()):
            bn = relax.op.nn.batch_norm(x.expr, self.weight(c), self.weight(c), self.weight(c), self.weight(c), axis=1,
                                        training=False)
            self.images.append(Tensor(relax.TupleGetItem(bn, 0), x.shape))
        else:
            m = self.pick(self.matrices)
            n = m.shape[-1]
            y = relax.op.nn.layer_norm(m.expr, self.weight(n), self.weight(n), axes=[-1])
            self.matrices.append(Tensor(y, m.shape))

    # --- matrix ops -----------------------------------------------------------------------------

    def matmul(self) -> None:
        pool = self.draw(st.sampled_from([self.matrices, self.halves]))
        a = self.pick(pool)
        dtype = self.dtype(pool)
        if len(a.shape) == 2:
            n = self.draw(st.sampled_from([COLS, ROWS]))
            w = self.weight(a.shape[1], n, dtype=dtype)
            pool.append(Tensor(relax.op.matmul(a.expr, w), (a.shape[0], n)))
        else:  # batched: (b, r, c) @ (b, c, c)
            w = self.weight(a.shape[0], a.shape[2], a.shape[2], dtype=dtype)
            pool.append(Tensor(relax.op.matmul(a.expr, w), a.shape))

    def reshape_chain(self) -> None:
        a = self.pick(self.matrices)
        if len(a.shape) == 2 and a.shape[1] % 2 == 0:
            shape = (2, a.shape[0], a.shape[1] // 2)
            y = relax.op.permute_dims(relax.op.reshape(a.expr, (a.shape[0], 2, a.shape[1] // 2)), [1, 0, 2])
            self.matrices.append(Tensor(y, shape))
        elif len(a.shape) == 3:  # back to 2-D
            y = relax.op.reshape(relax.op.permute_dims(a.expr, [1, 0, 2]), (a.shape[1], a.shape[0] * a.shape[2]))
            self.matrices.append(Tensor(y, (a.shape[1], a.shape[0] * a.shape[2])))
        else:
            y = relax.op.squeeze(relax.op.expand_dims(a.expr, 0), [0])
            self.matrices.append(Tensor(y, a.shape))

    def transpose_twice(self) -> None:
        pool = self.draw(st.sampled_from([self.matrices, self.halves, self.ints, self.masks]))
        a = self.pick([t for t in pool if len(t.shape) == 2])
        y = relax.op.permute_dims(relax.op.permute_dims(a.expr, [1, 0]), [1, 0])
        pool.append(Tensor(y, a.shape))

    # --- integer and boolean ops --------------------------------------------------------------

    def operand(self, dtype: str, shape: tuple[int, ...]) -> relax.Expr:
        """A second operand for a tensor of ``shape``: another of that shape and ``dtype``, a scalar
        weight or a constant (0.0, or an integer among the integer inputs' 0-7)."""
        kind = self.draw(st.sampled_from(["tensor", "weight", "constant"]))
        same = [t for t in self.pools[dtype] if t.shape == shape]
        if kind == "tensor" and same:
            return self.pick(same).expr
        if kind == "weight":
            return self.weight(1, dtype=dtype)
        return relax.const(0.0 if dtype.startswith("float") else self.draw(st.integers(0, 7)), dtype)

    def compare(self) -> None:
        """A mask: a float32 or integer tensor compared with another operand, maybe combined with
        another mask by a logical op."""
        dtype = self.draw(st.sampled_from([d for d in ("float32", "int32", "int8") if self.pools[d]]))
        a = self.pick(self.pools[dtype])
        names = ["less", "greater", "less_equal", "greater_equal"]
        name = self.draw(st.sampled_from(names if dtype == "float32" else [*names, "equal", "not_equal"]))
        y = getattr(relax.op, name)(a.expr, self.operand(dtype, a.shape))
        others = [t for t in self.masks if t.shape == a.shape]
        logical = self.draw(st.sampled_from(["none", "logical_not", "logical_and", "logical_or", "logical_xor"]))
        if logical == "logical_not":
            y = relax.op.logical_not(y)
        elif logical != "none" and others:
            y = getattr(relax.op, logical)(y, self.pick(others).expr)
        self.masks.append(Tensor(y, a.shape))

    def where(self) -> None:
        """``where(mask, a, b)``: ``a`` a tensor of the mask's shape (or a weight if there is none),
        ``b`` another operand, in either order."""
        cond = self.pick(self.masks)
        dtypes = [d for d, pool in self.pools.items() if d != "bool" and any(t.shape == cond.shape for t in pool)]
        dtype = self.draw(st.sampled_from(dtypes or ["float32"]))
        same = [t for t in self.pools[dtype] if t.shape == cond.shape]
        a = self.pick(same).expr if same else self.weight(*cond.shape)
        b = self.operand(dtype, cond.shape)
        if self.draw(st.booleans()):
            a, b = b, a
        self.pools[dtype].append(Tensor(relax.op.where(cond.expr, a, b), cond.shape))

    def cast(self) -> None:
        """``astype`` between float32, float16, int32, int8 and bool; sometimes two casts of one
        dtype concatenated. Float16 only widens to float32 (see the module's docstring), and
        floats become int32 or bool only (int8 could overflow, which LLVM leaves undefined)."""
        source = self.draw(st.sampled_from([d for d, pool in self.pools.items() if pool]))
        x = self.pick(self.pools[source])
        targets = {"float32": ["float16", "int32", "bool"], "float16": ["float32"]}.get(
            source, [d for d in self.pools if d != source])
        target = self.draw(st.sampled_from(targets))
        y, shape = relax.op.astype(x.expr, target), x.shape
        same = [t for t in self.pools[source] if t.shape == x.shape]
        if self.draw(st.booleans()):
            y = relax.op.concat([y, relax.op.astype(self.pick(same).expr, target)], axis=0)
            shape = (2 * shape[0], *shape[1:])
        self.pools[target].append(Tensor(y, shape))

    def cumsum(self) -> None:
        """A running sum along an axis of int32 (maybe into another dtype), of a mask or of int8
        (into a numeric dtype: see the module's docstring)."""
        source = self.draw(st.sampled_from([d for d in ("int32", "bool", "int8") if self.pools[d]]))
        x = self.pick(self.pools[source])
        dtypes = {"int32": [None, "int32", "float32"], "bool": ["int32", "int8", "float32"], "int8": ["int32"]}[source]
        dtype = self.draw(st.sampled_from(dtypes))
        axis = self.draw(st.integers(-1, len(x.shape) - 1))
        y = relax.op.cumsum(x.expr, axis=axis, dtype=dtype, exclusive=self.draw(st.booleans()))
        self.pools[dtype or source].append(Tensor(y, x.shape))

    def image_mask(self) -> None:
        """An image masked by a comparison: ``where(x > t, x, x * w)`` (a leaky relu) or ``x * astype(x > t)``."""
        x = self.pick(self.images)
        threshold = self.draw(st.sampled_from(["zero", "channel", "image"]))
        if threshold == "zero":
            threshold = relax.const(0.0)
        elif threshold == "channel":
            threshold = self.weight(x.shape[1], 1, 1)
        else:
            threshold = self.pick([t for t in self.images if t.shape == x.shape]).expr
        mask = getattr(relax.op, self.draw(st.sampled_from(["less", "greater"])))(x.expr, threshold)
        if self.draw(st.booleans()):
            y = relax.op.where(mask, x.expr, relax.op.multiply(x.expr, self.weight(1)))
        else:
            y = relax.op.multiply(x.expr, relax.op.astype(mask, "float32"))
        self.images.append(Tensor(y, x.shape))

    STEPS = ("conv", "bias_add", "element_wise", "concat_split", "norm", "matmul", "reshape_chain", "transpose_twice",
             "parallel_convs", "conv_then", "parallel_matmuls", "compare", "where", "cast", "cumsum", "image_mask")


@st.composite
def workloads(draw, max_steps: int = 10) -> Workload:
    """A random workload: inputs among ``x`` (an image), ``m``, ``h``, ``n`` and ``b`` (float32, float16,
    int32 and bool matrices), random weights."""
    builder = Builder(draw)
    for step in draw(st.lists(st.sampled_from(Builder.STEPS), min_size=2, max_size=max_steps)):
        getattr(builder, step)()
    # the newest tensor of each kind (the deepest), and maybe one more: multiple outputs, shared parts
    pools = [[t for t in pool if not isinstance(t.expr, relax.Var)]  # inputs are no outputs
             for pool in (builder.images, *builder.pools.values())]
    newest = [pool[-1] for pool in pools if pool] or [builder.images[0]]
    others = [t for pool in pools for t in pool if t not in newest]
    if others and draw(st.booleans()):
        newest.append(draw(st.sampled_from(others)))
    exprs = [t.expr for t in newest]
    expr = exprs[0] if len(exprs) == 1 else relax.Tuple(exprs)
    names = [name for name in ("x", "m", "h", "n", "b") if _reads(expr, name)]
    if not names:  # outputs on weights alone: keep an input so the workload has one
        expr, names = relax.Tuple([expr, builder.images[0].expr]), ["x"]
    return Workload.from_expr(expr, names, seed=draw(st.integers(0, 2**16)))


def _reads(expr: relax.Expr, name: str) -> bool:
    return any(v.name == name for v in relax.analysis.free_vars(expr))
