"""Which op calls TVM can build: extraction must not price a computation as folded away when
TVM cannot compute it.

A call computed from parameters alone is folded into a new parameter and costs nothing at run
time, but only if TVM can build it (its LLVM code generator rejects, for instance, a cumsum or
an ``equal`` over booleans; :func:`gsl_eq.rules.legalize` rewrites those). :func:`unbuildable`
answers for a batch of call signatures at once: one module holding every unknown call, each on
parameters of its own, is built; if that fails the batch is halved until the calls that fail
alone are found. Answers are kept for the process, so a signature is built once.

    calls = [("relax.cumsum", (("axis", 1), ("dtype", None), ("exclusive", False)),
              (TensorType((1, 8), "bool"),), TensorType((1, 8), "bool"))]
    unbuildable(calls)      # {calls[0]}
"""

from __future__ import annotations

from typing import Any, Hashable, Iterable

from tvm import relax

from ..graph import Graph, Node, TupleType, Type, to_relax

#: A call signature: op name, frozen attributes (sorted (name, value) pairs), input types, output type.
Call = tuple[str, tuple[tuple[str, Any], ...], tuple[Type, ...], Type]

_known: dict[Hashable, bool] = {}


def unbuildable(calls: Iterable[Call]) -> set[Call]:
    """The signatures among ``calls`` that TVM cannot build for the CPU (``llvm``)."""
    calls = list(dict.fromkeys(calls))
    _probe([c for c in calls if c not in _known])
    return {c for c in calls if not _known[c]}


def _probe(calls: list[Call]) -> None:
    if not calls:
        return
    try:
        relax.build(_module(calls), target="llvm")
    except Exception:  # noqa: BLE001 - TVM raises many kinds; every call is retried below
        if len(calls) == 1:
            _known[calls[0]] = False
            return
        half = len(calls) // 2
        _probe(calls[:half])
        _probe(calls[half:])
        return
    _known.update(dict.fromkeys(calls, True))


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


__all__ = ["Call", "unbuildable"]
