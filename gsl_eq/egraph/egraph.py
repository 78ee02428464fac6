"""A computation graph held in an egglog e-graph.

egglog is the engine: e-matching, union-find and rebuilding happen there. This
module only encodes graphs into it and reads it back:

* one constructor per (op, input count), ``Op_nn_conv2d_2 (i64 Expr Expr)``,
  whose first child is the interned id of the call's **form**: its attributes,
  its type and its inputs' types (:class:`Form`). Tuples ``(Tuple_<n> form ...)``
  and projections ``(GetItem form tuple)`` have a form too (the index is its
  payload). Variables are ``(Var name)`` and constants ``(Const value-id)``, their
  types known from the loaded graph. So a pattern binds the type of every node
  it matches without a lookup (types are part of the e-node, and an e-node's
  children have one type each, so this changes no e-node's identity), and equal
  attributes and types are equal integers. Children sit in fixed positions, not
  in a ``Vec``, because egglog cannot e-match inside a ``Vec``;
* ``(Id k)`` is a handle on the e-class of node k of a loaded graph, so Python
  can name an e-class in later commands;
* provenance, for telling which rules an extracted term relies on, is asked for once the
  term is chosen, never recorded while saturating (an extra row per created e-node, kept
  canonical through every later union, would about double the cost of applying rules):
  :func:`.attribution.attribute` names the chosen e-classes ``(Chosen i)``, lists the chosen
  e-nodes in ``(Want_<constructor> literal children... i)`` and the classes in
  ``(WantClass e i)``, and runs the ``provenance`` rules (see :mod:`.compile`): a rule whose
  source matches, under an accepted key, where its target builds chosen e-node ``i`` adds
  ``(BuiltChosen i k)`` (``k``: the rule's index in the runner); one whose target is a
  matched node unioned into chosen e-class ``i`` adds ``(MergedChosen i k)``;
* ``(Foldable e)`` holds for e-classes computable from parameters and constants
  alone (through some e-node): extraction treats them as folded. The ``fold``
  ruleset maintains it;
* ``(num e)`` is a pseudo-random integer in ``[0, HASH_MODULUS)`` per e-class:
  the lowest structural hash of its e-nodes (loading sets it for loaded nodes, the
  ``number`` ruleset computes it for new ones; a union keeps the lower: "the first
  e-node's" would depend on the order egglog's threads apply rules in, and so would
  which matches a bucket holds). The hashes of a match's e-classes put the match in
  one of ``BUCKETS`` buckets, so the runner can apply a chosen share of a rule's matches;
* ``(order e)`` ranks e-classes by the last variable they read: a variable's rank is its
  place in the loaded graph (whose reverse post-order visits a concat's fields in order),
  a constant's 0, an e-node's the highest of its children's; a union keeps the lower. A
  symmetric rule applies one order of each set of matches, the one whose outputs' ranks
  ascend (ties both ways): branches of one input in the order they are read, a merge of
  the first ones before the next, so that the parts of merged branches come in the order
  a concat reads them;
* nodes are added with egglog command objects built directly (one ``union``
  per node): parsing text or binding one global ``let`` per node is superlinear
  in egglog, this is not.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Collection, Hashable, Iterable, Iterator

import numpy as np
from egglog import bindings as egg

from ..graph import Graph, Kind, Node
from ..graph.ops import freeze
from ..graph.types import TensorType, Type

SPAN = egg.PanicSpan()
PRELUDE = """
(datatype Expr)
(constructor Id (i64) Expr :unextractable)
(constructor Var (String) Expr)
(constructor Const (i64) Expr)
(constructor GetItem (i64 Expr) Expr)
(relation Foldable (Expr))
(constructor Chosen (i64) Expr :unextractable)
(relation Want_Const (i64 i64))
(relation Want_GetItem (i64 Expr i64))
(relation WantClass (Expr i64))
(relation BuiltChosen (i64 i64))
(relation MergedChosen (i64 i64))
(ruleset provenance)
(relation Apart (Expr Expr))
(relation Pairable (Expr))
(ruleset fold)
(rule ((= e (Const c))) ((Foldable e)) :ruleset fold)
(rule ((= e (GetItem i t)) (Foldable t)) ((Foldable e)) :ruleset fold)
(function num (Expr) i64 :merge (min old new))
(function order (Expr) i64 :merge (min old new))
(ruleset number)
(rule ((= e (Const c))) ((set (order e) 0)) :ruleset number)
(rule ((= e (GetItem i t)) (= o (order t))) ((set (order e) o)) :ruleset number)
(relation Open (i64))
(ruleset close)
(rule ((Open b)) ((delete (Open b))) :ruleset close)
(relation Bucket (i64))
(relation Bit (i64))
(ruleset fill_buckets)
(rule ((Bucket b) (Bit s) (< (+ b s) {buckets})) ((Bucket (+ b s))) :ruleset fill_buckets)
(relation OpenAll (i64))
(ruleset open_all)
(rule ((OpenAll n) (Bucket b)) ((Open b)) :ruleset open_all)
(rule ((OpenAll n)) ((delete (OpenAll n))) :ruleset close)
(relation OpenSpan (i64 i64 i64))
(ruleset open_span)
(rule ((OpenSpan n c k) (Bucket b) (< (% (+ (- (% (* b {inverse}) {buckets}) c) {buckets}) {buckets}) k))
      ((Open b)) :ruleset open_span)
