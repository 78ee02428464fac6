"""From a saturated e-graph back to a computation graph.

:func:`priced` reads a snapshot of the e-graph as the extractors see it: each
e-class's e-nodes with their cost under a cost model (op calls only; variables,
constants, tuples and projections are free). :func:`rebuild` turns the choice an
extractor made into a :class:`~gsl_eq.graph.Graph`, every call re-typed by TVM, and
:func:`rules_used` names the rules that choice relies on.
:func:`egglog_extract` is egglog's own extraction (tree cost, every e-node 1),
kept as the baseline the other extractors are compared with.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Collection, Hashable, Mapping, Sequence

from egglog import bindings as egg

from ..egraph import EGraph, Runner, Snapshot
from ..egraph.egraph import SPAN, int_call, int_literal
from ..graph import Graph, Kind, Node
from ..run.bounded import run_bounded
from ..workload.buildable import Call, unbuildable
from ..cost.model import CostModel
from ..extract.extractors import ENodeCost, ExtractGraph, ExtractionError
from ..extract.fusion import call_fusion, fuses


def priced(eg: EGraph, snap: Snapshot, model: CostModel, check_builds: bool = True,
           left_out: Collection[tuple[Hashable, int]] = ()) -> ExtractGraph:
    """The e-graph as extractors see it: e-class -> [ENodeCost(cost, child e-classes)], in snapshot order.

    A call computed from the parameters and constants alone costs nothing: it is folded into
    a new parameter after extraction, if TVM can build it. One TVM cannot build
    (:func:`~gsl_eq.workload.buildable.unbuildable`; with ``check_builds``) stays a computation
    and costs what the model says, and so does every call reading it: an equal form TVM can
    build wins on cost. In an e-class that folds, the e-nodes that read runtime inputs are
    never chosen, so what is free is really folded. The e-nodes in ``left_out`` (e-class, index)
    cost infinity: no extractor chooses them (the cycle filter's, :mod:`gsl_eq.egraph.cycles`).
    A model that fuses element-wise calls with the kernels around them (:func:`~.fusion.fuses`,
    as the gpu model) marks each call's e-node with what it opens and saves
    (:class:`~gsl_eq.extract.extractors.ENodeCost`), so that extraction prices fusion as it does.
    """
    folds, unbuildable_calls = _folding(eg, snap, check_builds)
    fusing = fuses(model)
    memo: dict[tuple, float] = {}
    out: dict[Hashable, list[ENodeCost]] = {}
    for cls, enodes in snap.classes.items():
        row = out[cls] = []
        for i, e in enumerate(enodes):
            cost = 0.0
            param_only = e.name in eg.params if e.kind is Kind.VAR else all(c in snap.foldable for c in e.children)
            free = param_only and (e.kind is Kind.VAR or all(c in folds for c in e.children) and
                                   _signature(eg, snap, cls, e) not in unbuildable_calls)
            if cls in folds and not param_only or (cls, i) in left_out:
                cost = math.inf
            elif e.kind is Kind.CALL and not free:
                key = (e.op, e.attrs, tuple(snap.types[c] for c in e.children), snap.types[cls])
                if key not in memo:
                    memo[key] = float(model(e.op, dict(eg.attrs[e.attrs]), [eg.types[t] for t in key[2]],
                                            eg.types[key[3]]))
                cost = memo[key]
                if fusing:
                    row.append(_fusing(eg, model, e, key, cost, folds, memo))
                    continue
            row.append(ENodeCost(cost, tuple(e.children), e.op or e.kind.value))
    return out


def as_of(egraph: ExtractGraph, snap: Snapshot, iteration: int) -> ExtractGraph:
    """``egraph`` (priced from ``snap``) with the e-nodes born after saturation's ``iteration``
    costing infinity: the terms the e-graph held then (with the unions made since), a program far
    smaller where TASO's rules went on to grow it tenfold, and each of its choices one of ``egraph``'s."""
    return {cls: [e if 0 <= born.born <= iteration else dataclasses.replace(e, cost=math.inf)
                  for e, born in zip(row, snap.classes[cls])]
            for cls, row in egraph.items()}


def _fusing(eg: EGraph, model: Any, e: Any, key: tuple, cost: float, folds: set[Hashable],
            memo: dict[tuple, Any]) -> ENodeCost:
    """A call's e-node under a model that fuses (:func:`~.fusion.fuses`: the gpu model): whether
    its kernel takes epilogues, what it saves inside the kernel of each child e-class (a folded
    child is a parameter: no kernel) and inside its reader's. ``memo``: the model's answers by
    call signature."""
    if cost == math.inf:
        return ENodeCost(cost, tuple(e.children), e.op)
    children = [child for child in dict.fromkeys(e.children) if child not in folds]
    groups = tuple(tuple(k for k, c in enumerate(e.children) if c == child) for child in children)
    if (key, groups) not in memo:
        memo[key, groups] = call_fusion(model, e.op, dict(eg.attrs[e.attrs]), [eg.types[t] for t in key[2]],
                                        eg.types[key[3]], groups, cost)
    opens, savings, prologue = memo[key, groups]
    fusible = tuple((child, saving) for child, saving in zip(children, savings) if saving > 0)
    return ENodeCost(cost, tuple(e.children), e.op, opens=opens, fusible=fusible, prologue=prologue)


def _signature(eg: EGraph, snap: Snapshot, cls: Hashable, e: Any) -> Call | None:
    """The call signature of e-node ``e`` of e-class ``cls`` (None for what is not a call)."""
    if e.kind is not Kind.CALL:
        return None
    return e.op, tuple(eg.attrs[e.attrs]), tuple(eg.types[snap.types[c]] for c in e.children), eg.types[snap.types[cls]]


def _folding(eg: EGraph, snap: Snapshot, check_builds: bool) -> tuple[set[Hashable], set[Call]]:
    """The e-classes folding computes, and the parameter-only call signatures TVM cannot build.

    An e-class folds when it holds a parameter, a constant, or an e-node TVM can build whose
    children all fold (a least fixpoint over the foldable e-classes)."""
    foldable = snap.foldable
    param_only = {cls: [e for e in snap.classes[cls] if (e.name in eg.params if e.kind is Kind.VAR else
                                                         all(c in foldable for c in e.children))]
                  for cls in foldable if cls in snap.classes}
    failing = unbuildable(_signature(eg, snap, cls, e) for cls, enodes in param_only.items()
                          for e in enodes if e.kind is Kind.CALL) if check_builds else set()
    folds: set[Hashable] = set()
    changed = True
    while changed:
        changed = False
        for cls, enodes in list(param_only.items()):
            if any(all(c in folds for c in e.children) and _signature(eg, snap, cls, e) not in failing
                   for e in enodes):
                folds.add(cls)
                del param_only[cls]
                changed = True
    return folds, failing


def roots(runner: Runner, snap: Snapshot) -> list[Hashable]:
    """The e-classes of the loaded graph's outputs."""
    return [snap.handles[runner.handles[o]] for o in runner.graph.outputs]


def settled(egraph: ExtractGraph, snap: Snapshot, choice: Mapping[Hashable, int], root_classes: list[Hashable]
            ) -> dict[Hashable, int]:
    """``choice`` with each e-class that folds for free taking its first-born free e-node (loaded
    first): a folded computation costs nothing whichever form it takes, and the form a rule's target
    first built is one a proof's steps build again (:mod:`gsl_eq.proof.goal`), not one that later
    rules reassociated. ``choice`` itself where that would close a cycle."""
    picked = dict(choice)
    stack, seen = list(root_classes), set()
    while stack:
        cls = stack.pop()
        if cls in seen:
            continue
        seen.add(cls)
        row = egraph[cls]
        if cls not in picked or cls in snap.foldable and row[picked[cls]].cost == 0:
            free = [i for i, e in enumerate(row) if e.cost == 0 and all(c in snap.foldable for c in e.children)]
            if cls not in snap.foldable or not free:  # a new child that does not fold: keep the choice
                return dict(choice)
            picked[cls] = min(free, key=lambda i: (max(snap.classes[cls][i].born, 0), i))
        stack.extend(row[picked[cls]].children)
    return picked if _acyclic(egraph, picked, root_classes) else dict(choice)


def _acyclic(egraph: ExtractGraph, choice: Mapping[Hashable, int], root_classes: list[Hashable]) -> bool:
    state: dict[Hashable, bool] = {}  # False: on the path; True: done
    for root in root_classes:
        stack = [(root, iter(egraph[root][choice[root]].children))]
        if root in state:
            continue
        state[root] = False
        while stack:
            cls, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[cls] = True
                stack.pop()
            elif child not in state:
                state[child] = False
                stack.append((child, iter(egraph[child][choice[child]].children)))
            elif state[child] is False:
                return False
    return True


def rebuild(runner: Runner, snap: Snapshot, choice: Mapping[Hashable, int]) -> Graph:
    """The graph an extractor chose: for each needed e-class its chosen e-node, on the original inputs."""
    eg, graph = runner.egraph, runner.graph
    variables = {n.name: n for n in graph.inputs}
    built: dict[Hashable, Node] = {}

    def node(cls: Hashable) -> Node:
        # Iterative post-order: chosen graphs can be deep (BERT: thousands of nodes in a chain).
        stack = [cls]
        while stack:
            top = stack[-1]
            if top in built:
                stack.pop()
                continue
            if top not in choice:
                raise ExtractionError(f"the choice has no e-node for e-class {top!r}")
            e = snap.classes[top][choice[top]]
            missing = [c for c in e.children if c not in built]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            built[top] = _node(eg, e.kind, e.op, e.attrs, e.name, [built[c] for c in e.children], variables)
            expected = eg.types[snap.types[top]]
            if built[top].type != expected:
                raise ExtractionError(f"e-class {top!r} has type {expected} but its chosen e-node "
                                      f"{built[top]} has type {built[top].type}")
        return built[cls]

    outputs = [node(c) for c in roots(runner, snap)]
    return Graph(graph.inputs, outputs, graph.returns_tuple)


def _node(eg: EGraph, kind: Kind, op: str | None, payload: int, name: str | None, inputs: Sequence[Node],
          variables: Mapping[str, Node]) -> Node:
    if kind is Kind.VAR:
        return variables[name]
    if kind is Kind.CONST:
        return Node.const(eg.consts[payload])
    if kind is Kind.TUPLE:
        return Node.tuple(inputs)
    if kind is Kind.GETITEM:
        return Node.getitem(inputs[0], payload)
    return Node.call(op, inputs, dict(eg.attrs[payload]))


def rules_used(runner: Runner, snap: Snapshot, choice: Mapping[Hashable, int],
               deadline: float | None = None) -> set[int] | None:
    """The indices (in ``runner.rules``) of the rules the chosen term relies on, over the e-nodes
    :func:`rebuild` would use (asked of the e-graph once, :meth:`~gsl_eq.egraph.Runner.attribute`):

    * a chosen e-node that rules created (not one of the loaded graph's) counts for every rule
      whose target builds it: each one's rewrite yields it on its own (a commutativity rule
      applied twice builds again what another rule created; it counts too);
    * a chosen e-node of a target built outside egglog (:mod:`~gsl_eq.egraph.seeding`) counts for its rule;
    * a chosen e-node of the loaded graph standing where the loaded graph had another node (at a
      root, or as a child of a chosen loaded e-node) got there through a union: it counts for the
      rules whose targets build it again (``relu(x)`` for ``relu(relu(x))``) or, if none does, for
      those that union a matched node into its e-class (``x`` for ``transpose(transpose(x))``).
      The e-graph does not keep which union joined which e-nodes, so the latter may name a rule
      whose union the term does not need.

    Only those e-classes are asked about. egglog cannot be stopped inside its query (it took
    minutes on some 50k-e-node e-graphs of TASO's rules), so with a ``deadline`` the query runs
    in a forked process (:func:`~gsl_eq.run.bounded.run_bounded`; on at most 1,000 e-nodes, here) and None
    comes back if it is not done by then.
    """
    loaded, origin = runner.egraph.loaded, snap.provenance
    built: set[Hashable] = set()  # e-classes whose chosen e-node's builders count
    stand_ins: set[Hashable] = set()  # ... or, if none builds it, the rules that union into it
    outside: set[int] = set()  # rules whose targets, built outside egglog, hold a chosen e-node

    def check(cls: Hashable, expected: set[int]) -> None:
        """The chosen e-node of ``cls`` stands where the loaded graph had the nodes ``expected``."""
        e = snap.classes[cls][choice[cls]]
        if origin.loaded_from(e) and expected.isdisjoint(origin.loaded_from(e)):
            stand_ins.add(cls)

    for out in runner.graph.outputs:
        check(snap.handles[runner.handles[out]], {runner.handles[out]})
    heads = roots(runner, snap)
    stack, seen = list(heads), set()
    while stack:
        cls = stack.pop()
        if cls not in seen:
            seen.add(cls)
            e = snap.classes[cls][choice[cls]]
            handles = origin.loaded_from(e)
            if not handles:
                built.add(cls)
                outside |= origin.built_outside(e)
            for i, child in enumerate(e.children):
                if handles:
                    check(child, {loaded[h][2][i] for h in handles})
                stack.append(child)
    if not built and not stand_ins:
        return set()

    def ask() -> list[set[int]]:
        """Per e-class of ``built`` then of ``stand_ins``, the rules that count (indices cross a fork)."""
        found = runner.attribute(snap, choice, heads, wanted=built | stand_ins)
        return ([found.built.get(cls, set()) for cls in built]
                + [found.built.get(cls) or found.merged.get(cls, set()) for cls in stand_ins])

    per_class = ask() if deadline is None else run_bounded(ask, deadline - time.perf_counter(), snap.num_enodes)
    return None if per_class is None else set().union(outside, *per_class)


def egglog_extract(runner: Runner, snap: Snapshot) -> dict[Hashable, int]:
    """egglog's built-in extraction of every output (tree cost, every e-node costing 1), as a choice
    of e-node per e-class of ``snap`` (taken after the run), for :func:`rebuild`."""
    eg = runner.egraph
    position = {e.key: (cls, i) for cls, enodes in snap.classes.items() for i, e in enumerate(enodes)}
    choice: dict[Hashable, int] = {}
    for out in runner.graph.outputs:
        (result,) = eg.egg.run_program(egg.Extract(SPAN, int_call("Id", runner.handles[out]), int_literal(0)))
        dag = result.termdag
        classes: dict[int, Hashable] = {}  # term -> its e-class
        for term_id in range(dag.size()):
            term = dag.get(term_id)
            if not isinstance(term, egg.TermApp):
                continue
            cls, i = position[(term.name, _value(dag.get(term.args[0])), tuple(classes[a] for a in term.args[1:]))]
            classes[term_id] = cls
            choice.setdefault(cls, i)  # egglog picks one e-node per e-class for every tree
    return choice


def _value(term: Any) -> Any:
    """The Python value of an egglog literal term."""
    return term.value.value
