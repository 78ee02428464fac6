"""What every term of an e-class contains (extract/implied.py), against the terms themselves,
and the rows it gives the exact extractor: sound on random e-graphs, tight on TASO's merges."""

from __future__ import annotations

import highspy
import numpy as np
import pytest

from gsl_eq.extract import ENodeCost as N, greedy_dag_extract, ilp_extract
from gsl_eq.extract.extractors import Indexed
from gsl_eq.extract.ilp import _Program
from gsl_eq.extract.implied import contained, implied_rows
from gsl_eq.extract.kept import kept_nodes

from .test_extractors import brute_force, check, random_egraph, random_layered_egraph


def simple_terms(graph: Indexed, members: dict[int, list[int]], cls: int, path: frozenset = frozenset()):
    """The classes of each term of ``cls`` built from ``members`` that repeats no class along a
    path (every other term contains one of these: cut the repetition out)."""
    if cls in path:
        return
    for node in members[cls]:
        parts = [[frozenset()]]
        for child in graph.node_children[node]:
            parts = [[*done, sub] for done in parts for sub in simple_terms(graph, members, child, path | {cls})]
        for combination in parts:
            yield frozenset({cls}).union(*combination)


def true_containment(graph: Indexed, nodes: list[int]) -> dict[int, frozenset]:
    members: dict[int, list[int]] = {}
    for node in nodes:
        members.setdefault(graph.node_class[node], []).append(node)
    truth = {}
    for cls in members:
        terms = list(simple_terms(graph, members, cls))
        truth[cls] = frozenset.intersection(*terms) - {cls} if terms else frozenset()
    return truth


@pytest.mark.parametrize("seed", range(60))
def test_what_every_term_contains_against_the_terms(seed):
    egraph, roots = (random_layered_egraph if seed % 2 else random_egraph)(seed)  # cycles included
    graph = Indexed(egraph)
    root_positions = graph.root_positions(roots)
    try:
        nodes = kept_nodes(graph, root_positions)
    except Exception:  # no term at all: nothing to contain
        return
    truth = true_containment(graph, nodes)
    found = contained(graph, nodes)
    leaves = contained(graph, nodes, leaves_only=True)
    for cls, expected in truth.items():
        assert set(found.classes(found.sets[cls])) == expected
        assert set(leaves.classes(leaves.sets[cls])) == {c for c in expected if c in leaves.tracked}


def test_the_rows_are_a_transitive_reduction_and_partial_rows_need_two_paths():
    egraph = {
        "r": [N(1, ("s", "c")), N(1, ("t",)), N(3, ("b",))],  # r = s + c = f(t) = g(b)
        "s": [N(1, ("a", "b"))],
        "t": [N(1, ("a", "s"))],  # t reaches a, b through s
        "a": [N(0)], "b": [N(0)], "c": [N(0)],
    }
    graph = Indexed(egraph)
    nodes = kept_nodes(graph, graph.root_positions(["r"]))
    pairs, partial = implied_rows(graph, nodes)
    name = graph.classes.__getitem__
    assert {(name(c), name(d)) for c, d in pairs} == {("r", "b"), ("s", "a"), ("s", "b"), ("t", "s")}
    # two of r's e-nodes contain s (and so a): one row for s, none for a; one contains t or c: none
    assert [(sorted(name(graph.node_class[n]) for n in containing), name(d)) for containing, d in partial] \
        == [(["r", "r"], "s")]


def merged_matmul(k: int):
    """``k`` outputs ``x @ w_i`` (cost 10 each) that a merged matmul (cost 12) computes at once,
    read through two split e-classes of it (different section lists, say): the relaxation
    without containment pays half the merged matmul per output."""
    egraph = {"x": [N(0)], "m": [N(10 + 2 * (k - 1), ("x",))], "s1": [N(1, ("m",))], "s2": [N(1, ("m",))]}
    for i in range(k):
        egraph[f"o{i}"] = [N(10, ("x",)), N(0, ("s1",)), N(0, ("s2",))]
    egraph["r"] = [N(1, tuple(f"o{i}" for i in range(k)))]
    return egraph, ["r"]