(rule ((OpenSpan n c k)) ((delete (OpenSpan n c k))) :ruleset close)
(ruleset reject)
(ruleset clear)
(rule ((= e (Const c))) ((set (num e) {const})) :ruleset number)
(rule ((= e (GetItem i t)) (= n (num t))) ((set (num e) {getitem})) :ruleset number)
(function Now () i64 :merge new)
(ruleset birth)
(function Born_Var (String) i64 :merge (min old new))
(rule ((= e (Var v)) (= now (Now))) ((set (Born_Var v) now)) :ruleset birth)
(function Born_Const (i64) i64 :merge (min old new))
(rule ((= e (Const c)) (= now (Now))) ((set (Born_Const c) now)) :ruleset birth)
(function Born_GetItem (i64 Expr) i64 :merge (min old new))
(rule ((= e (GetItem i t)) (= now (Now))) ((set (Born_GetItem i t) now)) :ruleset birth)
"""

#: E-class hashes lie in [0, HASH_MODULUS): a prime below 2**30, so that
#: ``a * HASH_FACTOR + b`` never overflows an i64.
HASH_MODULUS = 1_073_741_789
HASH_FACTOR = 1_000_003
#: Matches are put in this many buckets when a rule is applied in part.
BUCKETS = 1 << 12
#: Odd, so that ``i * STRIDE % BUCKETS`` visits every bucket once per ``BUCKETS`` steps (about
#: ``BUCKETS`` over the golden ratio: see :mod:`.scheduler`).
STRIDE = 2531
#: A span of at least this many buckets is opened by one fact; fewer by one command each.
BUCKETS_BY_FACT = 64


@dataclass(frozen=True)
class BucketSpan:
    """The ``count`` buckets ``(start + i) * STRIDE % BUCKETS``, ``i < count``: what a rule opens
    at a time when it is applied in part (:class:`~.scheduler.Scheduler` moves ``start`` on)."""

    start: int
    count: int

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[int]:
        return ((self.start + i) * STRIDE % BUCKETS for i in range(self.count))

    def first(self, count: int) -> BucketSpan:
        """The first ``count`` buckets of this span."""
        return BucketSpan(self.start, min(count, self.count))


def mix(*terms: str) -> str:
    """egglog text of a hash of i64 terms in [0, HASH_MODULUS) (a polynomial modulo the prime)."""
    text = terms[0]
    for term in terms[1:]:
        text = f"(% (+ (* {text} {HASH_FACTOR}) {term}) {HASH_MODULUS})"
    return text


def scramble(k: int) -> int:
    """The hash of loaded node ``k``: consecutive handles spread over [0, HASH_MODULUS)."""
    return (k * 2_654_435_761 + 40_503) % HASH_MODULUS


PRELUDE = PRELUDE.format(const=mix("1", "c"), getitem=mix("2", "i", "n"), buckets=BUCKETS,
                         inverse=pow(STRIDE, -1, BUCKETS))
#: Every bucket number in ``Bucket``, by sums of powers of two: a few egglog iterations, where
#: inserting the numbers one by one takes thousands of commands. ``OpenAll`` then opens every
#: bucket in one egglog run (:meth:`~.calls.EngineCalls._in_buckets`).
FILL_BUCKETS = "\n".join(["(Bucket 0)", *(f"(Bit {1 << i})" for i in range(BUCKETS.bit_length() - 1)),
                           "(run-schedule (saturate (run fill_buckets)))"])


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


def want_relation(constructor: str) -> str:
    """The relation listing the chosen e-nodes of ``constructor`` to attribute (:func:`.attribution.attribute`):
    an e-node's literal (form or constant value id) and children, then its chosen e-class's index."""
    return f"Want_{constructor}"


@functools.lru_cache(maxsize=None)
def head_name(node_kind: Kind, op: str | None, arity: int) -> str:
    """The egglog constructor of any node: ``Var``, ``Const``, ``GetItem`` or :func:`constructor_name`."""
    if node_kind in (Kind.VAR, Kind.CONST, Kind.GETITEM):
        return {Kind.VAR: "Var", Kind.CONST: "Const", Kind.GETITEM: "GetItem"}[node_kind]
    return constructor_name(node_kind, op, arity)


def constructor_name(node_kind: Kind, op: str | None, arity: int) -> str:
    """The egglog constructor of a call (by op and input count) or a tuple (by size)."""
    if node_kind is Kind.TUPLE:
        return f"Tuple_{arity}"
    return "Op_" + re.sub(r"\W", "_", op.removeprefix("relax.")) + f"_{arity}"


@dataclass(frozen=True)
class Form:
    """What an e-node is besides its op and children: its payload (interned attributes of a call,
    index of a projection, None for a tuple), its type and its inputs' types (interned ids)."""

    payload: int | None
    type: int
    inputs: tuple[int, ...]


