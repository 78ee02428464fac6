"""Seeding: the maximal matches of variadic-output rules, applied when the graph is loaded.

egglog e-matches a rule with variadic outputs (``parallel_matmul_variadic``: every matmul
reading one tensor) as fixed instances of 1 to ``max_variadic`` outputs, and each instance
matches every subset of that size: eight matmuls reading one tensor give 28 pairs and 56
triples, and no instance of eight can be e-matched (its join enumerates orderings: minutes).
So, where the loaded graph has a larger group, greedy mode's own matcher finds it whole, as
greedy mode would rewrite it, and its target is added to the e-graph with each source output
in one e-class with its target's. The e-graph then holds the subsets up to ``max_variadic``
and every maximal group of the loaded graph; groups formed later by other rules are merged
by the instances only.

    seed(egraph, graph, handles, rules, max_variadic=3, node_limit=50_000)  # {"parallel_matmul_variadic": 9}
"""

from __future__ import annotations

import time
from typing import Sequence

from ..frontend import Subst
from ..frontend.pat import Variadic
from ..graph import Graph, Node
from ..graph.walk import postorder
from ..greedy.match import Matcher
from ..greedy.rewriter import Rejection, build_target
from .egraph import EGraph


def seeded_rules(rules: Sequence[Subst]) -> list[int]:
    """The indices of the rules whose source outputs are variadic (the ones seeding applies; the
    frontend requires their instances to share an input, so greedy mode matches them)."""
    return [k for k, rule in enumerate(rules) if rule.variadic and isinstance(rule.source.outputs[0], Variadic)]


def seed(eg: EGraph, graph: Graph, handles: dict[Node, int], rules: Sequence[Subst], max_variadic: int,
         node_limit: int, deadline: float | None = None, skip: Sequence[int] = ()) -> dict[str, int]:
    """Apply each variadic-output rule of ``rules`` (but the indices ``skip``) to its greedy
    matches in ``graph`` with more than ``max_variadic`` outputs: the target's nodes are added to
    ``eg`` (``handles``: the loaded graph's) and unioned with the source outputs. A target that
    would take the e-graph past ``node_limit`` e-nodes is left out; none is added after
    ``deadline`` (a ``time.perf_counter()`` value). Returns the matches applied per rule name."""
    applied: dict[str, int] = {}
    room = node_limit - eg.size()
    for k in seeded_rules(rules):
        if k in skip:
            continue
        rule = rules[k]
        for m in Matcher(rule, graph).matches(lambda m: len(m.outputs) > max_variadic):
            if deadline is not None and time.perf_counter() > deadline:
                break
            built = build_target(rule, m)
            if isinstance(built, Rejection):
                continue
            new = [n for n in postorder(built.targets, lambda n: () if n in handles else n.inputs)[0]
                   if n not in handles]
            if len(new) > room:  # each adds one e-node at most
                continue
            room -= eg.add_nodes(new, handles, rule=k)
            eg.union((handles[s], handles[t]) for s, t in zip(m.outputs, built.targets))
            applied[rule.name] = applied.get(rule.name, 0) + 1
    if applied:
        eg.fold()
    return applied
