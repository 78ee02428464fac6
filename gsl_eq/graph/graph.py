"""The computation graph GSL works on: a DAG of expressions, matched and rewritten by rules.

A graph is a DAG of :class:`Node` values. A node is one of the five forms of the
expression language: a variable (a function parameter, with shape and dtype), a
constant, an op call with attributes, a tuple, or a projection out of a tuple
whose index is its ``index`` attribute. Inputs are ordered (the predecessor
sequence ``pred(v)``). Nodes compare by identity: two nodes are the same
expression only if they come from the same definition.

Nodes are never changed after construction; transformations build new nodes and
new graphs (:meth:`Graph.replace`).
"""

from __future__ import annotations

from collections import Counter
from enum import Enum
from typing import Any, Hashable, Iterable, Mapping, Sequence

import numpy as np

from . import ops
from .types import TensorType, TupleType, Type


class Kind(str, Enum):
    """The five forms of a :class:`Node`: a variable, a constant, an op call, a tuple, or a
    projection out of a tuple (``GETITEM``, its index in ``attrs["index"]``)."""

    VAR = "var"
    CONST = "const"
    CALL = "call"
    TUPLE = "tuple"
    GETITEM = "getitem"


class Node:
    """One vertex: kind, op name (calls), ordered inputs, plain attributes and type.

    Build nodes with the constructors :meth:`var`, :meth:`const`, :meth:`call`,
    :meth:`tuple` and :meth:`getitem`; a call's type is inferred by TVM::

        x = Node.var("x", TensorType((1, 8), "float32"))
        y = Node.call("relax.nn.relu", [x])
        assert y.type == x.type

    Parameters
    ----------
    kind
        The node's :class:`Kind`.
    type
        Its type (a :class:`~gsl_eq.graph.types.TensorType` or a
        :class:`~gsl_eq.graph.types.TupleType`).
    inputs
        Its ordered inputs.
    op
        A call's Relax op name (``"relax.nn.conv2d"``).
    attrs
        Its plain attributes (a call's, or a projection's ``index``).
    name
        A variable's name.
    value
        A constant's value.
    """

    __slots__ = ("kind", "op", "inputs", "attrs", "type", "name", "value", "_label")

    def __init__(
        self,
        kind: Kind,
        type: Type,
        inputs: Sequence["Node"] = (),
        op: str | None = None,
        attrs: Mapping[str, Any] | None = None,
        name: str | None = None,
        value: np.ndarray | None = None,
    ):
        self.kind = kind
        self.type = type
        self.inputs: tuple[Node, ...] = tuple(inputs)
        self.op = op
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.name = name
        self.value = value
        self._label: Hashable | None = None  # gsl_eq.graph.diff.label's, made when first asked for

    @staticmethod
    def var(name: str, type: TensorType) -> "Node":
        """A variable (a function parameter) named ``name`` of tensor type ``type``.

        Parameters
        ----------
        name
            The parameter's name.
        type
            Its :class:`~gsl_eq.graph.types.TensorType`.
        """
        return Node(Kind.VAR, type, name=name)

    @staticmethod
    def const(value: np.ndarray) -> "Node":
        """A constant holding ``value``, typed by its shape and dtype.

        Parameters
        ----------
        value
            An array, or anything ``np.asarray`` takes.
        """
        value = np.asarray(value)
        return Node(Kind.CONST, TensorType(value.shape, str(value.dtype)), value=value)

    @staticmethod
    def call(op: str, inputs: Sequence["Node"], attrs: Mapping[str, Any] | None = None, type: Type | None = None) -> "Node":
        """A call of Relax op ``op``.

        Unless ``type`` is given (by the loader, from TVM), TVM infers it and
        completes ``attrs`` with their canonical defaults.

        Parameters
        ----------
        op
            The op's name, with or without the ``relax.`` prefix.
        inputs
            Its data inputs, in order.
        attrs
            Its attributes, by the keyword names of its constructor in ``tvm.relax.op``.
        type
            Its output type, when known; None: inferred by TVM.

        Raises
        ------
        KeyError
            An unknown op.
        TypeError
            TVM rejects the call.
        """
        sig = ops.signature(op)
        attrs = dict(attrs or {})
        if type is None:
            type, attrs = ops.infer(sig.name, attrs, [i.type for i in inputs])
        return Node(Kind.CALL, type, inputs, op=sig.name, attrs=attrs)

    @staticmethod
    def tuple(fields: Sequence["Node"]) -> "Node":
        """A tuple of ``fields``, in order.

        Parameters
        ----------
        fields
            The nodes the tuple holds.
        """
        return Node(Kind.TUPLE, TupleType(tuple(f.type for f in fields)), fields)

    @staticmethod
    def getitem(tup: "Node", index: int) -> "Node":
        """Item ``index`` of the tuple-valued node ``tup``.

        Parameters
        ----------
        tup
            A node of tuple type.
        index
            The item's position, from 0.

        Raises
        ------
        TypeError
            ``tup`` is not a tuple, or has no item ``index``.
        """
        if not isinstance(tup.type, TupleType) or not 0 <= index < len(tup.type.fields):
            raise TypeError(f"cannot take item {index} of a value of type {tup.type}")
        return Node(Kind.GETITEM, tup.type.fields[index], [tup], attrs={"index": index})

    def with_inputs(self, inputs: Sequence["Node"]) -> "Node":
        """A copy of this node reading ``inputs`` instead (same kind, op, attrs and type)."""
        copy = Node(self.kind, self.type, inputs, self.op, self.attrs, self.name, self.value)
        copy._label = self._label
        return copy

    def attr(self, name: str) -> Any:
        """An attribute of the node: an op attribute, ``index``, or ``shape``/``dtype``/``ndim`` of its type.

        Parameters
        ----------
        name
            The attribute's name.

        Raises
        ------
        KeyError
            The node has no such attribute.
        """
        if name in self.attrs:
            return self.attrs[name]
        if isinstance(self.type, TensorType) and name in ("shape", "dtype", "ndim"):
            return getattr(self.type, name)
        raise KeyError(f"{self} has no attribute {name!r}")

    def __repr__(self) -> str:
        if self.kind is Kind.VAR:
            return f"%{self.name}"
        if self.kind is Kind.CALL:
            return f"{self.op}({len(self.inputs)} inputs)"
        if self.kind is Kind.GETITEM:
            return f"getitem[{self.attrs['index']}]"
        return f"{self.kind.value}:{self.type}"


