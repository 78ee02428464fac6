"""The exact programs' parts rows (gsl_eq.extract.parts): a used split's parts are taken from it,
but where a class computed on its own may host a reader's epilogue worth more than it costs."""

from __future__ import annotations

import pytest

from gsl_eq.extract import ENodeCost as N
from gsl_eq.extract import Extraction, ilp_extract
from gsl_eq.extract.extractors import Indexed, dag_cost
from gsl_eq.extract.parts import part_nodes

LEAVES = {name: [N(0.0)] for name in ("x", "w1", "w2", "w3")}


def merged(cost: float, *weights: str) -> list[N]:
    return [N(cost, ("x", *weights), "merge")]


@pytest.mark.parametrize("solver", ["highs", "cp-sat"])
def test_a_part_that_a_used_split_computes_is_not_computed_again(solver):
    # two merges share C's weights; with C, D and E all wanted, using both merges computes C twice:
    # 6.0 by the DAG cost. The program leaves that graph out (the occupancy case in the module's
    # notes) and finds 6.5; a warm start that is that graph is returned itself (never worse)
    egraph = {**LEAVES, "M1": merged(2.5, "w1", "w2"), "S1": [N(0.0, ("M1",), "split")],
              "M2": merged(2.5, "w1", "w3"), "S2": [N(0.0, ("M2",), "split")],
              "C": [N(3.0, ("x", "w1"), "conv"), N(0.0, ("S1",), "getitem"), N(0.0, ("S2",), "getitem")],
              "D": [N(3.0, ("x", "w2"), "conv"), N(0.0, ("S1",), "getitem")],
              "E": [N(3.0, ("x", "w3"), "conv"), N(0.0, ("S2",), "getitem")],
              "out": [N(1.0, ("C", "D", "E"), "concat")]}
    leaves = dict.fromkeys(LEAVES, 0)
    both_merges = {**leaves, "M1": 0, "S1": 0, "M2": 0, "S2": 0, "C": 1, "D": 1, "E": 1, "out": 0}
    own = {**leaves, "C": 0, "D": 0, "E": 0, "out": 0}
    assert dag_cost(egraph, ["out"], both_merges) == 6.0 and dag_cost(egraph, ["out"], own) == 10.0
    exact = ilp_extract(egraph, ["out"], solver=solver, warm_start=Extraction(own, 10.0, "own", 0.0))
    assert exact.status == "optimal" and exact.cost == 6.5
    assert {exact.choice["D"], exact.choice["E"]} == {0, 1} and exact.choice["C"] > 0  # one merge, one own conv
    kept = ilp_extract(egraph, ["out"], solver=solver, warm_start=Extraction(both_merges, 6.0, "both", 0.0))
    assert kept.cost == 6.0 and kept.choice == both_merges and kept.status == "optimal"
    loose = ilp_extract(egraph, ["out"], solver=solver, warm_start=Extraction(own, 10.0, "own", 0.0), parts=False)
    assert loose.cost == 6.0 and loose.status == "optimal"  # every graph searched


def test_a_class_computed_on_its_own_to_host_a_readers_epilogue_keeps_that_way():
    # the merge is needed for D; C's own conv is dear by 1 but lets its relu run in its kernel (5)
    egraph = {**LEAVES, "M": merged(4.0, "w1", "w2"), "S": [N(0.0, ("M",), "split")],
              "C": [N(1.0, ("x", "w1"), "conv", opens=True), N(0.0, ("S",), "getitem")],
              "D": [N(10.0, ("x", "w2"), "conv"), N(0.0, ("S",), "getitem")],
              "R": [N(5.0, ("C",), "relu", fusible=(("C", 5.0),))]}
    graph = Indexed(egraph)
    nodes = list(range(len(graph.node_class)))
    assert [graph.node_class[n] for n in part_nodes(graph, nodes)] == [graph.position["D"]]
    exact = ilp_extract(egraph, ["R", "D"])
    assert exact.cost == 5.0 and exact.choice["C"] == 0 and exact.choice["D"] == 1


def test_two_equal_parts_of_one_split_get_no_row():
    egraph = {**LEAVES, "M": merged(4.0, "w1", "w1"), "S": [N(0.0, ("M",), "split")],
              "C": [N(3.0, ("x", "w1"), "conv"), N(0.0, ("S",), "getitem"), N(0.0, ("S",), "getitem")]}
    graph = Indexed(egraph)
    assert part_nodes(graph, list(range(len(graph.node_class)))) == []
    assert ilp_extract(egraph, ["C"]).cost == 3.0


@pytest.mark.parametrize("solver", ["highs", "cp-sat"])
def test_a_cyclic_program_gets_rows_for_the_parts_off_their_tuples_cycle(solver):
    # M is also the concat of its parts C and D: C, D, S and M are on one cycle, and their parts get
    # no row (C's value may be needed below S). S2's merge is on no cycle: C's and E's parts of it get one.
    egraph = {**LEAVES, "M": [*merged(4.0, "w1", "w2"), N(0.5, ("C", "D"), "concat")], "S": [N(0.0, ("M",), "split")],
              "M2": merged(2.5, "w1", "w3"), "S2": [N(0.0, ("M2",), "split")],
              "C": [N(3.0, ("x", "w1"), "conv"), N(0.0, ("S",), "getitem"), N(0.0, ("S2",), "getitem")],
              "D": [N(3.0, ("x", "w2"), "conv"), N(0.0, ("S",), "getitem")],
              "E": [N(3.0, ("x", "w3"), "conv"), N(0.0, ("S2",), "getitem")],
              "out": [N(1.0, ("C", "D", "E"), "concat")]}
    graph = Indexed(egraph)
    rows = {(graph.classes[graph.node_class[n]], graph.classes[graph.parts[n]]) for n in
            part_nodes(graph, list(range(len(graph.node_class))))}
    assert rows == {("C", "S2"), ("E", "S2")}
    exact = ilp_extract(egraph, ["out"], solver=solver)
    assert exact.status == "optimal" and exact.cost == 6.5  # M2 for C and E, D's own conv
    assert exact.choice["C"] == 2 and exact.choice["E"] == 1 and exact.choice["D"] == 0
    assert ilp_extract(egraph, ["out"], solver=solver, parts=False).cost == 6.5
