"""Where the soundness checker draws values from: tensor types of leaves and op attributes.

Sizes are small (a test instance builds and runs in milliseconds) but varied
enough to tell apart what a wrong rule confuses: kernels of 1 and 3, strides
and dilations of 1 and 2, channels that differ, axes counted from either end,
dimensions of size 1 that broadcast. TVM's type inference is the judge of
what fits together: a draw TVM cannot type is simply drawn again.
"""

from __future__ import annotations

import inspect
import math
import random
from typing import Any, Callable, Sequence

from ..graph.types import TensorType

#: Sizes a dimension is drawn from (small ones more often).
DIMS = (1, 2, 2, 3, 3, 4, 4, 5, 6, 7)
#: Dtypes a leaf may take when nothing constrains it (float32 most of the time).
DTYPES = ("float32",) * 8 + ("float16", "int32")

#: How often a free leaf is a 0-d tensor (a scalar operand).
SCALARS = 0.06
#: How often a free leaf has one size on every axis: axes mixed up (a wrong permutation,
#: a wrong reduction axis) then keep the types and show in the values.
REPEATED = 0.2
#: An attribute is left at the op's default this often when it has one.
KEEP_DEFAULT = 0.35

Types = Sequence[TensorType]
Draw = Callable[[random.Random, Types], Any]


def leaf_type(rng: random.Random, hints: Types, ndim: int | None = None, dtype: str | None = None,
              shape: Sequence[int | None] | None = None) -> TensorType:
    """A type for a leaf: ``shape``/``ndim``/``dtype`` where the rule fixes them, else drawn
    close to ``hints`` (the types of values it is combined with): their rank and, per
    axis counted from the end, often their size."""
    if shape is not None:
        hint = rng.choice(hints).shape if hints else ()
        dims = tuple(d if d is not None else _dim(rng, hint, k - len(shape)) for k, d in enumerate(shape))
    else:
        if ndim is None:
            roll = rng.random()
            ndim = 0 if roll < SCALARS else len(rng.choice(hints).shape) if hints and roll < 0.7 else rng.randint(1, 4)
        hint = rng.choice(hints).shape if hints else ()
        if hint and len(hint) == ndim and rng.random() < 0.3:
            dims = tuple(hint)
        elif rng.random() < REPEATED:
            dims = (rng.choice(DIMS[2:]),) * ndim
        else:
            dims = tuple(_dim(rng, hint, k - ndim) for k in range(ndim))
    if dtype is None:
        dtype = hints[0].dtype if hints and rng.random() < 0.9 else rng.choice(DTYPES)
    return TensorType(dims, dtype)


def input_type(op: str, position: int, made: Types, rng: random.Random) -> TensorType | None:
    """A type for input ``position`` of ``op`` that fits the inputs ``made`` before it (a kernel
    for a convolution's data, a channel vector for a norm), or None to draw it freely."""
    propose = _INPUTS.get(op)
    if propose is None or not made or not made[0].shape or rng.random() < 0.2:
        return None  # nothing to fit (a scalar first input included): draw freely
    return propose(rng, position, made)


#: The ranks a matmul's left operand or a transpose's input (when a leaf) takes by turns: a matrix,
#: stacks of matrices (a batch; a batch and heads) and a vector, so that a rule for matrices is
#: checked on stacks of them too, not only where chance draws one
#: (:class:`~.synthesize.Synthesizer` picks each draw's rank).
LEFT_RANKS = (2, 3, 4, 1)
#: A rank that gave no instance in this many draws (none at all yet) is left out of the turns:
#: the rule's guards forbid it.
RANK_TRIES = 3


def rank_turns(op: str) -> tuple[int, ...]:
    """The ranks the first input of ``op`` takes by turns over the draws, or () if drawn freely."""
    return LEFT_RANKS if op in ("relax.matmul", "relax.permute_dims") else ()


#: Ops whose data input TVM types at one rank only (a convolution's or a pool's, whatever its
#: layout): their first input, a leaf, is drawn at that rank but :data:`FREE_RANK` of the time.
#: Drawn freely, a conv's data took another rank in most draws, each typed by TVM to be rejected:
#: a variadic conv rule's check spent much of its time on such rejected calls.
FIXED_RANKS = {f"relax.nn.{name}{d}d": d + 2 for d in (1, 2, 3)
               for name in ("conv", "max_pool", "avg_pool", "adaptive_avg_pool")} | {
    f"relax.nn.conv{d}d_transpose": d + 2 for d in (1, 2)}
