"""The K cheapest distinct extractions (ilp_candidates), checked against enumeration of every graph."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from gsl_eq.extract import (
    ENodeCost as N,
    ExtractionError,
    dag_cost,
    greedy_dag_extract,
    ilp_candidates,
    ilp_extract,
    is_acyclic,
)
from tests.extract.test_extractors import (
    CYCLE, SIBLINGS, ac_sum_egraph, acyclic, check, random_egraph, random_layered_egraph,
)


def undominated(egraph):
    """Per class, the e-nodes no other dominates: none earlier in (cost, index) order uses a
    subset of its child classes (the ILP never chooses the others)."""
    kept = {}
    for cls, nodes in egraph.items():
        ranked = sorted(range(len(nodes)), key=lambda i: nodes[i].cost)
        kept[cls] = [i for rank, i in enumerate(ranked)
                     if not any(set(nodes[j].children) <= set(nodes[i].children) for j in ranked[:rank])]
    return kept


def all_graphs(egraph, roots, options=None):
    """Every acyclic choice on the classes reachable from the roots (each a distinct graph)
    -> its DAG cost, by enumeration: branch on a reachable class without a chosen e-node."""
    options = options or {cls: range(len(nodes)) for cls, nodes in egraph.items()}
    graphs = {}

    def extend(choice):
        seen, todo = set(), list(roots)
        while todo:
            cls = todo.pop()
            if cls in seen:
                continue
            seen.add(cls)
            if cls not in choice:
                for index in options[cls]:
                    choice[cls] = index
                    if acyclic(egraph, set(choice), choice):
                        extend(choice)
                    del choice[cls]
                return
            todo.extend(egraph[cls][choice[cls]].children)
        graphs[frozenset(choice.items())] = sum(egraph[cls][index].cost for cls, index in choice.items())

    extend({})
    return graphs


def check_candidates(egraph, roots, k, candidates, graphs):
    """Distinct graphs of the enumeration, acyclic, at their true cost, cheapest first: the k cheapest."""
    assert len(candidates) == min(k, len(graphs))
    choices = [frozenset(candidate.choice.items()) for candidate in candidates]
    assert len(set(choices)) == len(choices)
    for candidate, choice in zip(candidates, choices):
        check(egraph, roots, candidate)
        assert is_acyclic(egraph, roots, candidate.choice)
        assert candidate.cost == dag_cost(egraph, roots, candidate.choice) == graphs[choice]
    costs = [candidate.cost for candidate in candidates]
    assert costs == sorted(costs)
    assert costs == pytest.approx(sorted(graphs.values())[:k], rel=1e-6)


# R = f(A, B) with B = g(A): the shared A has three ways, none dominating another
THREE = {
    "R": [N(1, ("A", "B"))],
    "B": [N(1, ("A",))],
    "A": [N(1, ("x",)), N(2, ("y",)), N(5)],
    "x": [N(1)],
    "y": [N(1)],
}


@pytest.mark.parametrize("k", [1, 2, 3, 4, 10])
def test_three_ways_of_a_shared_class(k):
    candidates = ilp_candidates(THREE, ["R"], k)
    check_candidates(THREE, ["R"], k, candidates, all_graphs(THREE, ["R"]))
    assert [candidate.cost for candidate in candidates] == [4.0, 5.0, 7.0][:k]
    assert [candidate.choice["A"] for candidate in candidates] == [0, 1, 2][:k]
    assert all(candidate.status == "optimal" and candidate.gap == 0.0 for candidate in candidates)


def test_the_first_is_ilp_extract_and_k_1_is_ilp_extract():
    ring = {c: [N(0, (n,)), N(10 + k)] for k, (c, n) in enumerate(zip("ABCD", "BCDA"))}
    ring["C"].append(N(1, ("A", "E")))
    ring["E"] = [N(2)]
    for egraph, roots in (THREE, ["R"]), (SIBLINGS, ["R"]), (CYCLE, ["A", "B"]), (ring, ["A"]):
        best = ilp_extract(egraph, roots)
        (only,) = ilp_candidates(egraph, roots, 1)
        first = ilp_candidates(egraph, roots, 3)[0]
        for candidate in only, first:
            assert (candidate.choice, candidate.cost, candidate.status) == (best.choice, best.cost, best.status)


def test_cyclic_choices_are_skipped():
    # A = f(B) | 5 and B = g(A) | 10: of the four choices for both roots, A = f(B), B = g(A) is a cycle
    # HiGHS cuts the cycles off lazily; CP-SAT's model has none to cut
    for solver, cut in ("highs", True), ("cp-sat", False):
        candidates = ilp_candidates(CYCLE, ["A", "B"], 4, solver=solver)
        assert [candidate.choice for candidate in candidates] == [{"A": 1, "B": 0}, {"B": 1, "A": 0},
                                                                   {"A": 1, "B": 1}]
        assert [candidate.cost for candidate in candidates] == [5.0, 10.0, 15.0]
        assert all((candidate.cycle_cuts >= 1) == cut for candidate in candidates)
        check_candidates(CYCLE, ["A", "B"], 4, candidates, all_graphs(CYCLE, ["A", "B"]))
        looped = {"A": [N(0, ("A",)), N(0, ("B", "A")), N(2), N(1, ("B",))], "B": [N(1), N(0, ("A",))]}
        check_candidates(looped, ["A"], 5, ilp_candidates(looped, ["A"], 5, solver=solver),
                         all_graphs(looped, ["A"]))


def test_shared_subterms():
    # R = f(A, B), A and B each q(S) or a leaf: 6 (S shared), 7, 8, 8
    candidates = ilp_candidates(SIBLINGS, ["R"], 5)
    assert [candidate.cost for candidate in candidates] == [6.0, 7.0, 8.0, 8.0]
    check_candidates(SIBLINGS, ["R"], 5, candidates, all_graphs(SIBLINGS, ["R"]))


def test_only_the_graphs_of_kept_e_nodes():
    # a sum of 4 terms: 15 ways to add them up (commutative twins are dominated), all costing 9
    egraph, roots = ac_sum_egraph(4)
    graphs = all_graphs(egraph, roots, undominated(egraph))
    assert len(graphs) == 15 and len(all_graphs(egraph, roots)) > 15
    check_candidates(egraph, roots, 20, ilp_candidates(egraph, roots, 20), graphs)
    check_candidates(egraph, roots, 6, ilp_candidates(egraph, roots, 6), graphs)


def test_a_choice_out_of_reach_does_not_count():
    # R = f(A) | g(B), B's two ways free: with f chosen, B's e-nodes may be chosen for nothing
    egraph = {"R": [N(1, ("A",)), N(5, ("B",))], "A": [N(1)], "B": [N(0, ("x",)), N(0, ("y",))],
              "x": [N(0)], "y": [N(0)]}
    candidates = ilp_candidates(egraph, ["R"], 5)
    assert [candidate.cost for candidate in candidates] == [2.0, 5.0, 5.0]
    check_candidates(egraph, ["R"], 5, candidates, all_graphs(egraph, ["R"]))


def test_candidates_dearer_than_the_warm_start():
    warm = greedy_dag_extract(THREE, ["R"])
    candidates = ilp_candidates(THREE, ["R"], 3, warm_start=warm)
    assert [candidate.cost for candidate in candidates] == [4.0, 5.0, 7.0] and candidates[-1].cost > warm.cost


def test_no_roots_time_limit_and_bad_k():
    assert [candidate.choice for candidate in ilp_candidates(THREE, [], 3)] == [{}]
    warm = greedy_dag_extract(THREE, ["R"])
    (kept,) = ilp_candidates(THREE, ["R"], 3, time_limit=0.0, warm_start=warm)
    assert kept.choice == warm.choice and kept.status == "time limit, no ILP solution: kept the warm start"
    for k in 0, -1:
        with pytest.raises(ValueError, match=f"k must be at least 1, got {k}"):
            ilp_candidates(THREE, ["R"], k)
    with pytest.raises(ExtractionError, match="root e-class 'A' has no acyclic term"):
        ilp_candidates({"A": [N(1, ("A",))]}, ["A"], 2)


@st.composite
def egraphs(draw):
    """2-3 leaf classes, then 2-4 classes of 2-3 e-nodes with 1-2 children each, mostly from the
    classes before (some from any: cycles): unlike test_extractors' random e-graphs, whose leaves
    dominate most e-nodes of their classes, most have several graphs to rank."""
    leaves = draw(st.integers(2, 3))
    n = leaves + draw(st.integers(2, 4))
    egraph = {cls: [N(float(draw(st.integers(0, 3))))] for cls in range(leaves)}
    for cls in range(leaves, n):
        egraph[cls] = [N(float(draw(st.integers(1, 4))),
                         tuple(draw(st.lists(st.integers(0, cls - 1) | st.integers(0, n - 1), min_size=1, max_size=2))))
                       for _ in range(draw(st.integers(2, 3)))]
    return egraph, draw(st.lists(st.integers(leaves, n - 1), min_size=1, max_size=2))


SEEDS = st.integers(0, 10**6)


@settings(max_examples=30, deadline=None)
@given(st.one_of(egraphs(), st.builds(random_egraph, SEEDS), st.builds(random_layered_egraph, SEEDS)),
       st.integers(1, 6))
def test_the_k_cheapest_graphs_of_random_egraphs(made, k):
    egraph, roots = made
    graphs = all_graphs(egraph, roots, undominated(egraph))
    if not graphs:
        with pytest.raises(ExtractionError):
            ilp_candidates(egraph, roots, k)
        return
    check_candidates(egraph, roots, k, ilp_candidates(egraph, roots, k), graphs)
