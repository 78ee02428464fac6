"""From a saturated e-graph back to a computation graph.

:func:`priced` reads a snapshot of the e-graph as the extractors see it: each
e-class's e-nodes with their cost under a cost model (op calls only; variables,
constants, tuples and projections are free). :func:`rebuild` turns the choice an
extractor made into a :class:`~gsl_eq.graph.Graph`, every call re-typed by TVM.
:func:`egglog_extract` is egglog's own extraction (tree cost, every e-node 1),
kept as the baseline the other extractors are compared with.
"""

from __future__ import annotations

import math
from typing import Any, Hashable, Mapping, Sequence

from egglog import bindings as egg

from ..egraph import EGraph, Runner, Snapshot
from ..egraph.egraph import SPAN, int_call, int_literal
from ..graph import Graph, Kind, Node
from .cost import CostModel
from .extractors import ENodeCost, ExtractGraph, ExtractionError


def priced(eg: EGraph, snap: Snapshot, model: CostModel) -> ExtractGraph:
    """The e-graph as extractors see it: e-class -> [ENodeCost(cost, child e-classes)], in snapshot order.

    A call whose inputs are all foldable (computed from the parameters and
    constants alone) costs nothing: it is folded into a new parameter after
    extraction. In a foldable e-class, the e-nodes that are not (they read
    runtime inputs) are never chosen, so what is free is really folded.
    """
    foldable = snap.foldable
    memo: dict[tuple, float] = {}
    out: dict[Hashable, list[ENodeCost]] = {}
    for cls, enodes in snap.classes.items():
        row = out[cls] = []
        for e in enodes:
            cost = 0.0
            param_only = e.name in eg.params if e.kind is Kind.VAR else all(c in foldable for c in e.children)
            if cls in foldable and not param_only:
                cost = math.inf
            elif e.kind is Kind.CALL and not param_only:
                key = (e.op, e.attrs, tuple(snap.types[c] for c in e.children), snap.types[cls])
                if key not in memo:
                    memo[key] = float(model(e.op, dict(eg.attrs[e.attrs]), [eg.types[t] for t in key[2]],
                                            eg.types[key[3]]))
                cost = memo[key]
            row.append(ENodeCost(cost, tuple(e.children), e.op or e.kind.value))
    return out


def roots(runner: Runner, snap: Snapshot) -> list[Hashable]:
    """The e-classes of the loaded graph's outputs."""
    return [snap.handles[runner.handles[o]] for o in runner.graph.outputs]


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


def egglog_extract(runner: Runner) -> Graph:
    """egglog's built-in extraction of every output (tree cost, every e-node costing 1), as a graph."""
    eg, graph = runner.egraph, runner.graph
    variables = {n.name: n for n in graph.inputs}
    ctors = {name: (kind, op) for name, (kind, op, _) in eg.constructors.items()}
    memo: dict[tuple, Node] = {}  # hash-consing across the outputs' separate term DAGs
    outputs = []
    for out in graph.outputs:
        (result,) = eg.egg.run_program(egg.Extract(SPAN, int_call("Id", runner.handles[out]), int_literal(0)))
        dag = result.termdag
        nodes: dict[int, Node] = {}
        for term_id in range(dag.size()):
            term = dag.get(term_id)
            if not isinstance(term, egg.TermApp):
                continue
            literals = [_value(dag.get(a)) for a in term.args if not isinstance(dag.get(a), egg.TermApp)]
            children = [nodes[a] for a in term.args if isinstance(dag.get(a), egg.TermApp)]
            key = (term.name, tuple(literals), tuple(id(c) for c in children))
            if key not in memo:
                if term.name == "Var":
                    memo[key] = _node(eg, Kind.VAR, None, -1, literals[0], (), variables)
                elif term.name == "Const":
                    memo[key] = _node(eg, Kind.CONST, None, literals[0], None, (), variables)
                else:  # the literal is the e-node's form; its payload is what the node needs
                    kind, op = ctors.get(term.name, (Kind.GETITEM, None))
                    payload = eg.forms[literals[0]].payload
                    memo[key] = _node(eg, kind, op, -1 if payload is None else payload, None, children, variables)
            nodes[term_id] = memo[key]
        outputs.append(nodes[result.term])
    return Graph(graph.inputs, outputs, graph.returns_tuple)


def _value(term: Any) -> Any:
    return term.value.value
