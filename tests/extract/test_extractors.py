"""The e-graph extractors on hand-made and random e-graphs, checked against brute force."""

from __future__ import annotations

import functools
import itertools
import math
import time

import numpy as np
import pytest

from gsl_eq.errors import GslEqError
from gsl_eq.extract import (
    ENodeCost as N,
    Extraction,
    ExtractionError,
    dag_cost,
    greedy_dag_extract,
    ilp_extract,
    is_acyclic,
    tree_extract,
)
from gsl_eq.extract import ilp as ilp_module
from gsl_eq.extract import kept
from gsl_eq.extract.extractors import Indexed

EXTRACTORS = [tree_extract, greedy_dag_extract, ilp_extract]


# --- independent reference implementations -------------------------------------------------------


def reachable(egraph, roots, choice):
    """Classes reachable from the roots through chosen e-nodes."""
    seen, todo = set(), list(roots)
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.add(cls)
            todo.extend(egraph[cls][choice[cls]].children)
    return seen


def acyclic(egraph, classes, choice):
    """Kahn's algorithm: peel classes whose chosen children are all peeled."""
    left = set(classes)
    while True:
        ready = {c for c in left if not left.intersection(egraph[c][choice[c]].children)}
        if not ready:
            return not left
        left -= ready


def brute_force(egraph, roots, price=None):
    """The least DAG cost (or ``price(egraph, roots, choice)``) over all acyclic choices, or None
    if there is none."""
    classes = list(egraph)
    best = None
    for combo in itertools.product(*(range(len(egraph[c])) for c in classes)):
        choice = dict(zip(classes, combo))
        used = reachable(egraph, roots, choice)
        if acyclic(egraph, used, choice):
            cost = price(egraph, roots, choice) if price else sum(egraph[c][choice[c]].cost for c in used)
            best = cost if best is None else min(best, cost)
    return best


def check(egraph, roots, extraction: Extraction) -> None:
    """The extraction is a valid, acyclic choice of exactly the reachable classes, at the cost it reports."""
    used = reachable(egraph, roots, extraction.choice)
    assert set(extraction.choice) == used
    assert acyclic(egraph, used, extraction.choice)
    assert extraction.cost == pytest.approx(sum(egraph[c][extraction.choice[c]].cost for c in used))
    position = {cls: k for k, cls in enumerate(extraction.choice)}
    for cls, index in extraction.choice.items():  # children before parents
        assert all(position[child] < position[cls] for child in egraph[cls][index].children)


