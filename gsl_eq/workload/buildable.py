"""Which op calls TVM can build: folding must not try, and extraction must not price as folded
away, a computation TVM cannot compute.

A call computed from parameters alone is folded into a new parameter and costs nothing at run
time, but only if TVM can build it (its LLVM code generator rejects, for instance, a cumsum or
an ``equal`` over booleans; :func:`gsl_eq.rules.legalize` rewrites those). :func:`unbuildable`
(and :func:`why_unbuildable`, with TVM's reason) answers for a batch of call signatures at
once: one module holding every unknown call, each on parameters of its own, is built; if that fails the batch is halved until the calls that fail
alone are found. Answers are kept for the process by kind of call (:func:`kind`: the op, its
attributes but lists of sizes, and its types' dtypes and ranks), and one call of each kind is
built: TVM's code generators refuse ops and dtypes, not sizes. Were one to refuse a size, the
result's own build (optimize builds and runs what it returns) would fail and fall back to the
next candidate, never return it.

    calls = [("relax.cumsum", (("axis", 1), ("dtype", None), ("exclusive", False)),
              (TensorType((1, 8), "bool"),), TensorType((1, 8), "bool"))]
    unbuildable(calls)      # {calls[0]}
"""

from __future__ import annotations

from typing import Any, Hashable, Iterable

from tvm import relax

from ..graph import Graph, Kind, Node, TupleType, Type, to_relax
from ..graph.ops import freeze

#: A call signature: op name, frozen attributes (sorted (name, value) pairs), input types, output type.
Call = tuple[str, tuple[tuple[str, Any], ...], tuple[Type, ...], Type]

_known: dict[Hashable, str | None] = {}  # per kind of call: why TVM cannot build it, None if it can


def unbuildable(calls: Iterable[Call]) -> set[Call]:
    """The signatures among ``calls`` that TVM cannot build for the CPU (``llvm``)."""
    return set(why_unbuildable(calls))


def why_unbuildable(calls: Iterable[Call]) -> dict[Call, str]:
    """The signatures among ``calls`` that TVM cannot build for the CPU, each with the first line
    of TVM's error."""
    calls = list(dict.fromkeys(calls))
    one_of_each = {kind(c): c for c in reversed(calls)}
    _probe([c for k, c in one_of_each.items() if k not in _known])
    return {c: reason for c in calls if (reason := _known[kind(c)]) is not None}


def signature(node: Node) -> Call:
    """The call signature of graph node ``node`` (a call)."""
    assert node.kind is Kind.CALL and node.op is not None
    return node.op, freeze(node.attrs), tuple(i.type for i in node.inputs), node.type


def kind(call: Call) -> Hashable:
    """What building ``call`` depends on: its op, its attributes but lists of sizes (a new shape,
    paddings), and its types' dtypes and ranks."""
    op, attrs, inputs, output = call
    return op, tuple((k, v) for k, v in attrs if not _sizes(v)), tuple(map(_ranked, inputs)), _ranked(output)


def _sizes(value: Any) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def _ranked(ty: Type) -> Hashable:
    if isinstance(ty, TupleType):
        return tuple(map(_ranked, ty.fields))
    return ty.dtype, len(ty.shape)


def _probe(calls: list[Call]) -> None:
    if not calls:
        return
    try:
        relax.build(_module(calls), target="llvm")
    except Exception as error:  # noqa: BLE001 - TVM raises many kinds; every call is retried below
        if len(calls) == 1:
            _known[kind(calls[0])] = first_line(error)
            return
        half = len(calls) // 2
        _probe(calls[:half])
        _probe(calls[half:])
        return
    _known.update(dict.fromkeys(map(kind, calls)))


def first_line(error: Exception) -> str:
    """The first line of an error's message (TVM's are long), at most 300 characters."""
    return next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)[:300]


def _module(calls: list[Call]) -> Any:
    """One function returning every call of ``calls``, each on fresh parameters of its input types."""
    params: list[Node] = []

    def argument(ty: Type) -> Node:
        if isinstance(ty, TupleType):
            return Node.tuple([argument(f) for f in ty.fields])
        params.append(Node.var(f"p{len(params)}", ty))
        return params[-1]

    outputs = [Node.call(op, [argument(t) for t in inputs], dict(attrs), type=output)
               for op, attrs, inputs, output in calls]
    return to_relax(Graph(params, outputs, returns_tuple=True))


__all__ = ["Call", "kind", "signature", "unbuildable", "why_unbuildable"]