class Graph:
    """A computation graph: the function parameters (in order) and its outputs.

    ``inputs`` are the variable nodes of the function's parameters, runtime inputs
    and model parameters alike, in signature order. ``outputs`` are the returned
    values; ``returns_tuple`` tells that the function returns them as a tuple
    (always true with more than one output). Iterating a graph, or taking its ``len``, walks
    the nodes its outputs reach (:meth:`rpo`).

    Parameters
    ----------
    inputs
        The parameters' variable nodes, in signature order.
    outputs
        The returned nodes.
    returns_tuple
        Whether the function returns a tuple; None: when there is not exactly one output.

    Raises
    ------
    ValueError
        Several outputs with ``returns_tuple=False``.

    Examples
    --------
    ::

        x = Node.var("x", TensorType((1, 8), "float32"))
        graph = Graph([x], [Node.call("relax.nn.relu", [x])])
        mod = to_relax(graph)            # and from_relax(mod) back
    """

    def __init__(self, inputs: Sequence[Node], outputs: Sequence[Node], returns_tuple: bool | None = None):
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.returns_tuple = len(self.outputs) != 1 if returns_tuple is None else returns_tuple
        if len(self.outputs) != 1 and not self.returns_tuple:
            raise ValueError("a graph with several outputs returns them as a tuple")
        self._rpo: tuple[Node, ...] | None = None
        self._succ: dict[Node, list[Node]] | None = None

    def rpo(self) -> tuple[Node, ...]:
        """Reverse post-order (*reverse post-order* in the documentation's glossary): outputs in
        order, predecessors in order, each node after all of its predecessors."""
        if self._rpo is None:
            order: list[Node] = []
            seen: set[Node] = set()
            for out in self.outputs:
                if out in seen:
                    continue
                stack = [(out, iter(out.inputs))]
                seen.add(out)
                while stack:
                    node, preds = stack[-1]
                    for pred in preds:
                        if pred not in seen:
                            seen.add(pred)
                            stack.append((pred, iter(pred.inputs)))
                            break
                    else:
                        stack.pop()
                        order.append(node)
            self._rpo = tuple(order)
        return self._rpo

    def successors(self) -> dict[Node, list[Node]]:
        """Successor lists (*successor list* in the glossary): each a subsequence of :meth:`rpo`.

        A node reading the same predecessor twice appears once in its list.
        """
        if self._succ is None:
            succ: dict[Node, list[Node]] = {n: [] for n in self.rpo()}
            for node in self.rpo():
                for pred in node.inputs:
                    users = succ[pred]
                    if not users or users[-1] is not node:
                        users.append(node)
            self._succ = succ
        return self._succ

    def __len__(self) -> int:
        return len(self.rpo())

    def __iter__(self):
        return iter(self.rpo())

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """A graph pickles flat: its nodes in order, each naming its inputs by position, so a graph
        of any depth crosses to another process (a Ray task) without deep recursion."""
        nodes = list(dict.fromkeys([*self.inputs, *self.rpo()]))
        index = {node: k for k, node in enumerate(nodes)}
        records = [(n.kind.value, n.type, tuple(index[i] for i in n.inputs), n.op, n.attrs, n.name, n.value)
                   for n in nodes]
        return _unflatten, (records, [index[n] for n in self.inputs], [index[n] for n in self.outputs],
                            self.returns_tuple)

    def op_counts(self) -> Counter[str]:
        """How many calls of each op the graph holds."""
        return Counter(n.op for n in self.rpo() if n.kind is Kind.CALL)

    def replace(self, mapping: Mapping[Node, Node], inputs: Iterable[Node] | None = None,
                memo: dict[Node, Node] | None = None) -> "Graph":
        """A new graph where each key of ``mapping`` is replaced by its value.

        Every node reading a replaced node, in the graph or inside another
        replacement, is copied to read the new value, so a batch of disjoint
        rewrites whose results feed each other is applied in one linear pass.

        Parameters
        ----------
        mapping
            Replacements: each node by a node of the same type.
        inputs
            The new parameter list; None: the current one.
        memo
            A dictionary to fill with each node the outputs reach and its node in the new graph
            (a replaced node's is its replacement's); None: none kept.

        Raises
        ------
        TypeError
            A replacement of another type.
        ValueError
            A replacement that would make a node depend on itself.
        """
        for old, new in mapping.items():
            if old.type != new.type:
                raise TypeError(f"replacing {old} of type {old.type} by {new} of type {new.type}")
        memo = {} if memo is None else memo
        open_nodes: set[Node] = set()
        # Post-order over the graph in which a replaced node's only predecessor is its replacement.
        stack = [(o, False) for o in reversed(self.outputs)]
        while stack:
            node, ready = stack.pop()
            if node in memo:
                continue
            preds = (mapping[node],) if node in mapping else node.inputs
            if not ready:
                if node in open_nodes:
                    raise ValueError(f"replacing {node} makes it depend on itself")
                open_nodes.add(node)
                stack.append((node, True))
                stack.extend((p, False) for p in reversed(preds) if p not in memo)
                continue
            open_nodes.discard(node)
            if node in mapping:
                memo[node] = memo[mapping[node]]
                continue
            new_inputs = tuple(memo[i] for i in node.inputs)
            changed = any(a is not b for a, b in zip(new_inputs, node.inputs))
            memo[node] = node.with_inputs(new_inputs) if changed else node
        return Graph(
            self.inputs if inputs is None else inputs,
            [memo[o] for o in self.outputs],
            self.returns_tuple,
        )


def _unflatten(records: list[tuple[Any, ...]], inputs: list[int], outputs: list[int], returns_tuple: bool) -> Graph:
    """The graph :meth:`Graph.__reduce__` flattened: ``records`` in an order where inputs come first."""
    nodes: list[Node] = []
    for kind, type_, preds, op, attrs, name, value in records:
        nodes.append(Node(Kind(kind), type_, [nodes[k] for k in preds], op, attrs, name, value))
    return Graph([nodes[k] for k in inputs], [nodes[k] for k in outputs], returns_tuple)