def relaxation(egraph, roots) -> float:
    graph = Indexed(egraph)
    root_positions = graph.root_positions(roots)
    nodes = kept_nodes(graph, root_positions)
    warm = greedy_dag_extract(egraph, roots)
    program = _Program(graph, nodes, root_positions, warm.cost)
    columns = program.highs.getNumCol()
    program.highs.changeColsIntegrality(columns, np.arange(columns, dtype=np.int32),
                                        np.array([highspy.HighsVarType.kContinuous] * columns))
    program.highs.run()
    return program.highs.getInfo().objective_function_value / program.scale


@pytest.mark.parametrize("k", [2, 3])
def test_the_relaxation_pays_a_merged_matmul_once(k):
    egraph, roots = merged_matmul(k)
    exact = ilp_extract(egraph, roots)
    check(egraph, roots, exact)
    assert exact.cost == brute_force(egraph, roots) == 1 + 1 + 10 + 2 * (k - 1)
    assert relaxation(egraph, roots) == pytest.approx(exact.cost)  # tight: the outputs contain m
    assert ilp_extract(egraph, roots, solver="cp-sat").cost == exact.cost


def rows_by_definition(graph: Indexed, nodes: list[int]):
    """implied_rows's rows as its notes define them, class by class and pair by pair."""
    found = contained(graph, nodes)
    inside = {cls: set(found.classes(bits)) for cls, bits in found.sets.items()}
    pairs = {(cls, d) for cls, ds in inside.items() for d in ds if not any(d in inside[e] for e in ds)}
    partial = set()
    for cls, own in found.members.items():
        reached = {node: set(found.classes(found.reached(graph, node))) for node in own}
        by_nodes: dict[tuple, set] = {}
        for d in set().union(*reached.values()) - inside[cls]:
            containing = tuple(node for node in own if d in reached[node])
            if len(containing) >= 2:
                by_nodes.setdefault(containing, set()).add(d)
        partial |= {(containing, d) for containing, ds in by_nodes.items() for d in ds
                    if not any(d in inside[e] for e in ds - {d})}
    return pairs, partial


@pytest.mark.parametrize("seed", range(60))
def test_the_rows_are_those_the_notes_define(seed):
    egraph, roots = (random_layered_egraph if seed % 2 else random_egraph)(seed)  # cycles included
    graph = Indexed(egraph)
    try:
        nodes = kept_nodes(graph, graph.root_positions(roots))
    except Exception:  # no term at all: no rows
        return
    pairs, partial = implied_rows(graph, nodes)
    assert len(pairs) == len(set(pairs)) and len(partial) == len({(tuple(c), d) for c, d in partial})
    assert (set(pairs), {(tuple(c), d) for c, d in partial}) == rows_by_definition(graph, nodes)


def test_no_rows_above_the_class_limit(monkeypatch):
    import gsl_eq.extract.implied as implied

    egraph, roots = merged_matmul(2)
    graph = Indexed(egraph)
    nodes = kept_nodes(graph, graph.root_positions(roots))
    assert implied_rows(graph, nodes) != ([], [])
    monkeypatch.setattr(implied, "IMPLIED_CLASS_LIMIT", 3)
    assert implied_rows(graph, nodes) == ([], [])


def test_the_exact_extractor_answers_after_highs_ran_in_this_process():
    # relaxation() runs HiGHS here, starting its thread pool; the extractor solves in a fork,
    # where that pool's threads do not exist: it must not wait for them (it did, until its limit)
    egraph, roots = merged_matmul(3)
    relaxation(egraph, roots)
    exact = ilp_extract(egraph, roots, time_limit=20, solver="highs")
    assert (exact.status, exact.cost) == ("optimal", 16)
