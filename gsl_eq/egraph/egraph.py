"""A computation graph held in an egglog e-graph.

egglog is the engine: e-matching, union-find and rebuilding happen there. This
module only encodes graphs into it and reads it back:

* one constructor per (op, input count), ``Op_nn_conv2d_2 (i64 Expr Expr)``,
  whose first child is the interned id of the call's attributes; so equal
  attributes are equal ids and rules compare them as integers. Variables are
  ``(Var name)``, constants ``(Const value-id)``, tuples ``Tuple_<n>`` and tuple
  projections ``(GetItem index tuple)``; children sit in fixed positions, not in
  a ``Vec``, because egglog cannot e-match inside a ``Vec``;
* ``(ty e)`` is the interned type of every e-class (an analysis: equal values
  have one type);
* ``(Id k)`` is a handle on the e-class of node k of a loaded graph, so Python
  can name an e-class in later commands;
* ``(Foldable e)`` holds for e-classes computable from parameters and constants
  alone (through some e-node): extraction treats them as folded. The ``fold``
  ruleset maintains it;
* ``(num e)`` is a pseudo-random integer in ``[0, HASH_MODULUS)`` per e-class:
  a structural hash of its first e-node (loading sets it for loaded nodes, the
  ``number`` ruleset computes it for new ones and keeps the first value on a
  union). The hashes of a match's e-classes put the match in one of ``BUCKETS``
  buckets, so the runner can apply a chosen share of a rule's matches;
* nodes are added with egglog command objects built directly (one ``union``
  per node): parsing text or binding one global ``let`` per node is superlinear
  in egglog, this is not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Collection, Hashable

import numpy as np
from egglog import bindings as egg

from ..graph import Graph, Kind, Node
from ..graph.ops import freeze
from ..graph.types import Type

SPAN = egg.PanicSpan()
PRELUDE = """
(datatype Expr)
(constructor Id (i64) Expr :unextractable)
(constructor Var (String) Expr)
(constructor Const (i64) Expr)
(constructor GetItem (i64 Expr) Expr)
(function ty (Expr) i64 :merge old)
(relation Foldable (Expr))
(ruleset fold)
(rule ((= e (Const c))) ((Foldable e)) :ruleset fold)
(rule ((= e (GetItem i t)) (Foldable t)) ((Foldable e)) :ruleset fold)
(function num (Expr) i64 :merge old)
(ruleset number)
(relation Open (i64))
(ruleset close)
(rule ((Open b)) ((delete (Open b))) :ruleset close)
(ruleset reject)
(ruleset clear)
(rule ((= e (Const c))) ((set (num e) {const})) :ruleset number)
(rule ((= e (GetItem i t)) (= n (num t))) ((set (num e) {getitem})) :ruleset number)
"""

#: E-class hashes lie in [0, HASH_MODULUS): a prime below 2**30, so that
#: ``a * HASH_FACTOR + b`` never overflows an i64.
HASH_MODULUS = 1_073_741_789
HASH_FACTOR = 1_000_003
#: Matches are put in this many buckets when a rule is applied in part.
BUCKETS = 1 << 12


def mix(*terms: str) -> str:
    """egglog text of a hash of i64 terms in [0, HASH_MODULUS) (a polynomial modulo the prime)."""
    text = terms[0]
    for term in terms[1:]:
        text = f"(% (+ (* {text} {HASH_FACTOR}) {term}) {HASH_MODULUS})"
    return text


def scramble(k: int) -> int:
    """The hash of loaded node ``k``: consecutive handles spread over [0, HASH_MODULUS)."""
    return (k * 2_654_435_761 + 40_503) % HASH_MODULUS


PRELUDE = PRELUDE.format(const=mix("1", "c"), getitem=mix("2", "i", "n"))


class Interner:
    """Gives each distinct hashable value a small integer id, and back."""

    def __init__(self) -> None:
        self.ids: dict[Hashable, int] = {}
        self.values: list[Any] = []

    def __call__(self, value: Hashable) -> int:
        found = self.ids.get(value)
        if found is None:
            found = self.ids[value] = len(self.values)
            self.values.append(value)
        return found

    def __getitem__(self, i: int) -> Any:
        return self.values[i]


def constructor_name(node_kind: Kind, op: str | None, arity: int) -> str:
    """The egglog constructor of a call (by op and input count) or a tuple (by size)."""
    if node_kind is Kind.TUPLE:
        return f"Tuple_{arity}"
    return "Op_" + re.sub(r"\W", "_", op.removeprefix("relax.")) + f"_{arity}"


@dataclass(frozen=True)
class ENode:
    """One e-node read back from egglog: its form, attribute id and child e-classes."""

    kind: Kind
    op: str | None
    attrs: int  # interned attributes (calls), index (getitem), value id (const); -1 otherwise
    name: str | None
    children: tuple[Any, ...]


class EGraph:
    """An egglog e-graph of computation graphs, with interned attributes, types and constants."""

    def __init__(self) -> None:
        self.egg = egg.EGraph()
        self.run(PRELUDE)
        self.attrs = Interner()
        self.types = Interner()
        self.consts: list[np.ndarray] = []
        self.constructors: dict[str, tuple[Kind, str | None, int]] = {}
        self.params: set[str] = set()
        self.handles = 0

    def run(self, program: str) -> list[Any]:
        """Run egglog program text (declarations, rules, schedules)."""
        return self.egg.run_program(*self.egg.parse_program(program))

    def declare(self, kind: Kind, op: str | None, arity: int) -> str:
        name = constructor_name(kind, op, arity)
        if name not in self.constructors:
            head = "" if kind is Kind.TUPLE else "i64 "
            children = [f"x{i}" for i in range(arity)]
            term = f"({name} {' '.join(children)})" if kind is Kind.TUPLE else f"({name} a {' '.join(children)})"
            facts = " ".join([f"(= e {term})", *(f"(Foldable {x})" for x in children)])
            hashes = " ".join(f"(= n{i} (num {x}))" for i, x in enumerate(children))
            number = mix(str(3 + len(self.constructors)), *([] if kind is Kind.TUPLE else ["a"]),
                         *(f"n{i}" for i in range(arity)))
            self.run(f"(constructor {name} ({head}{' '.join(['Expr'] * arity)}) Expr)\n"
                     f"(rule ({facts}) ((Foldable e)) :ruleset fold)\n"
                     f"(rule ((= e {term}) {hashes}) ((set (num e) {number})) :ruleset number)")
            self.constructors[name] = (kind, op, arity)
        return name

    def fold(self) -> None:
        """Bring ``Foldable`` up to date with the e-graph."""
        self.run("(run-schedule (saturate (run fold)))")

    def type_id(self, ty: Type) -> int:
        return self.types(ty)

    def add_graph(self, graph: Graph, params: Collection[str] = ()) -> dict[Node, int]:
        """Add every node of ``graph``; returns each node's handle (``(Id k)``).

        Variables named in ``params`` are the workload's parameters (foldable).
        """
        handle: dict[Node, int] = {}
        commands = []
        self.params |= set(params)
        for node in graph.rpo():
            k = handle[node] = self.handles
            self.handles += 1
            term = self._term(node, [int_call("Id", handle[i]) for i in node.inputs])
            commands.append(egg.ActionCommand(egg.Union(SPAN, int_call("Id", k), term)))
            commands.append(egg.ActionCommand(egg.Set(SPAN, "ty", [int_call("Id", k)], int_literal(self.types(node.type)))))
            commands.append(egg.ActionCommand(egg.Set(SPAN, "num", [int_call("Id", k)], int_literal(scramble(k)))))
            if node.kind is Kind.VAR and node.name in self.params:
                commands.append(egg.ActionCommand(egg.Expr_(SPAN, _call("Foldable", int_call("Id", k)))))
        self.egg.run_program(*commands)
        self.fold()
        return handle

    def _term(self, node: Node, children: list[Any]) -> Any:
        if node.kind is Kind.VAR:
            return _call("Var", egg.Lit(SPAN, egg.String(node.name)))
        if node.kind is Kind.CONST:
            self.consts.append(node.value)
            return _call("Const", int_literal(len(self.consts) - 1))
        if node.kind is Kind.GETITEM:
            return _call("GetItem", int_literal(node.attrs["index"]), *children)
        name = self.declare(node.kind, node.op, len(children))
        if node.kind is Kind.TUPLE:
            return _call(name, *children)
        return _call(name, int_literal(self.attrs(freeze(node.attrs))), *children)

    def number(self) -> None:
        """Give every e-class its hash ``num`` (only e-classes created since the last call lack one)."""
        self.run("(run-schedule (saturate (run number)))")

    def table_sizes(self) -> dict[str, int]:
        """Rows per egglog function and relation (egglog counts them; nothing is read back)."""
        (out,) = self.egg.run_program(egg.PrintSize(SPAN, None))
        return dict(out.sizes)

    def size(self, sizes: dict[str, int] | None = None) -> tuple[int, int]:
        """(e-nodes, e-classes): rows of the expression constructors, and of ``ty`` (one per e-class)."""
        sizes = self.table_sizes() if sizes is None else sizes
        enodes = sum(sizes.get(name, 0) for name in ("Var", "Const", "GetItem", *self.constructors))
        return enodes, sizes.get("ty", 0)

    def snapshot(self) -> "Snapshot":
        """The e-graph as it is now: e-classes, their e-nodes and types, the handles, the foldable e-classes."""
        frozen = self.egg.freeze()
        value = self.egg.value_to_i64
        classes: dict[Any, list[ENode]] = {}
        handles: dict[int, Any] = {}
        types: dict[Any, int] = {}
        foldable: set[Any] = set()
        for fname, function in frozen.functions.items():
            for row in function.rows:
                if row.subsumed:
                    continue
                if fname == "Foldable":
                    foldable.add(row.inputs[0])
                elif fname == "Id":
                    handles[value(row.inputs[0])] = row.output
                elif fname == "ty":
                    types[row.inputs[0]] = value(row.output)
                elif fname == "Var":
                    classes.setdefault(row.output, []).append(
                        ENode(Kind.VAR, None, -1, self.egg.value_to_string(row.inputs[0]), ()))
                elif fname == "Const":
                    classes.setdefault(row.output, []).append(ENode(Kind.CONST, None, value(row.inputs[0]), None, ()))
                elif fname == "GetItem":
                    classes.setdefault(row.output, []).append(
                        ENode(Kind.GETITEM, None, value(row.inputs[0]), None, (row.inputs[1],)))
                elif fname in self.constructors:
                    kind, op, _ = self.constructors[fname]
                    if kind is Kind.TUPLE:
                        enode = ENode(kind, None, -1, None, tuple(row.inputs))
                    else:
                        enode = ENode(kind, op, value(row.inputs[0]), None, tuple(row.inputs[1:]))
                    classes.setdefault(row.output, []).append(enode)
        return Snapshot(classes, {c: types[c] for c in classes if c in types}, handles, foldable)


@dataclass
class Snapshot:
    """E-classes (egglog values) -> their e-nodes; the type id of each class; handle -> class;
    the e-classes computable from parameters and constants alone."""

    classes: dict[Any, list[ENode]]
    types: dict[Any, int]
    handles: dict[int, Any]
    foldable: set[Any]

    @property
    def num_enodes(self) -> int:
        return sum(len(nodes) for nodes in self.classes.values())


def int_literal(v: int) -> Any:
    """An egglog i64 literal, as a command object."""
    return egg.Lit(SPAN, egg.Int(int(v)))


def int_call(name: str, v: int) -> Any:
    """``(name v)`` for an i64 ``v``, as a command object."""
    return _call(name, int_literal(v))


def _call(name: str, *args: Any) -> Any:
    return egg.Call(SPAN, name, list(args))