#: How often such a first input is drawn at any rank all the same.
FREE_RANK = 0.1


def fixed_rank_type(op: str, hints: Types, rng: random.Random) -> TensorType | None:
    """A type at the one rank ``op``'s first input takes (:data:`FIXED_RANKS`), drawn close to
    ``hints``; None to draw it freely."""
    rank = FIXED_RANKS.get(op)
    return None if rank is None or rng.random() < FREE_RANK else leaf_type(rng, hints, ndim=rank)


def first_input_type(rank: int, hints: Types, rng: random.Random) -> TensorType:
    """A type of ``rank`` for the first input of an op whose rank takes turns, its sizes drawn close
    to ``hints``."""
    return leaf_type(rng, hints, ndim=rank)


def _kernel(rng: random.Random, position: int, made: Types) -> TensorType | None:
    data = made[0]
    if position != 1 or len(data.shape) != 4:
        return None
    channels = data.shape[1]
    groups = rng.choice([1, 1, 1, channels] + [g for g in (2, 3) if channels % g == 0 and g < channels])
    k = rng.choice((1, 1, 3, 3, 2))
    kw = k if rng.random() < 0.8 else rng.choice((1, 3))
    out = channels if rng.random() < 0.3 else groups * rng.choice((1, 2, 3))
    return TensorType((out, channels // groups, k, kw), data.dtype)


def _channels(rng: random.Random, position: int, made: Types) -> TensorType:
    data = made[0]
    axis = 1 if len(data.shape) > 1 and rng.random() < 0.8 else len(data.shape) - 1
    return TensorType((data.shape[axis],), data.dtype)


def _trailing(rng: random.Random, position: int, made: Types) -> TensorType:
    data = made[0]
    if position > 1:
        return made[1]
    return TensorType(data.shape[-rng.randint(1, len(data.shape)):], data.dtype)


def _right_operand(rng: random.Random, position: int, made: Types) -> TensorType:
    left = made[0]
    batch = left.shape[:-2] if len(left.shape) > 2 and rng.random() < 0.5 else ()
    return TensorType((*batch, left.shape[-1], rng.choice(DIMS)), left.dtype)


_INPUTS: dict[str, Callable[[random.Random, int, Types], TensorType | None]] = {
    "relax.nn.conv2d": _kernel,
    "relax.nn.batch_norm": _channels,
    "relax.nn.layer_norm": _trailing,
    "relax.matmul": _right_operand,
}


def _dim(rng: random.Random, hint: Sequence[int], from_end: int) -> int:
    if hint and -from_end <= len(hint) and rng.random() < 0.6:
        return hint[from_end]
    return rng.choice(DIMS)


def op_attrs(op: str, defaults: dict[str, Any], rng: random.Random, types: Types) -> dict[str, Any]:
    """Drawn attributes of a call of ``op`` on inputs of ``types``: each required one, and
    each optional one with probability ``1 - KEEP_DEFAULT`` when a domain is known."""
    attrs = {}
    for name, default in defaults.items():
        draw = _DOMAINS.get((op, name)) or _DOMAINS.get((None, name))
        required = default is inspect.Parameter.empty
        if draw is None:
            if required:
                raise LookupError(f"no domain to draw attribute {name!r} of {op} from")
            continue
        if required or rng.random() >= KEEP_DEFAULT:
            attrs[name] = draw(rng, types)
    return attrs


def _rank(types: Types) -> int:
    return len(types[0].shape) if types else 1


def _axis(rng: random.Random, types: Types) -> int:
    n = max(1, _rank(types))
    return rng.randrange(-n, n)


def _axes_subset(rng: random.Random, types: Types) -> tuple[int, ...]:
    n = max(1, _rank(types))
    k = rng.randint(1, n)
    if rng.random() < 0.5:  # trailing axes, written from the end as importers do
        return tuple(range(-k, 0))
    return tuple(sorted(rng.sample(range(n), k)))


#: How often a permutation is a transpose of the last two axes (of each matrix in a stack).
SWAP_LAST_TWO = 0.3


def _permutation(rng: random.Random, types: Types) -> tuple[int, ...]:
    axes = list(range(_rank(types)))
    if len(axes) > 2 and rng.random() < SWAP_LAST_TWO:
        return (*axes[:-2], axes[-1], axes[-2])
    rng.shuffle(axes)
    return tuple(axes)


def _reshape(rng: random.Random, types: Types) -> tuple[int, ...]:
    """A shape with the same number of elements: the dims regrouped, or flattened."""
    dims = list(types[0].shape) if types else [1]
    if rng.random() < 0.3:
        return (math.prod(dims),)
    rng.shuffle(dims)
    groups: list[int] = []
    for d in dims:
        if groups and rng.random() < 0.4:
            groups[-1] *= d
        else:
            groups.append(d)
    if rng.random() < 0.3:
        groups.insert(rng.randint(0, len(groups)), 1)
    return tuple(groups)


def _sections(rng: random.Random, types: Types) -> Any:
    if rng.random() < 0.5:
        return rng.choice((1, 2, 3))
    return tuple(sorted(rng.sample(range(1, 5), rng.randint(1, 2))))


def _pad_width(rng: random.Random, types: Types) -> tuple[int, ...]:
    return tuple(rng.choice((0, 0, 1, 2)) for _ in range(2 * _rank(types)))


def _pair(*values: int) -> Draw:
    return lambda rng, types: (rng.choice(values), rng.choice(values))


def _choice(*values: Any) -> Draw:
    return lambda rng, types: rng.choice(values)


def _padding(rng: random.Random, types: Types) -> tuple[int, int, int, int]:
    if rng.random() < 0.5:
        p = rng.choice((0, 1, 2))
        return (p, p, p, p)
    return tuple(rng.choice((0, 1, 2)) for _ in range(4))  # type: ignore[return-value]


def _groups(rng: random.Random, types: Types) -> int:
    channels = types[0].shape[1] if types and len(types[0].shape) == 4 else 1
    if len(types) > 1 and len(types[1].shape) == 4 and channels % types[1].shape[1] == 0 and rng.random() < 0.8:
        return channels // types[1].shape[1]  # what the kernel's input channels imply
    return rng.choice([1, 1, channels] + [g for g in (2, 3) if channels % g == 0])


# (op, attribute) -> how to draw it; (None, attribute) for every op with that attribute.
_DOMAINS: dict[tuple[str | None, str], Draw] = {
    (None, "axis"): _axis,
    (None, "keepdims"): _choice(False, True),
    (None, "epsilon"): _choice(1e-5, 1e-3),
    (None, "center"): _choice(True, True, False),
    (None, "scale"): _choice(True, True, False),
    (None, "exclusive"): _choice(False, True),
    (None, "strides"): _pair(1, 1, 2),
    (None, "dilation"): _pair(1, 1, 2),
    (None, "padding"): _padding,
    (None, "groups"): _groups,
    (None, "indices_or_sections"): _sections,
    (None, "pad_width"): _pad_width,
    (None, "alpha"): _choice(0.01, 0.2),
    (None, "min"): _choice(-1.0, 0.0),
    (None, "max"): _choice(1.0, 6.0),
    ("relax.permute_dims", "axes"): _permutation,
    ("relax.nn.layer_norm", "axes"): _axes_subset,
    ("relax.sum", "axis"): _axes_subset,
    ("relax.mean", "axis"): _axes_subset,
    ("relax.max", "axis"): _axes_subset,
    ("relax.min", "axis"): _axes_subset,
    ("relax.prod", "axis"): _axes_subset,
    ("relax.reshape", "shape"): _reshape,
    ("relax.astype", "dtype"): _choice("float32", "float16", "int32"),
    ("relax.nn.batch_norm", "axis"): _choice(1, 1, -1),
    ("relax.nn.batch_norm", "training"): _choice(False, False, False, True),
    ("relax.nn.batch_norm", "momentum"): _choice(0.1),
    ("relax.nn.conv2d", "data_layout"): _choice(*["NCHW"] * 7, "NHWC"),
    ("relax.nn.conv2d", "kernel_layout"): _choice(*["OIHW"] * 7, "HWIO"),
}