def random_egraph(seed: int):
    """3-8 classes of 1-3 e-nodes with 0-2 random children each (cycles and self-loops
    included), plus one leaf somewhere; costs are small integers, zero included."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    egraph = {
        cls: [
            N(float(rng.integers(0, 6)), tuple(int(c) for c in rng.integers(0, n, size=rng.integers(0, 3))))
            for _ in range(rng.integers(1, 4))
        ]
        for cls in range(n)
    }
    egraph[int(rng.integers(n))].append(N(float(rng.integers(0, 6))))
    roots = [int(r) for r in rng.integers(0, n, size=rng.integers(1, 3))]
    return egraph, roots


# --- hand-made e-graphs --------------------------------------------------------------------------

# X = p(A, B) with A = q(S), B = r(S): tree cost pays S twice (11 > 10), DAG cost once (7)
DIAMOND = {
    "X": [N(1, ("A", "B")), N(10)],
    "A": [N(1, ("S",))],
    "B": [N(1, ("S",))],
    "S": [N(4)],
}

# R = f(A, B): each of A and B alone is cheaper as a leaf (3 < 1 + 3), both together
# cheaper through the shared S (1 + 1 + 3 < 3 + 3): only the ILP sees it
SIBLINGS = {
    "R": [N(1, ("A", "B"))],
    "A": [N(1, ("S",)), N(3)],
    "B": [N(1, ("S",)), N(3)],
    "S": [N(3)],
}

# A = f(B) | leaf 5 and B = g(A) | leaf 10: the cycle through the zero-cost e-nodes would cost 0
CYCLE = {
    "A": [N(0, ("B",)), N(5)],
    "B": [N(0, ("A",)), N(10)],
}


def test_dag_extractors_pay_a_shared_node_once():
    tree, greedy, ilp = (extract(DIAMOND, ["X"]) for extract in EXTRACTORS)
    assert tree.choice == {"X": 1} and tree.cost == 10
    for extraction in greedy, ilp:
        assert extraction.choice == {"S": 0, "A": 0, "B": 0, "X": 0} and extraction.cost == 7
        check(DIAMOND, ["X"], extraction)
    assert (tree.extractor, greedy.extractor, ilp.extractor) == ("tree", "greedy_dag", "ilp")
    assert (tree.status, tree.gap) == ("heuristic", None)
    assert (ilp.status, ilp.gap) == ("optimal", 0.0)


def test_ilp_shares_across_siblings():
    tree, greedy, ilp = (extract(SIBLINGS, ["R"]) for extract in EXTRACTORS)
    assert tree.cost == greedy.cost == 7
    assert ilp.cost == 6 and ilp.choice == {"S": 0, "A": 0, "B": 0, "R": 0}


def test_tree_cost_is_reported_as_dag_cost():
    egraph = {"R": [N(1, ("S", "S"))], "S": [N(4)]}  # tree cost 9, DAG cost 5
    assert tree_extract(egraph, ["R"]).cost == 5


@pytest.mark.parametrize("extract", EXTRACTORS)
def test_cycles_are_never_chosen(extract):
    assert extract(CYCLE, ["A"]).choice == {"A": 1}
    both = extract(CYCLE, ["B", "A", "B"])  # B = g(A) with A a leaf: 5 < 10; repeated roots are fine
    assert both.choice == {"A": 1, "B": 0} and both.cost == 5
    looped = {"A": [N(0, ("A",)), N(0, ("B", "A")), N(2)], "B": [N(1)]}
    assert extract(looped, ["A"]).choice == {"A": 2}


@pytest.mark.parametrize("extract", EXTRACTORS)
def test_no_finite_term_names_the_root(extract):
    for egraph in (
        {"A": [N(1, ("B",))], "B": [N(1, ("A",))], "C": [N(1)]},  # only a cycle
        {"A": [N(1, ("E",))], "E": []},  # an empty class
        {"A": [N(math.inf)], "B": [N(1)]},  # an infinite cost
    ):
        with pytest.raises(ExtractionError, match="root e-class 'A' has no acyclic term"):
            extract(egraph, ["A"])
    with pytest.raises(ExtractionError, match="root e-class 'Z' is not in the e-graph"):
        extract(CYCLE, ["Z"])
    with pytest.raises(ExtractionError, match="child e-class 'Q' that is not in the e-graph"):
        extract({"A": [N(1, ("Q",))]}, ["A"])
    assert issubclass(ExtractionError, GslEqError)


@pytest.mark.parametrize("extract", EXTRACTORS)
def test_infinite_cost_nodes_are_avoided(extract):
    egraph = {"A": [N(math.inf), N(1, ("B",))], "B": [N(2), N(math.inf)]}
    assert extract(egraph, ["A"]).choice == {"B": 0, "A": 1}


@pytest.mark.parametrize("extract", EXTRACTORS)
def test_no_roots(extract):
    assert extract(DIAMOND, []).choice == {}


def test_dag_cost_and_is_acyclic():
    choice = {"X": 0, "A": 0, "B": 0, "S": 0}
    assert dag_cost(DIAMOND, ["X", "A"], choice) == 7
    assert dag_cost(DIAMOND, ["A"], {"A": 0, "S": 0}) == 5
    assert is_acyclic(DIAMOND, ["X"], choice)
    assert not is_acyclic(CYCLE, ["A"], {"A": 0, "B": 0})
    assert dag_cost(CYCLE, ["A"], {"A": 0, "B": 0}) == 0  # each e-node once, even on a cycle
    with pytest.raises(ValueError, match="e-class 'S' is reachable from the roots but has no chosen e-node"):
        dag_cost(DIAMOND, ["X"], {"X": 0, "A": 0, "B": 0})
    with pytest.raises(ValueError, match="no e-node 3"):
        is_acyclic(DIAMOND, ["X"], {"X": 3})
    with pytest.raises(ValueError, match=">= 0"):
        N(-1.0)


def test_warm_start():
    warm = greedy_dag_extract(SIBLINGS, ["R"])
    ilp = ilp_extract(SIBLINGS, ["R"], warm_start=warm)
    assert ilp.cost == 6 and ilp.status == "optimal"
    with pytest.raises(ValueError, match="cyclic"):
        ilp_extract(CYCLE, ["A"], warm_start=Extraction({"A": 0, "B": 0}, 0.0, "bad", 0.0))


def layered_egraph(n: int, seed: int):
    """A larger e-graph with many cycles, on which HiGHS needs a while."""
    rng = np.random.default_rng(seed)
    egraph = {}
    for cls in range(n):
        egraph[cls] = []
        for _ in range(rng.integers(1, 5)):
            children = () if cls < 10 else tuple(
                int(c) if rng.random() > 0.1 else int(rng.integers(cls, n))
                for c in rng.integers(max(0, cls - 30), cls, rng.integers(1, 4))
            )
            egraph[cls].append(N(float(rng.integers(1, 100)), children))
    return egraph, list(range(n - 20, n))


def test_time_limit_keeps_the_warm_start():
    egraph, roots = layered_egraph(300, 0)
    warm = greedy_dag_extract(egraph, roots)
    ilp = ilp_extract(egraph, roots, time_limit=0.0, warm_start=warm)
    assert ilp.status.startswith("time limit") and ilp.cost <= warm.cost
    check(egraph, roots, ilp)
    if "no ILP solution" in ilp.status:
        assert ilp.status == "time limit, no ILP solution: kept the warm start" and ilp.choice == warm.choice


# --- random e-graphs -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(150))
def test_random_egraphs_against_brute_force(seed):
    egraph, roots = random_egraph(seed)
    optimum = brute_force(egraph, roots)
    if optimum is None:
        for extract in EXTRACTORS:
            with pytest.raises(ExtractionError, match="has no acyclic term"):
                extract(egraph, roots)
        return
    tree, greedy, ilp = (extract(egraph, roots) for extract in EXTRACTORS)
    for extraction in tree, greedy, ilp:
        check(egraph, roots, extraction)
    assert ilp.cost <= greedy.cost <= tree.cost
    assert ilp.cost == optimum and (ilp.status, ilp.gap) == ("optimal", 0.0)
    other = "highs" if ilp.solver == "cp-sat" else "cp-sat"  # both solvers, one solve each
    warm = ilp_extract(egraph, roots, warm_start=greedy, solver=other)
    check(egraph, roots, warm)
    assert warm.cost == optimum and (warm.status, warm.gap, warm.solver) == ("optimal", 0.0, other)


# --- the exact extractor's formulation ------------------------------------------------------------


def test_a_cycle_the_relaxation_prefers_is_cut_lazily():
    # without acyclicity, A = f(B), B = g(A) costs 0; cut off, the leaf 5 is the optimum
    ilp = ilp_extract(CYCLE, ["A"], solver="highs")
    assert ilp.choice == {"A": 1} and ilp.cost == 5 and ilp.status == "optimal" and ilp.cycle_cuts >= 1
    ring = ring_egraph()
    ilp = ilp_extract(ring, ["A"], solver="highs")
    assert ilp.cycle_cuts >= 1 and ilp.status == "optimal"
    assert ilp.cost == brute_force(ring, ["A"]) == 10
    assert ilp_extract(DIAMOND, ["X"]).cycle_cuts == 0


def ring_egraph():
    """A cycle through four classes, each with an expensive way out, and a shortcut inside."""
    ring = {c: [N(0, (n,)), N(10 + k)] for k, (c, n) in enumerate(zip("ABCD", "BCDA"))}
    ring["C"].append(N(1, ("A", "E")))
    ring["E"] = [N(2)]
    return ring


def test_on_a_cyclic_e_graph_cp_sat_is_chosen_and_needs_no_cut():
    for egraph, roots, optimum in (CYCLE, ["A"], 5), (ring_egraph(), ["A"], 10), (CYCLE, ["A", "B"], 5):
        exact = ilp_extract(egraph, roots)
        assert (exact.solver, exact.cycle_cuts, exact.status, exact.gap) == ("cp-sat", 0, "optimal", 0.0)
        assert exact.cost == optimum == brute_force(egraph, roots)
        assert exact.choice == ilp_extract(egraph, roots, solver="highs").choice
    assert ilp_extract(DIAMOND, ["X"]).solver == "highs"  # no cycle: HiGHS
    with pytest.raises(ValueError, match="unknown solver 'cplex'"):
        ilp_extract(DIAMOND, ["X"], solver="cplex")


@functools.cache
def highs_egraphs(count: int = 5) -> list[tuple[dict, list, float]]:
    """The first ``count`` random e-graphs with a term that ``solver="auto"`` gives HiGHS (no cycle),
    each with its roots and optimum."""
    found = []
    for seed in itertools.count():
        egraph, roots = random_egraph(seed)
        optimum = brute_force(egraph, roots)
        if optimum is not None and ilp_extract(egraph, roots).solver == "highs":
            found.append((egraph, roots, optimum))
            if len(found) == count:
                return found


@pytest.mark.parametrize("case", range(5))
def test_cp_sat_solves_a_program_highs_cannot_presolve_in_its_share(case, monkeypatch):
    egraph, roots, optimum = highs_egraphs()[case]
    monkeypatch.setattr(ilp_module._Program, "presolves_by", lambda self, deadline: False)  # still presolving
    monkeypatch.setattr(ilp_module, "UNPROBED_NODES", 0)  # as a large program's would be
    exact = ilp_extract(egraph, roots)
    assert (exact.solver, exact.status, exact.gap, exact.cost) == ("highs, cp-sat", "optimal", 0.0, optimum)
    alone = ilp_extract(egraph, roots, solver="highs")  # told to use HiGHS: HiGHS alone, presolve not looked at
    assert (alone.solver, alone.cost) == ("highs", optimum)


@pytest.mark.parametrize("case", range(5))
def test_a_program_highs_presolves_in_its_share_is_solved_by_highs_with_all_the_time(case, monkeypatch):
    egraph, roots, optimum = highs_egraphs()[case]
    deadlines = []
    solve = ilp_module._Program.solve
    monkeypatch.setattr(ilp_module._Program, "solve", lambda self, deadline: deadlines.append(deadline) or
                        solve(self, deadline))
    start = time.perf_counter()
    exact = ilp_extract(egraph, roots, time_limit=30)
    assert (exact.solver, exact.status, exact.cost) == ("highs", "optimal", optimum)
    assert deadlines and all(d > start + 25 for d in deadlines)  # the search is not stopped at HiGHS's share


def test_a_small_program_goes_to_highs_without_a_look_at_its_presolve(monkeypatch):
    """Below UNPROBED_NODES kept e-nodes the look would only have HiGHS presolve twice."""
    egraph, roots, optimum = highs_egraphs()[0]
    looked = []
    presolves_by = ilp_module._Program.presolves_by
    monkeypatch.setattr(ilp_module._Program, "presolves_by",
                        lambda self, deadline: looked.append(len(self.nodes)) or presolves_by(self, deadline))
    small = ilp_extract(egraph, roots)
    assert (small.solver, small.cost, looked) == ("highs", optimum, [])
    monkeypatch.setattr(ilp_module, "UNPROBED_NODES", 1)
    large = ilp_extract(egraph, roots)
    assert (large.solver, large.cost) == ("highs", optimum) and len(looked) == 1 and looked[0] >= 1


def ac_sum_egraph(k: int):
    """The saturated e-graph of a sum of k leaves under commutativity and associativity: a class
    per subset of two or more terms, one e-node per ordered split (both orders: commutative twins)."""
    egraph = {frozenset([t]): [N(0.0, (), "var")] for t in range(k)}
    for size in range(2, k + 1):
        for subset in map(frozenset, itertools.combinations(range(k), size)):
            splits = [frozenset(left) for n in range(1, size) for left in itertools.combinations(sorted(subset), n)]
            egraph[subset] = [N(3.0, (left, subset - left), "add") for left in splits]
    return egraph, [frozenset(range(k))]


def test_an_ac_sum_is_proved_optimal():
    egraph, roots = ac_sum_egraph(8)  # 255 classes, 6,050 e-nodes, every order costs the same
    ilp = ilp_extract(egraph, roots, time_limit=60)
    assert (ilp.status, ilp.gap) == ("optimal", 0.0) and ilp.cost == 7 * 3.0
    check(egraph, roots, ilp)


def test_a_dearer_form_reading_other_free_classes_is_left_out_of_a_single_extraction():
    # TASO's merged groups: the conv of a kernel folded from the parameter W (M: free, as it costs
    # nothing and reads free classes only) does twice the FLOPs of the conv of W. W is itself a view
    # of a view of itself too: inside a free class nothing is dropped for that, or W's leaf would go.
    egraph = {"R": [N(2.0, ("Y",), "relu")],
              "Y": [N(20.0, ("X", "M"), "conv"), N(10.0, ("X", "W"), "conv"), N(10.0, ("X", "K"), "conv")],
              "M": [N(0.0, ("W",), "reshape")], "K": [N(0.0, ("W",), "flip")],
              "W": [N(0.0, ("V",), "reshape"), N(0.0)], "V": [N(0.0, ("W",), "reshape")], "X": [N(0.0)]}
    graph = Indexed(egraph)
    roots = graph.root_positions(["R"])
    assert kept.free_classes(graph) == {graph.position[c] for c in "MKWVX"}
    columns = {(graph.classes[graph.node_class[n]], graph.node_index[n])
               for n in kept.kept_nodes(graph, roots, cheapest_only=True)}
    assert ("Y", 0) not in columns and {("Y", 1), ("Y", 2), ("W", 1)} <= columns  # equal costs stay
    assert ("Y", 0) in {(graph.classes[graph.node_class[n]], graph.node_index[n])
                        for n in kept.kept_nodes(graph, roots)}
    best = ilp_extract(egraph, ["R"])
    assert best.cost == 12.0 == brute_force(egraph, ["R"]) and best.choice["Y"] in (1, 2)
    check(egraph, ["R"], best)
    # the next best graphs may differ in the free classes alone: those are still searched
    assert [c.cost for c in ilp_module.ilp_candidates(egraph, ["R"], 3)] == [12.0, 12.0, 22.0]


def random_layered_egraph(seed: int):
    """2-4 leaf classes and 3-5 classes above them, 1-3 e-nodes each with 1-3 children from
    anywhere (cycles, commutative twins and shared parts included): the formulation's
    connectivity row and dominance pruning must never cut off the optimum."""
    rng = np.random.default_rng(seed)
    leaves = [f"l{k}" for k in range(rng.integers(2, 5))]
    inner = [f"c{k}" for k in range(rng.integers(3, 6))]
    egraph = {leaf: [N(float(rng.integers(0, 3)))] for leaf in leaves}
    for cls in inner:
        egraph[cls] = []
        for _ in range(rng.integers(1, 4)):
            children = tuple(str(c) for c in rng.choice(leaves + inner, size=rng.integers(1, 4)))
            egraph[cls].append(N(float(rng.integers(0, 4)), children))
            if rng.random() < 0.3:  # a commutative twin
                egraph[cls].append(N(egraph[cls][-1].cost, egraph[cls][-1].children[::-1]))
    roots = [str(r) for r in rng.choice(inner, size=rng.integers(1, 3))]
    return egraph, roots


@pytest.mark.parametrize("seed", range(120))
def test_random_layered_egraphs_against_brute_force(seed):
    egraph, roots = random_layered_egraph(seed)
    optimum = brute_force(egraph, roots)
    if optimum is None:
        with pytest.raises(ExtractionError):
            ilp_extract(egraph, roots)
        return
    ilp = ilp_extract(egraph, roots)
    check(egraph, roots, ilp)
    assert ilp.cost == optimum and ilp.status == "optimal"
