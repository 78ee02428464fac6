"""Fusion: e-nodes that share a kernel, priced exactly on a chosen graph and in the exact programs.

Under a cost model that fuses (the gpu model, :class:`~.extractors.ENodeCost`'s ``opens``,
``fusible`` and ``prologue``), what a chosen e-node costs depends on the others. Two ways of
sharing a kernel, as TVM's FuseOps groups element-wise ops:

- an *epilogue*: an e-node runs inside the kernel of a child whose chosen e-node ``opens``
  one (a relu after a conv), saving its ``fusible`` saving for that child; at most one per
  e-node. A child's e-node with a prologue saving (an element-wise op) hosts an epilogue only
  when it is an epilogue itself (a chain after a conv): otherwise it is the reader that hosts it,
  as a prologue, so that each fusion has one way of being taken;
- a *prologue*: a child's chosen e-node with a ``prologue`` saving (an element-wise op reading
  tensors from memory) runs inside the kernel of its reader, which lists that child as
  ``fusible``; the child then takes no epilogue itself, so that a kernel never holds two
  anchors (two matmuls stay two kernels); a reader takes any number of prologues.

Either needs the child to have one reader: no other chosen e-node reads it and it is not a
root. Epilogue and prologue of one (reader, child) pair exclude each other. On a chosen graph
the single-reader edges form a forest, and :func:`plan` finds the largest total saving on it
by dynamic programming (:func:`~.extractors.dag_cost` prices so). Both exact programs
(:mod:`.ilp`, :mod:`.cpsat`) carry one binary ``fused`` per :class:`FusionTerm`, with the
objective coefficient minus its saving, and the rows :func:`fusion_rows` writes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..graph.walk import postorder
from .indexed import Indexed


@dataclass(frozen=True)
class FusionTerm:
    """E-node ``node`` (of e-class ``reader``) and its child class ``child`` share a kernel,
    saving ``saving``.

    An epilogue (``inlined`` False): ``node`` runs in the kernel of the child's chosen e-node,
    one of ``producers`` (the child class's kept e-nodes that open a kernel and have no prologue
    saving) or of ``chained`` (those that have one: they host it only as epilogues themselves).
    A prologue (``inlined`` True): the child's chosen e-node, one of ``producers`` (those of its
    kept e-nodes that save ``saving`` so), runs inside ``node``'s kernel. ``readers``: the child's
    kept readers, by e-class (``reader`` among them): a fusion needs the others unchosen."""

    node: int
    reader: int
    child: int
    saving: float
    producers: tuple[int, ...]
    readers: tuple[tuple[int, tuple[int, ...]], ...]
    inlined: bool = False
    chained: tuple[int, ...] = ()


class FusionRow(NamedTuple):
    """``sum(c * fused[k] for k, c in terms) + sum(c * chosen[n] for n, c in nodes) <= upper``."""

    terms: tuple[tuple[int, float], ...]
    nodes: tuple[tuple[int, float], ...]
    upper: float


def fusion_terms(graph: Indexed, nodes: list[int], roots: list[int]) -> list[FusionTerm]:
    """The fusion terms among the kept e-nodes ``nodes``, in e-node order: per (e-node, child
    class) an epilogue term and a prologue term per distinct saving of the child's e-nodes, so
    that a class of many equal forms (thousands of reassociated adds) adds one term per reader."""
    if not graph.fusible:
        return []
    kept = set(nodes)
    root_set = set(roots)
    seen: dict[int, _Child] = {}
    terms = []
    for node in nodes:
        own = graph.node_class[node]
        for child, saving in graph.fusible.get(node, ()):
            if saving <= 0 or child in root_set:
                continue
            if child not in seen:
                seen[child] = _child(graph, child, kept)
            c = seen[child]
            if c.producers or c.chained:
                terms.append(FusionTerm(node, own, child, saving, c.producers, c.readers, chained=c.chained))
            terms.extend(FusionTerm(node, own, child, inner_saving, inner, c.readers, inlined=True)
                         for inner_saving, inner in c.inlined.items())
    return terms


class _Child(NamedTuple):
    """What the terms on one child class share: its kept readers by e-class, its kept e-nodes that
    host epilogues always (``producers``) or only as epilogues themselves (``chained``), and those
    with a prologue saving, by saving."""

    readers: tuple[tuple[int, tuple[int, ...]], ...]
    producers: tuple[int, ...]
    chained: tuple[int, ...]
    inlined: dict[float, tuple[int, ...]]


def _child(graph: Indexed, child: int, kept: set[int]) -> _Child:
    by_class: dict[int, list[int]] = {}
    for reader in dict.fromkeys(graph.parents[child]):  # an e-node may read the child twice
        if reader in kept:
            by_class.setdefault(graph.node_class[reader], []).append(reader)
    members = [n for n in graph.class_nodes[child] if n in kept]
    by_saving: dict[float, list[int]] = {}
    for inner in members:
        if graph.prologue.get(inner, 0.0) > 0:
            by_saving.setdefault(graph.prologue[inner], []).append(inner)
    return _Child(tuple((cls, tuple(r)) for cls, r in by_class.items()),
                  tuple(n for n in members if hosting(graph, n) == 2),
                  tuple(n for n in members if hosting(graph, n) == 1),
                  {saving: tuple(inner) for saving, inner in by_saving.items()})


#: A child read by at most this many e-classes has a row per (fusing reader class, other reader
#: class); one read by more, one row for all (weaker in the LP relaxation, but not quadratic).
PAIRWISE_READERS = 6
#: The terms of a child that need one of the same producers get a row each while these rows hold
#: at most this many entries in all, one row for all of them beyond (the same LP bound; HiGHS's
#: path differs, and on TENSAT's NasRNN it was as often faster one way as the other).
SHARED_ROW_ENTRIES = 1024


def fusion_rows(terms: Sequence[FusionTerm]) -> list[FusionRow]:
    """The rows that make the terms' ``fused`` binaries mean what they say:

    - a term needs one of its producers chosen (an epilogue: or a chained one taking an epilogue
      itself), and a prologue its reader too; the terms of a child with many readers and many
      producers share one such row (:data:`SHARED_ROW_ENTRIES`);
    - no other reader of the child is chosen: per (reader class, child, other reader class), the
      reader class's terms on the child and the other class's readers sum to at most 1; for a child
      of more than :data:`PAIRWISE_READERS` reader classes, one row: its terms, times the reader
      classes less one, and its chosen readers sum to at most the reader classes;
    - an e-node takes at most one epilogue, and only when chosen;
    - a child class's e-node saves once: the prologue terms of the class and the epilogues of its
      e-nodes that have a prologue saving sum to at most the chosen of those e-nodes (inlined in
      one reader at most, and then taking no epilogue);
    - a (reader, child) pair fuses one way at most.

    One e-node of a class is chosen and a fused child has one reader, so terms are summed in a
    row where one alone would do (a child's terms of one kind, a reader class's terms on a child):
    the rows' number and length grow with the e-nodes, not with the readers of a class times its
    e-nodes (TASO's rules grow classes of thousands of reassociated adds)."""
    rows: list[FusionRow] = []
    epilogues: dict[int, list[int]] = {}  # e-node -> its epilogue terms
    pairs: dict[tuple[int, int], list[int]] = {}  # (e-node, child) -> its terms
    readers: dict[tuple[int, int], list[int]] = {}  # (reader class, child) -> its terms
    producing: dict[tuple[int, bool, float], list[int]] = {}  # (child, kind, saving of a prologue) -> its terms
    inlining: dict[int, list[int]] = {}  # child class -> its prologue terms
    for k, term in enumerate(terms):
        if term.inlined:
            inlining.setdefault(term.child, []).append(k)
            rows.append(FusionRow(((k, 1.0),), ((term.node, -1.0),), 0.0))
        else:
            epilogues.setdefault(term.node, []).append(k)
        pairs.setdefault((term.node, term.child), []).append(k)
        readers.setdefault((term.reader, term.child), []).append(k)
        producing.setdefault((term.child, term.inlined, term.saving if term.inlined else 0.0), []).append(k)
    for ks in producing.values():
        term = terms[ks[0]]
        hosts = tuple((j, -1.0) for p in term.chained for j in epilogues.get(p, ()))
        producers = tuple((p, -1.0) for p in term.producers)
        if len(ks) * (len(hosts) + len(producers)) <= SHARED_ROW_ENTRIES:
            rows.extend(FusionRow(((k, 1.0), *hosts), producers, 0.0) for k in ks)
        else:
            rows.append(FusionRow((*((k, 1.0) for k in ks), *hosts), producers, 0.0))
    by_child: dict[int, list[tuple[int, list[int]]]] = {}
    for (reader, child), ks in readers.items():
        by_child.setdefault(child, []).append((reader, ks))
    for child, fusing in by_child.items():
        classes = terms[fusing[0][1][0]].readers
        if len(classes) <= PAIRWISE_READERS:
            rows.extend(FusionRow(tuple((k, 1.0) for k in ks), tuple((r, 1.0) for r in others), 1.0)
                        for reader, ks in fusing for cls, others in classes if cls != reader)
        elif len(classes) > 1:
            weight = len(classes) - 1.0
            rows.append(FusionRow(tuple((k, weight) for _, ks in fusing for k in ks),
                                  tuple((r, 1.0) for _, others in classes for r in others), float(len(classes))))
    for node, ks in epilogues.items():
        rows.append(FusionRow(tuple((k, 1.0) for k in ks), ((node, -1.0),), 0.0))
    for ks in inlining.values():
        inner = sorted({p for k in ks for p in terms[k].producers})
        own = tuple((j, 1.0) for p in inner for j in epilogues.get(p, ()))
        rows.append(FusionRow((*((k, 1.0) for k in ks), *own), tuple((p, -1.0) for p in inner), 0.0))
    rows.extend(FusionRow(tuple((k, 1.0) for k in ks), (), 1.0) for ks in pairs.values() if len(ks) > 1)
    return rows


def hosting(graph: Indexed, node: int) -> int:
    """How freely e-node ``node`` hosts its readers' epilogues: 2 when it opens a kernel (and has no
    prologue saving), 1 when it opens one only as an epilogue itself (an element-wise op), 0 never."""
    if node not in graph.opens:
        return 0
    return 1 if graph.prologue.get(node, 0.0) > 0 else 2


def max_saving(graph: Indexed, node: int) -> float:
    """The most choosing e-node ``node`` may save in a solution: its largest epilogue or its
    prologue, and the largest prologue of each child it may take in."""
    own = max((saving for _, saving in graph.fusible.get(node, ())), default=0.0)
    taken_in = sum(max((graph.prologue.get(n, 0.0) for n in graph.class_nodes[child]), default=0.0)
                   for child, saving in graph.fusible.get(node, ()) if saving > 0)
    return max(own, graph.prologue.get(node, 0.0)) + taken_in


class Plan(NamedTuple):
    """The fusions of a chosen graph: the total saving, each reader's epilogue child and the
    (reader, child) prologues."""

    saving: float
    epilogue: dict[Hashable, Hashable]
    inlined: set[tuple[Hashable, Hashable]]


class Fusing(NamedTuple):
    """What :func:`plan` needs of a chosen e-node (an :class:`~.extractors.ENodeCost` has it)."""

    children: tuple[Hashable, ...]
    opens: bool
    prologue: float
    fusible: tuple[tuple[Hashable, float], ...]


def plan(order: Sequence[Hashable], chosen: Callable[[Hashable], Any], roots: Sequence[Hashable]) -> Plan:
    """The fusions that save most on the chosen graph of the classes ``order`` (children before
    parents), ``chosen(cls)`` giving each class's e-node (children, opens, prologue, fusible).

    A class read once, not by the caller, hangs under its reader: these edges form a forest.
    Per class, the best saving of its subtree when its e-node takes no epilogue (``free``) and
    when it takes one (``took``); a child adds the best of: on its own, in its reader's kernel
    as a prologue (from ``free``), or hosting its reader's epilogue (one child per reader; an
    element-wise child from ``took``)."""
    readers: dict[Hashable, int] = dict.fromkeys(roots, 1)
    for cls in order:
        for child in set(chosen(cls).children):
            readers[child] = readers.get(child, 0) + 1
    free: dict[Hashable, float] = {}
    took: dict[Hashable, float] = {}
    host: dict[Hashable, Hashable] = {}
    attached: set[Hashable] = set()
    for cls in order:
        node = chosen(cls)
        fusible = {child: saving for child, saving in node.fusible if saving > 0}
        base, gain = 0.0, -math.inf
        for child in dict.fromkeys(node.children):
            if readers[child] != 1:
                continue
            attached.add(child)
            alone = max(free[child], took[child])
            inner = chosen(child).prologue
            keep = max(alone, free[child] + inner) if child in fusible and inner > 0 else alone
            base += keep
            hosting = took[child] if inner > 0 else alone  # an element-wise child hosts only as an epilogue
            if child in fusible and chosen(child).opens and hosting + fusible[child] - keep > gain:
                gain, host[cls] = hosting + fusible[child] - keep, child
        free[cls], took[cls] = base, base + gain
    state = {cls: took[cls] > free[cls] for cls in order if cls not in attached}
    saving = math.fsum(max(free[cls], took[cls]) for cls in state)
    epilogue: dict[Hashable, Hashable] = {}
    inlined: set[tuple[Hashable, Hashable]] = set()
    for cls in reversed(order):
        node = chosen(cls)
        fusible = {child: s for child, s in node.fusible if s > 0}
        for child in dict.fromkeys(node.children):
            if readers[child] != 1:
                continue
            if state[cls] and host.get(cls) == child:
                epilogue[cls] = child
                state[child] = took[child] > free[child] or chosen(child).prologue > 0
                continue
            inner = chosen(child).prologue
            if child in fusible and inner > 0 and free[child] + inner > max(free[child], took[child]):
                inlined.add((cls, child))
                state[child] = False
            else:
                state[child] = took[child] > free[child]
    return Plan(saving, epilogue, inlined)


def taken(graph: Indexed, terms: list[FusionTerm], choice: Mapping[int, int], roots: list[int]) -> list[bool]:
    """Per term, whether a solution choosing ``choice`` (class position -> e-node number)
    takes it, as :func:`plan` (and :func:`~.extractors.dag_cost`) prices that solution."""
    order, _ = postorder(roots, lambda cls: graph.node_children[choice[cls]])

    def view(cls: int) -> Fusing:
        node = choice[cls]
        return Fusing(graph.node_children[node], node in graph.opens, graph.prologue.get(node, 0.0),
                      graph.fusible.get(node, ()))

    fused = plan(order, view, roots)
    on = {(choice[reader], child, False) for reader, child in fused.epilogue.items()}
    on |= {(choice[reader], child, True) for reader, child in fused.inlined}
    return [(t.node, t.child, t.inlined) in on and choice[t.child] in t.producers + t.chained for t in terms]


def fuses(model: Any) -> bool:
    """Whether a cost model prices fusion: it says which calls open a kernel (``opens_kernel``)
    and what a call saves inside the kernel of an input (``epilogue_saving``); a
    ``prologue_saving`` (what a call saves inside its reader's kernel) is optional."""
    return callable(getattr(model, "epilogue_saving", None)) and callable(getattr(model, "opens_kernel", None))


def call_fusion(model: Any, op: str, attrs: Mapping[str, Any], inputs: Sequence[Any], output: Any,
                groups: Sequence[tuple[int, ...]], cost: float) -> tuple[bool, tuple[float, ...], float]:
    """What a fusing ``model`` says of one call costing ``cost``: whether its kernel opens to
    epilogues, its saving inside the kernel of each input tensor (``groups``: the positions
    reading one tensor each), and its prologue saving; savings capped at ``cost``."""
    savings = tuple(min(cost, float(model.epilogue_saving(op, attrs, inputs, output, group))) for group in groups)
    prologue = getattr(model, "prologue_saving", None)
    inside = min(cost, float(prologue(op, attrs, inputs, output))) if callable(prologue) else 0.0
    return bool(model.opens_kernel(op, output)), savings, max(inside, 0.0)
