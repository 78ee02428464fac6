"""TASO's verified substitutions as GSL rules: :func:`taso` (TASO's full sets) and :func:`tensat`
(the 120 single- and 13 multi-pattern rules of TENSAT's experiments, and TASO's hand-written ones
it adds).

The equations come from the TENSAT repository (uwplse/tensat, MIT licence, kept in
``taso_data/`` with its notice): ``single_rules.txt`` and ``multi_rules.txt`` in TASO's
``op(args)`` form, ``converted.txt`` and ``converted_multi.txt`` in TENSAT's s-expressions, and
TASO's hand-written substitutions as TENSAT's sources spell them (``predefined_multi.txt``: two
convs of one input merged into one, the smaller kernel enlarged to the other's size;
``predefined.txt``: a grouped conv's groups merged pairwise). Each
equation ``lhs == rhs`` becomes a rule from left to right, named after its file and its index in
it (``taso:single_rules.txt#17``; a multi-pattern rule is two equations, numbered by its first).
An equation whose right side enlarges a kernel becomes two rules: where the kernel has the size
already, the enlarge is the kernel itself (``...#0``); where it is smaller, a pad (``...#0/enlarged``).
One rule for both would put a padded copy of each kernel into the e-graph beside the kernel, and
every merge built on it twice: on a model of many convs (Inception-v3 under TENSAT's settings)
the e-graph grows several times larger, and the same graph is extracted.

What an op means in Relax (TASO has no broadcasting, so every element-wise pair is guarded to
one shape, except in pointwise equations, which hold under broadcasting too). TASO's matrices may
be stacks of matrices in Relax: in an equation with a matmul or a transpose (an equation of
matrices), a tensor of rank ``>= 2`` is a stack of matrices, its last two axes TASO's two, so its
concat and split axes count from the end (TASO's axis 0, rows, is ``-2``; axis 1, columns, is
``-1``). Each side then computes matrix by matrix what TASO's computes on one matrix:

======================  =====================================================================
TASO                    Relax
======================  =====================================================================
ewadd, ewmul (a, b)     add, multiply, ``where a.shape == b.shape`` (any broadcast in an equation
                        of element-wise ops only: :func:`pointwise`)
smul (a, s)             multiply by a 0-d tensor ``s`` (any, in a pointwise equation)
matmul (a, b)           matmul of ``a`` of rank >= 2 (a matrix or a stack of them: activations of shape
                        (batch, seq, hidden)) by a 2-d ``b`` (a weight); TENSAT's activation
                        argument: 0 none, 2 relu. A batched ``b`` is left out, so
                        ``transpose(matmul(a, b)) == matmul(transpose(b), transpose(a))`` holds
                        on a 2-d ``a`` only.
transpose (a)           permute_dims swapping the last two axes of ``a`` (rank >= 2): a source
                        matches no other permutation (no axes: a 2-d ``a`` only), a target has
                        its axes written out
relu                    nn.relu
concat (axis, a, b)     concat (in an equation of matrices: on axis ``axis - 2``, the operands of one
                        rank agreeing on every other axis, the batch ones too)
split_0/1 (split(ax,t)) split of ``t`` at the boundary of the concat inside ``t``, item 0 or 1 (axes as
                        concat's)
conv2d (sh, sw, p, act, x, w)
                        nn.conv2d NCHW/OIHW, strides (sh, sw), padding SAME (``p = 0``, odd
                        kernels: ``(k - 1) / 2`` each side) or VALID (``p = 1``), groups from the
                        channel counts as TASO infers them; ``act = 2`` adds a relu
poolavg/poolmax (kh, kw, sh, sw, p, x)
                        nn.avg_pool2d (counting the padding, as TASO) / nn.max_pool2d
enlarge (kh, kw, w)     nn.pad of kernel ``w`` to kh x kw, centred (TENSAT's ``enlarge (w, r)``: to
                        the size of kernel ``r``)
merge (w, count)        TASO's merge_gconv: the kernel of a conv of ``count`` times fewer groups,
                        each new group holding ``count`` old kernels block-diagonally: reshape,
                        multiply by an identity mask, reshape (folded: ``w`` is a parameter); the
                        conv's groups a multiple of ``count``
Iconv (kh, kw)          a C x C kernel copying each of the conv input's C channels
Cpool (kh, kw)          a depthwise kernel averaging its window (``pat.Const(fill=...)``)
Imatmul, Iewmul         the identity matrix sized by the other operand's last axis / ones
======================  =====================================================================

Of the rules of equations of matrices, those whose typing leaves some input free to be a stack
apply to stacks (the others, where every input is a right operand of a matmul or tied to one, stay
2-d): in ``converted.txt`` 17 of 27, in ``converted_multi.txt`` 2 of 3 (the Q/K/V merge
``[matmul(x, w1), matmul(x, w2)] -> split(matmul(x, concat(w1, w2)))`` and its row-wise twin), in
``single_rules.txt`` 137 of 176, in ``multi_rules.txt`` 2 of 3 (tests/rules/test_taso_batched.py).

Counts (checked by tests/rules/test_taso.py):

* ``single_rules.txt``: 659 equations parsed, 607 translated (673 rules: 66 enlarge a kernel). Left out: 31 whose left side holds a
  constant (Iconv, Cpool, Imatmul: a source matches a constant by value only, and these values
  depend on the shapes matched); 21 whose two sides are one term in Relax (12 written alike, 9
  differing only by TASO's fused activation, a separate relu in Relax): rewriting a term into
  itself never ends greedily and adds nothing to an e-graph. Equations TASO's list repeats stay
  separate rules, each named by its own index.
* ``multi_rules.txt`` and ``converted_multi.txt``: 13 two-output rules each, 11 translated. Left
  out: 2 pairs of one-term equations (the fused activation again). 4 of them have outputs that
  share no node (``[relu(a), relu(b)] -> split(relu(concat(a, b)))``): saturate mode pairs their
  matches, greedy mode refuses them (:meth:`~gsl_eq.frontend.Subst.require_connected`).
* ``converted.txt``: 120 parsed, 118 translated (2 one-term equations).
* ``predefined_multi.txt``: 2 two-output rules (TASO's activation none and relu), both translated,
  each as two rules (same size, enlarged);
  ``predefined.txt``: 4 merges of a grouped conv's groups pairwise, all translated (under the gpu
  model the merged conv does twice the FLOPs for the same outputs and is never chosen; it pays only
  where grouped convs run slowly, as cuDNN's did when TASO measured them).

Guards make each rule hold where it applies (the soundness checker finds each unsound without
them): element-wise pairs of one shape, a matmul's right operand 2-d and its left one of rank >= 2,
a transpose of the last two axes, TASO's input classes of one shape where a rule merges convs of a
channel concat into one grouped conv (its generator verified the equations on one shape per class,
and two kernels of different output counts would misalign the groups; in an equation of matrices,
of one matrix shape, the last two axes, so that a stack and a weight may share a class), kernels that
the right side concatenates or enlarges ungrouped (:func:`_merged_kernels`), the operands of the right
side's concats and element-wise pairs of one dtype; elsewhere
inputs of one class may differ in shape as TASO's and TENSAT's engines let them (two 1x1 convs of
one input with 64 and 256 outputs merge), ungrouped kernels, and on the right side
what its typing needs in TASO (concatenated operands agreeing off the axis, an enlarged kernel no
larger than its target size).

A source matches each distinct sub-term with one node (GSL's matching is a bijection), so
``ewadd(input_1, input_2)`` does not match ``x + x``, which TASO would.
"""

