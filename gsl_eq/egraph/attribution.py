"""Which rules built the extracted term: provenance read back from the e-graph.

After extraction, :func:`attribute` asks egglog which rules' targets build each chosen
e-node, and which rules' unions put a matched node into a chosen e-class, by running
the ``provenance`` rules (:mod:`.compile`) joined with the chosen e-nodes only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection, Mapping

from egglog import bindings as egg

from ..graph import Kind
from .egraph import SPAN, EGraph, Snapshot, call, int_call, int_literal, want_relation


@dataclass
class Attribution:
    """Per chosen e-class (:func:`attribute`): the indices of the rules whose targets build
    its chosen e-node (``built``), and of those whose target is a matched node unioned into it
    (``merged``: no e-node built)."""

    built: dict[Any, set[int]] = field(default_factory=dict)
    merged: dict[Any, set[int]] = field(default_factory=dict)


def attribute(eg: EGraph, snap: Snapshot, choice: Mapping[Any, int], classes: Collection[Any],
              wanted: Collection[Any] | None = None) -> Attribution:
    """Which rules build the chosen e-node of each of ``classes`` and every e-class it reads,
    transitively (``choice``: e-class of ``snap`` -> index of its chosen e-node), and which
    union a matched node into them; only of the e-classes ``wanted``, if given (the query's
    cost grows with the chosen e-nodes it asks about). The e-graph must not have changed since ``snap``.

    The ``provenance`` rules (:mod:`.compile`) run once, joined with the chosen e-nodes
    only: a rule counts for an e-node when its source matches, under a key it accepted,
    where its target builds that very e-node. Each chosen e-class gets a handle
    ``(Chosen i)``, unioned with its chosen e-node (which exists: no e-node is added).
    """
    order: list[Any] = []
    index: dict[Any, int] = {}
    for root in classes:  # children before parents, iteratively: terms can be deep
        stack = [(root, False)]
        while stack:
            cls, done = stack.pop()
            if cls in index:
                continue
            if done:
                index[cls] = len(order)
                order.append(cls)
                continue
            stack.append((cls, True))
            stack += [(c, False) for c in snap.classes[cls][choice[cls]].children if c not in index]
    base = eg.attributed  # earlier attributions' handles stay in the e-graph: number past them
    eg.attributed += len(order)
    commands = []
    for i, cls in enumerate(order):
        e = snap.classes[cls][choice[cls]]
        ctor, literal, children = e.key
        lit = egg.Lit(SPAN, egg.String(literal)) if e.kind is Kind.VAR else int_literal(literal)
        handles = [int_call("Chosen", base + index[c]) for c in children]
        commands.append(egg.ActionCommand(egg.Union(SPAN, int_call("Chosen", base + i),
                                                    call(ctor, lit, *handles))))
        if wanted is not None and cls not in wanted:
            continue
        facts = [call("WantClass", int_call("Chosen", base + i), int_literal(base + i))]
        if e.kind is not Kind.VAR:
            facts.append(call(want_relation(ctor), lit, *handles, int_literal(base + i)))
        commands += [egg.ActionCommand(egg.Expr_(SPAN, fact)) for fact in facts]
    if commands:
        eg.egg.run_program(*commands)
    eg.run("(run provenance 1)")
    found = Attribution()
    for relation, table in (("BuiltChosen", found.built), ("MergedChosen", found.merged)):
        (out,) = eg.egg.run_program(egg.PrintFunction(SPAN, relation, None, None, egg.CSVPrintFunctionMode()))
        for line in str(out).splitlines():
            if line:
                i, k = (int(v) for v in line.split(",")[1:3])
                if i >= base:
                    table.setdefault(order[i - base], set()).add(k)
    return found