@dataclass(frozen=True)
class ENode:
    """One e-node read back from egglog: its kind, op, attribute id, child e-classes and form id."""

    kind: Kind
    op: str | None
    attrs: int  # interned attributes (calls), index (getitem), value id (const); -1 otherwise
    name: str | None
    children: tuple[Any, ...]
    form: int = -1  # interned Form (calls, tuples, projections); -1 otherwise
    #: The iteration after which it was first seen (0: loaded; see :meth:`EGraph.stamp`); -1 if never stamped.
    born: int = field(default=-1, compare=False)

    @property
    def key(self) -> tuple[str, Any, tuple[Any, ...]]:
        """Its egglog term: constructor, literal (a variable's name, a constant's value id, else the
        form), child e-classes."""
        if self.kind is Kind.VAR:
            return "Var", self.name, ()
        if self.kind is Kind.CONST:
            return "Const", self.attrs, ()
        ctor = "GetItem" if self.kind is Kind.GETITEM else constructor_name(self.kind, self.op, len(self.children))
        return ctor, self.form, self.children


class EGraph:
    """An egglog e-graph of computation graphs, with interned attributes, types and constants."""

    def __init__(self) -> None:
        self.egg = egg.EGraph()
        self.run(PRELUDE)
        self.run(FILL_BUCKETS)
        self._opened = 0  # OpenAll and OpenSpan facts so far: each a new one, which egglog's rules match anew
        self.attrs = Interner()
        self.types = Interner()
        self.forms = Interner()
        #: Per constructor, the literals (forms, constant value ids) its e-nodes may hold: those of
        #: the loaded nodes and of every target node a decision gave one (:meth:`note_literal`).
        self.literals: dict[str, set[int]] = {}
        self.consts: list[np.ndarray] = []
        self.var_types: dict[str, int] = {}
        self.constructors: dict[str, tuple[Kind, str | None, int]] = {}
        self.params: set[str] = set()
        self.handles = 0
        #: The e-node of each node added by handle (:meth:`add_graph`, :meth:`add_nodes`): constructor,
        #: literal, handles of its children.
        self.loaded: list[tuple[str, Any, tuple[int, ...]]] = []
        #: The handles :meth:`add_nodes` added for a rule (a target built outside egglog), with its index.
        self.built_by: dict[int, int] = {}
        self.attributed = 0  # (Chosen i) handles given by attribution.attribute() so far

    def run(self, program: str) -> list[Any]:
        """Run egglog program text (declarations, rules, schedules)."""
        return self.egg.run_program(*self.egg.parse_program(program))

    def declare(self, kind: Kind, op: str | None, arity: int) -> str:
        name = constructor_name(kind, op, arity)
        if name not in self.constructors:
            children = [f"x{i}" for i in range(arity)]
            term = f"({name} a {' '.join(children)})"
            facts = " ".join([f"(= e {term})", *(f"(Foldable {x})" for x in children)])
            hashes = " ".join(f"(= n{i} (num {x}))" for i, x in enumerate(children))
            number = mix(str(3 + len(self.constructors)), "a", *(f"n{i}" for i in range(arity)))
            ranks = " ".join(f"(= o{i} (order {x}))" for i, x in enumerate(children))
            rank = functools.reduce(lambda a, b: f"(max {a} {b})", (f"o{i}" for i in range(arity)), "0")
            self.run(f"(constructor {name} (i64 {' '.join(['Expr'] * arity)}) Expr)\n"
                     f"(relation {want_relation(name)} (i64 {' '.join(['Expr'] * arity)} i64))\n"
                     f"(rule ({facts}) ((Foldable e)) :ruleset fold)\n"
                     f"(rule ((= e {term}) {hashes}) ((set (num e) {number})) :ruleset number)\n"
                     f"(rule ((= e {term}) {ranks}) ((set (order e) {rank})) :ruleset number)\n"
                     f"(function Born_{name} (i64 {' '.join(['Expr'] * arity)}) i64 :merge (min old new))\n"
                     f"(rule ((= e {term}) (= now (Now))) ((set (Born_{name} a {' '.join(children)}) now))"
                     " :ruleset birth)")
            self.constructors[name] = (kind, op, arity)
        return name

    def fold(self) -> None:
        """Bring ``Foldable`` up to date with the e-graph."""
        self.run("(run-schedule (saturate (run fold)))")

    def stamp(self, iteration: int) -> None:
        """Record ``iteration`` as the birth of every e-node that has none yet (see :attr:`ENode.born`)."""
        self.run(f"(set (Now) {iteration})\n(run birth 1)")

    def type_id(self, ty: Type) -> int:
        return self.types(ty)

    def form(self, node: Node) -> int:
        """The interned form of a call, tuple or projection node (its payload, type and inputs' types)."""
        if node.kind is Kind.CALL:
            payload = self.attrs(freeze(node.attrs))
        else:
            payload = node.attrs["index"] if node.kind is Kind.GETITEM else None
        return self.forms(Form(payload, self.types(node.type), tuple(self.types(i.type) for i in node.inputs)))

    def const(self, value: np.ndarray) -> int:
        """A new constant's value id."""
        self.consts.append(value)
        return len(self.consts) - 1

    def add_graph(self, graph: Graph, params: Collection[str] = ()) -> dict[Node, int]:
        """Add every node of ``graph``; returns each node's handle (``(Id k)``).

        Variables named in ``params`` are the workload's parameters (foldable).
        """
        self.params |= set(params)
        handle: dict[Node, int] = {}
        self.add_nodes(graph.rpo(), handle)
        self.fold()
        return handle

    def add_nodes(self, nodes: Iterable[Node], handle: dict[Node, int], rule: int | None = None) -> int:
        """Add ``nodes`` (inputs first) but those ``handle`` has already, giving each a handle in
        it; with ``rule``, they are that rule's target, built outside egglog. Returns how many were
        added. ``Foldable`` is brought up to date by :meth:`fold`, once the caller is done."""
        commands = []
        added = 0
        for node in nodes:
            if node in handle:
                continue
            k = handle[node] = self.handles
            self.handles += 1
            added += 1
            name, literal = self._head(node)
            term = call(name, egg.Lit(SPAN, egg.String(literal)) if node.kind is Kind.VAR else int_literal(literal),
                         *(int_call("Id", handle[i]) for i in node.inputs))
            self.loaded.append((name, literal, tuple(handle[i] for i in node.inputs)))
            if rule is not None:
                self.built_by[k] = rule
            if node.kind is not Kind.VAR:
                self.note_literal(name, literal)
            commands.append(egg.ActionCommand(egg.Union(SPAN, int_call("Id", k), term)))
            commands.append(egg.ActionCommand(egg.Set(SPAN, "num", [int_call("Id", k)], int_literal(scramble(k)))))
            if node.kind is Kind.VAR:
                commands.append(egg.ActionCommand(egg.Set(SPAN, "order", [int_call("Id", k)], int_literal(k))))
            if node.kind is Kind.VAR and node.name in self.params:
                commands.append(egg.ActionCommand(egg.Expr_(SPAN, call("Foldable", int_call("Id", k)))))
        if commands:
            self.egg.run_program(*commands)
        return added

    def union(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Make the e-classes of each pair of handles one."""
        commands = [egg.ActionCommand(egg.Union(SPAN, int_call("Id", a), int_call("Id", b))) for a, b in pairs]
        if commands:
            self.egg.run_program(*commands)

    def note_literal(self, constructor: str, literal: int) -> None:
        """Record that e-nodes of ``constructor`` may hold ``literal``."""
        self.literals.setdefault(constructor, set()).add(literal)

    def _head(self, node: Node) -> tuple[str, Any]:
        """The constructor of a node's e-node and its literal: a variable's name, a constant's
        value id, else the form id."""
        if node.kind is Kind.VAR:
            self.var_types[node.name] = self.types(node.type)
            return "Var", node.name
        if node.kind is Kind.CONST:
            return "Const", self.const(node.value)
        name = "GetItem" if node.kind is Kind.GETITEM else self.declare(node.kind, node.op, len(node.inputs))
        return name, self.form(node)

    def mark_apart(self, graph: Graph, handle: dict[Node, int], nodes: Collection[Node]) -> int:
        """Record ``(Apart a b)`` for the loaded ``nodes`` of ``graph`` (both orders) where neither
        reads the other, and ``(Pairable a)`` for each node in such a pair; returns how many pairs.
        A disconnected source's parts pair only there."""
        below: dict[Node, int] = {}  # each node's inputs, transitively, as a bitset over rpo positions
        position = {n: i for i, n in enumerate(graph.rpo())}
        for n in graph.rpo():
            bits = 0
            for i in n.inputs:
                bits |= below[i] | (1 << position[i])
            below[n] = bits
        chosen = sorted(set(nodes), key=position.__getitem__)
        commands, pairable = [], set()
        for a, b in itertools.combinations(chosen, 2):
            if not below[b] >> position[a] & 1:  # a comes first, so it cannot read b
                pairable |= {a, b}
                for x, y in ((a, b), (b, a)):
                    commands.append(egg.ActionCommand(egg.Expr_(SPAN, call("Apart", int_call("Id", handle[x]), int_call("Id", handle[y])))))
        pairs = len(commands)
        commands += [egg.ActionCommand(egg.Expr_(SPAN, call("Pairable", int_call("Id", handle[n])))) for n in pairable]
        if commands:
            self.egg.run_program(*commands)
        return pairs

    def const_type(self, value_id: int) -> int:
        value = self.consts[value_id]
        return self.types(TensorType(value.shape, str(value.dtype)))

    def number(self) -> None:
        """Give every e-class its hash ``num`` (only e-classes created since the last call lack one)."""
        self.run("(run-schedule (saturate (run number)))")

    def open_buckets(self, buckets: Iterable[int] | BucketSpan) -> None:
        """Put ``buckets`` in ``Open`` (the *close* ruleset empties it): every bucket by one
        ``OpenAll`` fact joined with ``Bucket``, a long :class:`BucketSpan` by one ``OpenSpan`` fact,
        a few by one command each."""
        if isinstance(buckets, BucketSpan) and BUCKETS_BY_FACT <= buckets.count < BUCKETS:
            self._opened += 1
            fact = call("OpenSpan", *(int_literal(v) for v in (self._opened, buckets.start % BUCKETS, buckets.count)))
            self.egg.run_program(egg.ActionCommand(egg.Expr_(SPAN, fact)))
            self.run("(run open_span 1)")
            return
        buckets = list(buckets)
        if len(set(buckets)) == BUCKETS:
            self._opened += 1
            self.egg.run_program(egg.ActionCommand(egg.Expr_(SPAN, int_call("OpenAll", self._opened))))
            self.run("(run open_all 1)")
        else:
            self.egg.run_program(*(_OPEN[b] for b in buckets))

    def table_sizes(self) -> dict[str, int]:
        """Rows per egglog function and relation (egglog counts them; nothing is read back)."""
        (out,) = self.egg.run_program(egg.PrintSize(SPAN, None))
        return dict(out.sizes)

    def size(self, sizes: dict[str, int] | None = None) -> int:
        """E-nodes: rows of the expression constructors."""
        sizes = self.table_sizes() if sizes is None else sizes
        return sum(sizes.get(name, 0) for name in ("Var", "Const", "GetItem", *self.constructors))

    def snapshot(self) -> "Snapshot":
        """The e-graph as it is now: e-classes, their e-nodes and types, the handles, the foldable e-classes."""
        frozen = self.egg.freeze()
        value = self.egg.value_to_i64
        classes: dict[Any, list[ENode]] = {}
        handles: dict[int, Any] = {}
        types: dict[Any, int] = {}
        foldable: set[Any] = set()
        births = {fname.removeprefix("Born_"): {tuple(row.inputs): value(row.output) for row in function.rows}
                  for fname, function in frozen.functions.items() if fname.startswith("Born_")}
        for fname, function in frozen.functions.items():
            rows = [row for row in function.rows if not row.subsumed]
            if fname == "Foldable":
                foldable.update(row.inputs[0] for row in rows)
            elif fname == "Id":
                handles.update((value(row.inputs[0]), row.output) for row in rows)
            elif fname == "Var":
                for row in rows:
                    name = self.egg.value_to_string(row.inputs[0])
                    classes.setdefault(row.output, []).append(
                        ENode(Kind.VAR, None, -1, name, (), born=births["Var"].get(tuple(row.inputs), -1)))
                    types[row.output] = self.var_types[name]
            elif fname == "Const":
                for row in rows:
                    const = value(row.inputs[0])
                    classes.setdefault(row.output, []).append(
                        ENode(Kind.CONST, None, const, None, (), born=births["Const"].get(tuple(row.inputs), -1)))
                    types[row.output] = self.const_type(const)
            elif fname == "GetItem" or fname in self.constructors:
                kind, op, _ = self.constructors.get(fname, (Kind.GETITEM, None, 1))
                born = births.get(fname, {})
                for row in rows:
                    literal = value(row.inputs[0])
                    form = self.forms[literal]
                    payload = -1 if form.payload is None else form.payload
                    classes.setdefault(row.output, []).append(
                        ENode(kind, op, payload, None, tuple(row.inputs[1:]), literal,
                              born.get(tuple(row.inputs), -1)))
                    types[row.output] = form.type
        loaded: dict[tuple[str, Any, tuple[Any, ...]], list[int]] = {}
        built: dict[tuple[str, Any, tuple[Any, ...]], set[int]] = {}
        for h, (ctor, literal, children) in enumerate(self.loaded):
            key = (ctor, literal, tuple(handles[c] for c in children))
            if h in self.built_by:
                built.setdefault(key, set()).add(self.built_by[h])
            else:
                loaded.setdefault(key, []).append(h)
        return Snapshot(classes, {c: types[c] for c in classes if c in types}, handles, foldable,
                        Provenance(loaded, built))


@dataclass
class Provenance:
    """Where the e-nodes of a snapshot come from: the loaded nodes (handles) each e-node is, by
    :attr:`ENode.key`. Which rules build an e-node is asked for once a term is chosen
    (:func:`.attribution.attribute`)."""

    loaded: dict[tuple[str, Any, tuple[Any, ...]], list[int]] = field(default_factory=dict)
    #: The rules (indices) whose targets, built outside egglog (:mod:`.seeding`), hold each e-node.
    built: dict[tuple[str, Any, tuple[Any, ...]], set[int]] = field(default_factory=dict)

    def loaded_from(self, e: ENode) -> list[int]:
        """The handles of the loaded nodes ``e`` is the e-node of (none: rules created it)."""
        return self.loaded.get(e.key, [])

    def built_outside(self, e: ENode) -> set[int]:
        """The rules whose targets built outside egglog hold ``e`` (:mod:`.seeding`)."""
        return self.built.get(e.key, set())


@dataclass
class Snapshot:
    """E-classes (egglog values) -> their e-nodes; the type id of each class; handle -> class;
    the e-classes computable from parameters and constants alone; where e-nodes come from."""

    classes: dict[Any, list[ENode]]
    types: dict[Any, int]
    handles: dict[int, Any]
    foldable: set[Any]
    provenance: Provenance = field(default_factory=Provenance)

    @property
    def num_enodes(self) -> int:
        return sum(len(nodes) for nodes in self.classes.values())


def int_literal(v: int) -> Any:
    """An egglog i64 literal, as a command object."""
    return egg.Lit(SPAN, egg.Int(int(v)))


def int_call(name: str, v: int) -> Any:
    """``(name v)`` for an i64 ``v``, as a command object."""
    return call(name, int_literal(v))


def call(name: str, *args: Any) -> Any:
    return egg.Call(SPAN, name, list(args))


#: The command putting each bucket in ``Open``, made once.
_OPEN = [egg.ActionCommand(egg.Expr_(SPAN, int_call("Open", b))) for b in range(BUCKETS)]