from __future__ import annotations

import contextlib
import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable, Iterator, Union

import numpy as np

from ..frontend import GSLError, Subst, attr, op, pat
from ..frontend.errors import SourcePatternError
from ._common import NCHW

Term = Union[str, tuple]  # an input name, a number, or (op, *args)

_SAME, _VALID = 0, 1
_ACTIVATIONS = {1: "sigmoid", 2: "relu", 3: "tanh"}  # TASO's activation codes


# --- reading the files ------------------------------------------------------------------


_TOKEN = re.compile(r"\s*([()=,>]|[A-Za-z_][A-Za-z_0-9]*|-?\d+|\?[A-Za-z_0-9]+)")


def _data(name: str) -> str:
    return resources.files(__package__).joinpath("taso_data", name).read_text()


def parse_taso(text: str) -> list[tuple[Term, Term]]:
    """TASO's ``op(arg, ...)==op(...)`` equations, written one after another (a final ``0`` ends them)."""
    tokens = [t for t in _TOKEN.findall(text)]
    pos = 0

    def term() -> Term:
        nonlocal pos
        head = tokens[pos]
        pos += 1
        if pos < len(tokens) and tokens[pos] == "(":
            pos += 1
            args = [term()]
            while tokens[pos] == ",":
                pos += 1
                args.append(term())
            assert tokens[pos] == ")", f"expected ')' at token {pos}"
            pos += 1
            return (head, *args)
        return head

    equations = []
    while pos < len(tokens) and tokens[pos] != "0":
        lhs = term()
        assert tokens[pos:pos + 2] == ["=", "="], f"expected '==' at token {pos}"
        pos += 2
        equations.append((lhs, term()))
    return equations


def parse_tensat(text: str) -> list[tuple[Term, Term]]:
    """TENSAT's ``(op arg ...)=>(op ...)`` rules, one a line."""

    def term(tokens: list[str], pos: int) -> tuple[Term, int]:
        if tokens[pos] != "(":
            return tokens[pos].lstrip("?"), pos + 1
        head, pos = tokens[pos + 1], pos + 2
        args = []
        while tokens[pos] != ")":
            arg, pos = term(tokens, pos)
            args.append(arg)
        return (head, *args), pos + 1

    equations = []
    for line in text.splitlines():
        if line.strip():
            lhs, rhs = line.split("=>")
            equations.append((term(re.findall(r"[()]|[^\s()]+", lhs), 0)[0], term(re.findall(r"[()]|[^\s()]+", rhs), 0)[0]))
    return equations


def normalize(t: Term) -> Term:
    """One form for both files: numbers as ints, matmul with its activation, concat without its
    rank, enlarge to a size."""
    if isinstance(t, str):
        return int(t) if re.fullmatch(r"-?\d+", t) else t
    head, args = t[0], [normalize(a) for a in t[1:]]
    if head == "matmul" and len(args) == 2:
        args = [0, *args]
    if head == "concat" and len(args) == 4:
        args = [args[0], args[2], args[3]]
    if head in ("poolavg", "poolmax") and len(args) == 6:
        args = [*args[:5], 0, args[5]]
    activation = {"matmul": 0, "conv2d": 3, "poolavg": 5, "poolmax": 5}.get(head)
    if activation is not None and args[activation] != 0:  # a fused activation is an op of its own in Relax
        if args[activation] not in _ACTIVATIONS:
            raise Untranslatable(f"activation {args[activation]}")
        act, args[activation] = _ACTIVATIONS[args[activation]], 0
        return (act, (head, *args))
    return (head, *args)


# --- translating --------------------------------------------------------------------------


class Untranslatable(Exception):
    """An equation with no Relax rule; the message says why (the reason counted in the docstring)."""


def identity_kernel(channels: int, kh: int, kw: int) -> np.ndarray:
    """TASO's Iconv: a ``channels x channels`` kernel whose centre tap copies each channel to itself."""
    kernel = np.zeros((channels, channels, kh, kw))
    kernel[np.arange(channels), np.arange(channels), (kh - 1) // 2, (kw - 1) // 2] = 1.0
    return kernel


def average_kernel(channels: int, kh: int, kw: int) -> np.ndarray:
    """TASO's Cpool: a depthwise kernel averaging its window (padding counted, as TASO's pooling)."""
    return np.full((channels, 1, kh, kw), 1.0 / (kh * kw))


def identity_matrix(n: int) -> np.ndarray:
    """TASO's Imatmul."""
    return np.eye(n)


def ones(shape: tuple[int, ...]) -> np.ndarray:
    """TASO's Iewmul."""
    return np.ones(shape)


def swap_last_two(n: Any) -> attr.AttrExpr:
    """The axes ``(0, ..., n - 3, n - 1, n - 2)``: permute_dims of these transposes each matrix of a
    stack of rank ``n``."""
    i = attr.Symbol("i")
    return attr.Variadic(attr.Cond(i == n - 2, n - 1, attr.Cond(i == n - 1, n - 2, i)), index=i, length=n)


def same_padding(kernel: pat.Pattern) -> tuple:
    """TASO's SAME padding at stride 1 for an odd kernel: ``(k - 1) / 2`` on each side."""
    kh, kw = (kernel.shape[2] - 1) // 2, (kernel.shape[3] - 1) // 2
    return (kh, kw, kh, kw)


@dataclass
class _Side:
    """Builds the patterns of one side; identical sub-terms are one pattern (on both outputs)."""

    inputs: dict[str, pat.Pattern]
    source: bool
    #: Whether element-wise pairs may broadcast (a pointwise equation: see :func:`pointwise`).
    broadcast: bool = False
    where: list[attr.AttrExpr] = field(default_factory=list)
    built: dict[Term, pat.Pattern] = field(default_factory=dict)
    #: The source's patterns, for a target side: guards on them make its ops typable as TASO's are.
    matched: frozenset = frozenset()
    #: Target patterns' shapes as expressions over the source's, where the translation knows them.
    shapes: dict[int, Any] = field(default_factory=dict)
    #: Whether the equation is one of matrices (it holds a matmul or a transpose): its matmuls
    #: may have a batched left operand, and its concat and split axes count from the end.
    matrices: bool = False
    #: Kernels the source's convs must read ungrouped, besides TASO's classes of kernels.
    ungrouped: frozenset = frozenset()
    #: An enlarge on this side: to a larger size (True: a pad) or to the kernel's own (False: the
    #: kernel itself); None: either, a pad.
    enlarging: bool | None = None

    def shape(self, p: pat.Pattern) -> Any:
        """``p``'s shape as an expression over matched patterns, or None if unknown."""
        return p.shape if self.source or p in self.matched else self.shapes.get(id(p))

    def _shaped(self, p: pat.Pattern, shape: Any) -> pat.Pattern:
        if shape is not None and not self.source:
            self.shapes[id(p)] = attr.to_attr(shape) if isinstance(shape, tuple) else shape
        return p

    def __call__(self, t: Term, context: Context = frozenset()) -> pat.Pattern:
        """The pattern of term ``t``; ``context`` gives what sizes a constant inside it: the data of
        the conv whose kernel it is in (``data``), the other operand of its matmul or ewmul (``peer``)."""
        if t in _CONSTANTS:
            t = (t,)
        if isinstance(t, str):
            if t not in self.inputs:
                if not self.source:
                    raise Untranslatable(f"the right side reads {t}, which the left side does not")
                self.inputs[t] = pat.Wildcard()
            return self.inputs[t]
        key = (t, tuple(sorted((k, id(v)) for k, v in context))) if _sized_by_context(t) else t
        if key not in self.built:
            self.built[key] = self._make(t, dict(context))
        return self.built[key]

    def _make(self, t: tuple, context: dict[str, pat.Pattern]) -> pat.Pattern:
        head, *args = t
        inherited = frozenset((k, v) for k, v in context.items() if k == "data")
        if head in ("ewadd", "ewmul"):
            a = self(args[0], inherited)
            b = self(args[1], inherited | {("peer", a)})
            sa, sb = self.shape(a), self.shape(b)
            if not self.broadcast:
                self._guard(lambda: sa == sb, sa, sb)
            self._same_dtype(a, b)
            return self._shaped((op.Add if head == "ewadd" else op.Multiply)(a, b), None if self.broadcast else sa)
        if head == "smul":
            a, s = self(args[0], inherited), self(args[1])
            if not self.broadcast:
                self._guard(lambda: s.ndim == 0)
            return self._shaped(op.Multiply(a, s), None if self.broadcast else self.shape(a))
        if head == "matmul":
            # TASO's matrices: a left operand of rank >= 2 (a stack of matrices) against a matrix
            a = self(args[1])
            b = self(args[2], frozenset({("peer", a)}))
            sa, sb = self.shape(a), self.shape(b)
            self._guard(lambda: attr.Len(sa) >= 2, sa)
            self._guard(lambda: attr.Len(sb) == 2, sb)
            return self._shaped(op.MatMul(a, b), None if sa is None or sb is None else sa[:-1] + attr.Tuple(sb[1]))
        if head in ("relu", "sigmoid", "tanh"):
            a = self(args[0], inherited)
            return self._shaped({"relu": op.ReLU, "sigmoid": op.Sigmoid, "tanh": op.Tanh}[head](a), self.shape(a))
        if head == "transpose":
            # of the last two axes (of each matrix in a stack)
            a = self(args[0])
            sa = self.shape(a)
            self._guard(lambda: attr.Len(sa) >= 2, sa)
            if self.source:
                tr = op.Transpose(a)
                n = a.ndim
                # no axes reverses them all: a swap of the last two in a matrix only
                self._guard(lambda: attr.Cond(tr.axes == None, n == 2,  # noqa: E711  (builds an expression)
                                              attr.Map(tr.axes, lambda d: d % n) == swap_last_two(n)))
                return tr
            return self._shaped(op.Transpose(a, axes=swap_last_two(a.ndim)),
                                None if sa is None else sa[:-2] + attr.Tuple(sa[-1], sa[-2]))
        if head == "concat":
            a, b = self(args[1], inherited), self(args[2], inherited)
            sa, sb = self.shape(a), self.shape(b)
            if self.matrices:  # TASO's axis of a matrix, counted from the end: -2 rows, -1 columns
                axis = args[0] - 2
                self._guard(lambda: (attr.Len(sa) == attr.Len(sb)) & (attr.Len(sa) >= 2) & (sa[:axis] == sb[:axis])
                            & (sa[axis + 1:] == sb[axis + 1:] if axis < -1 else True), sa, sb)
            else:
                axis = args[0]
                self._guard(lambda: (attr.Len(sa) == attr.Len(sb)) & (attr.Len(sa) > axis) & (sa[:axis] == sb[:axis])
                            & (sa[axis + 1:] == sb[axis + 1:]), sa, sb)
            if self.source:
                cat = op.Concatenate((a, b))
                self._guard(lambda: cat.axis % a.ndim == (a.ndim + axis if axis < 0 else axis))
                return cat
            cat = op.Concatenate((a, b), axis=axis)
            self._same_dtype(a, b)
            if sa is not None and sb is not None:
                after = sa[axis + 1:] if axis != -1 else ()
                return self._shaped(cat, sa[:axis] + attr.Tuple(sa[axis] + sb[axis]) + after)
            return cat
        if head == "conv2d":
            return self._conv(*args)
        if head in ("poolavg", "poolmax"):
            return self._pool(head, *args, context=inherited)
        if head == "enlarge":
            if self.source:
                raise Untranslatable("enlarge on the left side")
            if len(args) == 2:  # TENSAT's: to the size of a reference kernel
                w, reference = args
                size = self(reference).shape
                kh, kw = size[2], size[3]
            else:
                kh, kw, w = args if len(args) == 3 else (3, 3, args[0])
            kernel = self(w)
            sk = self.shape(kernel)
            if self.enlarging is False:
                if sk is None:
                    raise Untranslatable("an enlarge of a kernel of unknown size")
                self._guard(lambda: (sk[2] == kh) & (sk[3] == kw), sk)
                return kernel
            self._guard(lambda: (sk[2] <= kh) & (sk[3] <= kw) & ((kh - sk[2]) % 2 == 0) & ((kw - sk[3]) % 2 == 0), sk)
            if self.enlarging:
                self._guard(lambda: (sk[2] < kh) | (sk[3] < kw), sk)
            dh, dw = (kh - kernel.shape[2]) // 2, (kw - kernel.shape[3]) // 2
            enlarged = op.Pad(kernel, pad_width=(0, 0, 0, 0, dh, dh, dw, dw))
            return self._shaped(enlarged, None if sk is None else (sk[0], sk[1], kh, kw))
        if head in _CONSTANTS:
            return self._constant(head, args, context)
        if head == "merge":
            return self._merge(*args, data=context.get("data"))
        if head in ("split_0", "split_1"):
            split = self(args[0])
            return split[int(head[-1])]
        if head == "split":
            axis, inner = args
            boundary = _boundary(inner)
            if boundary is None:
                raise Untranslatable("a split with no single concat inside to take its boundary from")
            cat_axis, first = boundary
            if self.matrices:
                axis, cat_axis = axis - 2, cat_axis - 2
            return op.Split(self(inner), indices_or_sections=(self(first).shape[cat_axis],), axis=axis)
        raise Untranslatable(f"op {head} has no Relax meaning here")

    def _conv(self, sh: int, sw: int, padding: int, act: int, x: Term, w: Term) -> pat.Pattern:
        data = self(x)
        kernel = self(w, frozenset({("data", data)}))
        if self.source:
            pad = same_padding(kernel) if padding == _SAME else (0, 0, 0, 0)
            # TASO's kernels (input_10 to input_18) read every channel of their input: ungrouped.
            groups = {"groups": 1} if isinstance(w, str) and (_class_of(w) in _UNGROUPED or w in self.ungrouped) else {}
            conv = op.Conv2D(data, kernel, strides=(sh, sw), padding=pad, dilation=(1, 1), **groups, **NCHW)
            if padding == _SAME:
                self._guard(lambda: (kernel.shape[2] % 2 == 1) & (kernel.shape[3] % 2 == 1))
        else:
            pad = same_padding(kernel) if padding == _SAME else 0
            conv = op.Conv2D(data, kernel, strides=(sh, sw), padding=pad, groups=data.shape[1] // kernel.shape[1], **NCHW)
        return conv

    def _merge(self, w: Term, count: int, data: pat.Pattern | None) -> pat.Pattern:
        """TASO's merge_gconv: the kernel of a conv of ``count`` times fewer groups computing the same,
        block-diagonal: each new group holds ``count`` old ones, each reading its own channels (zeros
        for the others'). Folded with the kernel's other parameters, as TASO computes it once."""
        if self.source:
            raise Untranslatable("merge on the left side")
        if data is None:
            raise Untranslatable("a merge outside a conv's kernel")
        kernel = self(w)
        sk = self.shape(kernel)
        if sk is None:
            raise Untranslatable("a merge of a kernel of unknown shape")
        groups = data.shape[1] // kernel.shape[1]
        self._guard(lambda: groups % count == 0, sk)
        out, per_group, kh, kw = kernel.shape[0], kernel.shape[1], kernel.shape[2], kernel.shape[3]
        blocks = op.Reshape(kernel, shape=(groups // count, count, out // groups, 1, per_group, kh, kw))
        diagonal = op.Reshape(op.Eye(n=count, m=count, dtype=kernel.dtype), shape=(1, count, 1, count, 1, 1, 1))
        merged = op.Reshape(op.Multiply(blocks, diagonal), shape=(out, count * per_group, kh, kw))
        return self._shaped(merged, (sk[0], sk[1] * count, sk[2], sk[3]))

    def _pool(self, head: str, kh: int, kw: int, sh: int, sw: int, padding: int, act: int, x: Term,
              context: Context = frozenset()) -> pat.Pattern:
        if padding == _SAME and (kh % 2 == 0 or kw % 2 == 0):
            raise Untranslatable("SAME pooling with an even window")
        pad = ((kh - 1) // 2, (kw - 1) // 2, (kh - 1) // 2, (kw - 1) // 2) if padding == _SAME else (0, 0, 0, 0)
        pool = op.AvgPool2D if head == "poolavg" else op.MaxPool2D
        extra = {"count_include_pad": True} if head == "poolavg" else {}
        return pool(self(x, context), pool_size=(kh, kw), strides=(sh, sw), padding=pad, dilation=(1, 1),
                    ceil_mode=False, layout="NCHW", **extra)

    def _constant(self, head: str, args: list, context: dict[str, pat.Pattern]) -> pat.Pattern:
        if self.source:
            raise Untranslatable("a constant on the left side")
        sizer = context.get("data" if head in ("Iconv", "Cpool") else "peer")
        if sizer is None:
            raise Untranslatable(f"{head} where no operand built before it gives its size")
        known = self.shape(sizer)
        if head in ("Iconv", "Cpool"):
            fill = identity_kernel if head == "Iconv" else average_kernel
            kernel = pat.Const(fill=fill, channels=sizer.shape[1], kh=args[0], kw=args[1], dtype=sizer.dtype)
            channels = None if known is None else known[1]
            return self._shaped(kernel, None if known is None else (channels, channels if head == "Iconv" else 1, *args))
        if head == "Imatmul":
            return self._shaped(pat.Const(fill=identity_matrix, n=sizer.shape[-1], dtype=sizer.dtype),
                                None if known is None else attr.Tuple(known[-1], known[-1]))
        return self._shaped(pat.Const(fill=ones, shape=sizer.shape, dtype=sizer.dtype), known)

    def _same_dtype(self, a: pat.Pattern, b: pat.Pattern) -> None:
        """A target's binary op of two matched tensors types only if their dtypes agree (the
        source's were typed by TVM already)."""
        if not self.source and a in self.matched and b in self.matched:
            self.where.append(a.dtype == b.dtype)

    def _guard(self, build: Callable[[], attr.AttrExpr], *shapes: Any) -> None:
        """Require the expression ``build()`` of every match when the ``shapes`` it reads are known:
        on the left side always (where a smul is, there is no other guard to add); on the right side
        when they are expressions over matched patterns (TASO applies a rule only where its right
        side is typed, without broadcasting)."""
        if self.source or (shapes and all(s is not None for s in shapes)):
            self.where.append(build())


_CONSTANTS = ("Iconv", "Cpool", "Imatmul", "Iewmul")
Context = frozenset  # of (what, pattern): what sizes the constants of a sub-term


def _sized_by_context(t: Term) -> bool:
    """Whether term ``t`` holds a constant or a merge, whose shape the conv or operand around it gives."""
    return t in _CONSTANTS or _holds(t, (*_CONSTANTS, "merge"))


def _holds(t: Term, heads: tuple[str, ...]) -> bool:
    """Whether term ``t`` holds an op of ``heads``."""
    return isinstance(t, tuple) and (t[0] in heads or any(_holds(a, heads) for a in t[1:]))


def _boundary(t: Term) -> tuple[int, Term] | None:
    """The axis and first operand of the one concat inside ``t``, if there is exactly one."""
    found = list(_concats(t))
    return found[0] if len(found) == 1 else None


def _concats(t: Term) -> Iterator[tuple[int, Term]]:
    if isinstance(t, tuple):
        if t[0] == "concat":
            yield t[1], t[2]
        for a in t[1:]:
            yield from _concats(a)


#: TASO's generator verified its equations on fixed shapes, one per class of input names: matrices
#: (input_1-3), square weights (4-6), images (7-9), 3x3, 1x3 and 3x1 kernels (10-12, 13-15, 16-18).
_CLASSES = ((1, 2, 3), (4, 5, 6), (7, 8, 9), (10, 11, 12), (13, 14, 15), (16, 17, 18))


_UNGROUPED = _CLASSES[3:]


def _merged_kernels(terms: tuple[Term, ...], in_kernel: bool = False) -> frozenset[str]:
    """The inputs that ``terms`` concatenate or enlarge into a conv's kernel: the two sides agree only
    if these kernels are ungrouped (TENSAT's hand-written rules name them input_2, input_3, outside
    TASO's classes of kernels)."""
    found: set[str] = set()
    for t in terms:
        if not isinstance(t, tuple):
            continue
        if in_kernel and t[0] in ("concat", "enlarge"):
            found |= {a for a in t[1:] if isinstance(a, str)}
        if t[0] == "conv2d":  # (conv2d sh sw p act x w): w and what is inside it build a kernel
            found |= _merged_kernels(t[1:6], in_kernel) | _merged_kernels(t[6:], in_kernel=True)
        else:
            found |= _merged_kernels(t[1:], in_kernel)
    return frozenset(found)


def _class_of(name: str) -> tuple[int, ...] | None:
    k = int(name.rsplit("_", 1)[1])
    return next((c for c in _CLASSES if k in c), None)


def _grouped_merge(terms: Iterator[Term] | tuple[Term, ...]) -> bool:
    """Whether ``terms`` hold a conv of a channel concat: a grouped conv of several inputs, whose
    groups align only where the inputs and kernels merged have one shape each (TASO's classes)."""
    for t in terms:
        if isinstance(t, tuple):
            data = t[5] if t[0] == "conv2d" else None
            if isinstance(data, tuple) and data[0] == "concat" and data[1] == 1:
                return True
            if _grouped_merge(t[1:]):
                return True
    return False


def _same_class_guards(inputs: dict[str, pat.Pattern], matrices: bool = False) -> list[attr.AttrExpr]:
    """Inputs of one class have one shape, as where TASO verified the equation: needed where two
    kernels of different output counts, merged into one grouped conv, would misalign its groups
    (:func:`_grouped_merge`); in an equation of matrices, one matrix shape: the last two axes (a
    stack of them may be batched)."""
    guards = []
    for members in _CLASSES:
        present = [inputs[f"input_{k}"] for k in members if f"input_{k}" in inputs]
        # every pair, so that whichever input a match (or a draw) meets first fixes the others
        guards += [p.shape[-2:] == q.shape[-2:] if matrices else p.shape == q.shape
                   for i, p in enumerate(present) for q in present[i + 1:]]
    return guards


_POINTWISE = frozenset({"ewadd", "ewmul", "smul", "relu", "sigmoid", "tanh", "Iewmul"})


def pointwise(*terms: Term) -> bool:
    """Whether ``terms`` hold only element-wise ops. TASO verified its equations on tensors of one
    shape, so an equation of such terms is an identity of scalars, and it holds as well where Relax
    broadcasts: each output element is the same scalar function of the inputs' elements it reads
    (whether the two sides have one output type is checked at every match)."""
    return all(t in _POINTWISE if t in _CONSTANTS else not isinstance(t, tuple) or (t[0] in _POINTWISE and pointwise(*t[1:]))
               for t in terms)


def translate(lhs: list[Term], rhs: list[Term], name: str, symmetric: bool = False,
              enlarging: bool | None = None) -> Subst:
    """The GSL rule of one TASO equation (or a multi-pattern rule: one equation per output).
    ``symmetric``: as TENSAT takes TASO's learned two-output rules, symmetric wherever the
    translated source reads the same with its outputs swapped (``Subst(symmetric=True)``).
    ``enlarging``: the right side's enlarge pads its kernel to a larger size (True), or is matched
    only where the kernel has that size already and is the kernel itself (False), or either (None)."""
    if lhs == rhs:
        raise Untranslatable("both sides are the same term")
    inputs: dict[str, pat.Pattern] = {}
    broadcast = pointwise(*lhs, *rhs)
    matrices = any(_holds(t, ("matmul", "transpose")) for t in (*lhs, *rhs))
    source = _Side(inputs, source=True, broadcast=broadcast, matrices=matrices, ungrouped=_merged_kernels(tuple(rhs)))
    src = [source(t) for t in lhs]
    if not broadcast and _grouped_merge((*lhs, *rhs)):
        source.where.extend(_same_class_guards(inputs, matrices))
    matched = frozenset((*inputs.values(), *source.built.values()))
    target = _Side(inputs, source=False, broadcast=broadcast, where=source.where, matched=matched, matrices=matrices,
                   enlarging=enlarging)
    tgt = [target(t) for t in rhs]

    def build(mirrored: bool) -> Subst:
        return Subst(src if len(src) > 1 else src[0], tgt if len(tgt) > 1 else tgt[0], name=name,
                     where=source.where, symmetric=mirrored)

    try:
        if symmetric and len(src) == 2:
            with contextlib.suppress(SourcePatternError):  # sources that differ: applied both ways, as TENSAT does
                rule = build(True)
                if rule.connected:  # merges of two inputs stay both ways (LEARNED_MULTI)
                    return rule
        return build(False)
    except GSLError as err:
        raise Untranslatable(f"GSL rejects it: {type(err).__name__}") from err


# --- the libraries --------------------------------------------------------------------------


@dataclass
class Translation:
    """What translating one file gave: the rules, and each equation left out with its reason."""

    file: str
    parsed: int
    rules: list[Subst]
    left_out: dict[str, list[str]]  # reason -> rule names
    #: Each rule's equation(s), by rule name: the normalized left and right terms.
    equations: dict[str, tuple[tuple[Term, ...], tuple[Term, ...]]] = field(default_factory=dict)

    def key(self, rule: Subst) -> tuple:
        """What tells two rules apart (TASO's lists repeat equations): the equation, and whether
        the rule's enlarge pads (:data:`ENLARGED`)."""
        return self.equations[rule.name], rule.name.endswith(ENLARGED)


@functools.cache
def _equations(file: str) -> tuple[tuple[Term, Term], ...]:
    text = _data(file)
    parse = parse_taso if file in ("single_rules.txt", "multi_rules.txt") else parse_tensat
    return tuple((normalize(lhs), normalize(rhs)) for lhs, rhs in parse(text))


def _renamed(t: Term) -> Term:
    """``t`` with its inputs renamed in order of appearance, as TENSAT compares two sources."""
    names: dict[str, str] = {}

    def rename(u: Term) -> Term:
        if isinstance(u, tuple):
            return tuple(rename(v) for v in u)
        return names.setdefault(u, f"input_{len(names)}") if isinstance(u, str) and u.startswith("input_") else u

    return rename(t)


def translation(file: str) -> Translation:
    """Translate every equation of ``file`` (two consecutive equations per rule in the multi files)."""
    equations = _equations(file)
    step = 2 if "multi" in file else 1
    result = Translation(file, len(equations) // step, [], {})
    for k in range(0, len(equations), step):
        group = equations[k:k + step]
        name = f"taso:{file}#{k}"
        lhs, rhs = tuple(e[0] for e in group), tuple(e[1] for e in group)
        symmetric = file in LEARNED_MULTI and len(lhs) == 2 and _renamed(lhs[0]) == _renamed(lhs[1])
        # an enlarge to the kernel's own size is the kernel: that case is a rule of its own, so that the
        # e-graph does not hold a padded copy of each kernel (and every merge built on it twice)
        variants = [(name, False), (name + ENLARGED, True)] if any(_holds(t, ("enlarge",)) for t in rhs) else [(name, None)]
        try:
            translated = [translate(list(lhs), list(rhs), variant, symmetric, enlarging) for variant, enlarging in variants]
        except Untranslatable as why:
            result.left_out.setdefault(str(why), []).append(name)
            continue
        result.rules.extend(translated)
        result.equations.update((rule.name, (lhs, rhs)) for rule in translated)
    return result


#: The suffix of the name of an equation's rule whose enlarge pads its kernel (:func:`translation`).
ENLARGED = "/enlarged"


#: TASO's learned two-output rules, in TASO's and TENSAT's spelling. TENSAT applies one of each
#: mirrored pair of matches of those whose two sources are the same term but for input names
#: (:func:`_renamed`), its hand-written ones both ways. So do these rules (``Subst(symmetric=True)``),
#: but for those whose sources share no input (``relu(a), relu(b)``): applied one way, their
#: merged relus over a concat in the other order than the concat reading them, which loses part of
#: Inception-v3's speedup (even keeping the pair in graph order) to save hardly any e-nodes.
LEARNED_MULTI = ("multi_rules.txt", "converted_multi.txt")
#: TASO's hand-written substitutions, as TENSAT writes them: two convs of one input merged, the
#: smaller kernel enlarged to the other's size (two-output rules), and a grouped conv's groups merged.
HAND_WRITTEN = ("predefined_multi.txt", "predefined.txt")
#: The files of TENSAT's experiment set (:func:`tensat`).
TENSAT_FILES = ("converted.txt", "converted_multi.txt", *HAND_WRITTEN)


def taso() -> list[Subst]:
    """Every TASO equation with a Relax meaning: ``single_rules.txt``, ``multi_rules.txt`` and the
    hand-written ones (:data:`HAND_WRITTEN`)."""
    return [r for file in ("single_rules.txt", "multi_rules.txt", *HAND_WRITTEN) for r in translation(file).rules]


def tensat() -> list[Subst]:
    """TENSAT's experiment set: ``converted.txt`` (single-pattern), ``converted_multi.txt`` and
    TASO's hand-written rules its experiments add (:data:`HAND_WRITTEN`)."""
    return [r for file in TENSAT_FILES for r in translation(file).rules]
