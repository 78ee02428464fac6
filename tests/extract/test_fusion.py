"""Fusion in extraction: an e-node that runs inside its child's kernel, priced exactly by every
extractor's cost and chosen optimally by both exact solvers, checked against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gsl_eq.extract import ENodeCost as N
from gsl_eq.extract import dag_cost, fusion, greedy_dag_extract, ilp_extract, kept
from gsl_eq.extract.extractors import Indexed

from .test_extractors import brute_force, reachable


def fused_price(egraph, roots, choice):
    """An independent reference: the chosen e-nodes less the best valid set of fusions, found by
    trying every one. Per e-node: at most one epilogue, into a child whose chosen e-node opens
    (and, if it has a prologue saving, takes an epilogue itself); any prologues, of children whose
    chosen e-node has a prologue saving and takes no epilogue; never both with one child; a child
    fuses only where nothing else reads it (a root is read by the caller)."""
    used = sorted(reachable(egraph, roots, choice), key=repr)
    node = {cls: egraph[cls][choice[cls]] for cls in used}
    readers = {cls: list(roots).count(cls) for cls in used}
    for cls in used:
        for child in set(node[cls].children):
            readers[child] += 1
    options = []
    for cls in used:
        candidates = [(child, s) for child, s in node[cls].fusible if s > 0 and readers[child] == 1]
        epilogues = [None] + [(child, s) for child, s in candidates if node[child].opens]
        inner = [child for child, _ in candidates if node[child].prologue > 0]
        subsets = [tuple(c for c, bit in zip(inner, bits) if bit) for bits in itertools.product((0, 1), repeat=len(inner))]
        options.append([(e, p) for e in epilogues for p in subsets if e is None or e[0] not in p])
    best = 0.0
    for combo in itertools.product(*options):
        plan = dict(zip(used, combo))
        if (all(plan[child][0] is None for cls in used for child in plan[cls][1])
                and all(node[e[0]].prologue == 0 or plan[e[0]][0] for e, _ in combo if e)):
            best = max(best, sum((e[1] if e else 0.0) + sum(node[c].prologue for c in p) for e, p in combo))
    return sum(node[cls].cost for cls in used) - best


def random_fusing_egraph(seed: int):
    """3-7 classes of 1-3 e-nodes, 0-2 children each (cycles included), a leaf; 60 % of the
    e-nodes open a kernel, each child offers a saving of part of its reader's cost 70 % of the
    time, and 40 % of the e-nodes may run inside their reader's kernel for part of their cost."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 8))
    egraph = {}
    for cls in range(n):
        row = []
        for _ in range(rng.integers(1, 4)):
            cost = float(rng.integers(0, 8))
            children = tuple(int(c) for c in rng.integers(0, n, size=rng.integers(0, 3)))
            fusible = tuple((child, float(rng.integers(0, cost + 1))) for child in dict.fromkeys(children)
                            if rng.random() < 0.7)
            prologue = float(rng.integers(0, cost + 1)) if rng.random() < 0.4 else 0.0
            row.append(N(cost, children, opens=bool(rng.random() < 0.6), fusible=fusible, prologue=prologue))
        egraph[cls] = row
    egraph[int(rng.integers(n))].append(N(float(rng.integers(0, 6)), opens=bool(rng.random() < 0.5)))
    roots = [int(r) for r in rng.integers(0, n, size=rng.integers(1, 3))]
    return egraph, roots


@pytest.mark.parametrize("shared", [False, True], ids=["per-term", "shared"])
@pytest.mark.parametrize("seed", range(80))
def test_random_fusing_egraphs_against_brute_force(seed, shared, monkeypatch):
    # both forms of the rows for a child's readers: a row per term or pair of reader classes, and
    # the shared rows a child of many readers or many e-nodes gets
    if shared:
        monkeypatch.setattr(fusion, "PAIRWISE_READERS", 1)
        monkeypatch.setattr(fusion, "SHARED_ROW_ENTRIES", 0)
    egraph, roots = random_fusing_egraph(seed)
    optimum = brute_force(egraph, roots, fused_price)
    if optimum is None:
        return
    greedy = greedy_dag_extract(egraph, roots)
    assert greedy.cost == pytest.approx(fused_price(egraph, roots, greedy.choice))
    assert dag_cost(egraph, roots, greedy.choice) == pytest.approx(greedy.cost)
    for solver in ("highs", "cp-sat"):
        ilp = ilp_extract(egraph, roots, solver=solver)
        assert (ilp.status, ilp.solver) == ("optimal", solver)
        assert ilp.cost == pytest.approx(optimum) and ilp.cost == pytest.approx(fused_price(egraph, roots, ilp.choice))


def with_twins(egraph):
    """Each e-node of two or more child classes gets its commutative twin: its children reversed, all else alike."""
    return {cls: [*nodes, *(N(n.cost, n.children[::-1], n.op, opens=n.opens, fusible=n.fusible[::-1],
                                  prologue=n.prologue) for n in nodes if len(set(n.children)) > 1)]
            for cls, nodes in egraph.items()}


@pytest.mark.parametrize("seed", range(40))
def test_commutative_twins_are_extracted_once_and_as_well(seed):
    """Under fusion, of two e-nodes alike but for their children's order one is kept (before, both
    were: a twin's cost never fell below the other's less its saving), at no loss."""
    egraph, roots = random_fusing_egraph(seed)
    twinned = with_twins(egraph)
    optimum = brute_force(egraph, roots, fused_price)
    if optimum is None:
        return
    for cheapest_only in (True, False):
        columns = []
        for g in (egraph, twinned):
            graph = Indexed(g)
            columns.append({(graph.classes[graph.node_class[n]], graph.node_index[n])
                            for n in kept.kept_nodes(graph, graph.root_positions(roots), cheapest_only)})
        assert columns[0] == columns[1]  # the twins, listed last, are all left out
    for solver in ("highs", "cp-sat"):
        ilp = ilp_extract(twinned, roots, solver=solver)
        assert ilp.status == "optimal" and ilp.cost == pytest.approx(optimum)
        assert ilp.cost == pytest.approx(fused_price(twinned, roots, ilp.choice))


# R = relu(A); A holds a conv (10, opens a kernel) and another form (9, does not): the relu (5)
# runs inside the conv's kernel for 1, so conv + relu costs 11 where the other form costs 14.
RELU = N(5.0, ("A",), "relu", fusible=(("A", 4.0),))
FUSING = {"R": [RELU], "A": [N(10.0, ("X",), "conv", opens=True), N(9.0, ("X",), "other")], "X": [N(0.0)]}


def test_a_fused_epilogue_decides_the_choice():
    for solver in ("highs", "cp-sat"):
        ilp = ilp_extract(FUSING, ["R"], solver=solver)
        assert ilp.choice["A"] == 0 and ilp.cost == 11.0
    assert dag_cost(FUSING, ["R"], {"R": 0, "A": 1, "X": 0}) == 14.0
    assert ilp_extract(FUSING, ["R"]).solver == "highs"  # auto: HiGHS where nothing is cyclic, fusing or not


def test_no_fusion_into_a_tensor_another_reads_or_the_caller_does():
    # a second root reads A too: the relu is a kernel of its own, the cheaper form wins
    shared = {**FUSING, "S": [N(1.0, ("A",), "neg")]}
    for solver in ("highs", "cp-sat"):
        ilp = ilp_extract(shared, ["R", "S"], solver=solver)
        assert ilp.choice["A"] == 1 and ilp.cost == 15.0
    # A is an output itself
    assert ilp_extract(FUSING, ["R", "A"]).cost == 14.0
    assert dag_cost(FUSING, ["R", "A"], {"R": 0, "A": 0, "X": 0}) == 15.0


def test_a_cheaper_form_that_hosts_epilogues_only_as_one_does_not_dominate():
    # A's element-wise form (1, a prologue saving) opens a kernel only as an epilogue itself; its
    # dearer leaf form (2) hosts the reader's epilogue (saving 3): 4 + 2 - 3 beats 4 + 1 - 1
    egraph = {"R": [N(4.0, ("A",), "relu", fusible=(("A", 3.0),))],
              "A": [N(1.0, (), "add", opens=True, prologue=1.0), N(2.0, (), "conv", opens=True)]}
    for solver in ("highs", "cp-sat"):
        ilp = ilp_extract(egraph, ["R"], solver=solver)
        assert (ilp.cost, ilp.choice["A"]) == (3.0, 1)


def test_a_class_of_many_equal_forms_adds_a_term_per_reader_not_per_form():
    # 300 equal adds (TASO's reassociations grow such classes) read by 40 classes: the program's
    # fusion terms and rows grow with the e-nodes, not with the readers times the forms
    forms = [N(5.0, ("X", f"Y{k % 3}"), "add", opens=True, fusible=(("X", 4.0),), prologue=4.0) for k in range(300)]
    readers = {f"R{i}": [N(5.0, ("A",), "relu", opens=True, fusible=(("A", 4.0),), prologue=4.0)] for i in range(40)}
    egraph = {"T": [N(0.0, tuple(readers), "tuple")], **readers, "A": forms,
              "X": [N(3.0, (), "conv", opens=True)], **{f"Y{k}": [N(0.0)] for k in range(3)}}
    graph = Indexed(egraph)
    roots = graph.root_positions(["T"])
    nodes = list(range(len(graph.node_class)))
    terms = fusion.fusion_terms(graph, nodes, roots)
    rows = fusion.fusion_rows(terms)
    assert len(terms) <= 2 * len(nodes) and sum(len(r.terms) + len(r.nodes) for r in rows) <= 20 * len(nodes)
    # A has 40 readers, so nothing runs in its kernel and each relu is one; X has one reader, the add,
    # which runs as the conv's epilogue
    expected = 40 * 5.0 + 5.0 + 3.0 - 4.0  # the add as the conv's epilogue
    for solver in ("highs", "cp-sat"):
        ilp = ilp_extract(egraph, ["T"], solver=solver)
        assert ilp.cost == pytest.approx(expected) == dag_cost(egraph, ["T"], ilp.choice)


def test_a_dominated_form_that_opens_a_kernel_is_kept():
    # the conv costs more than the other form but opens a kernel: dominance must not drop it,
    # and a relu whose saving could undercut a cheaper twin is kept as well
    twins = {"R": [RELU, N(6.0, ("A",), "relu2")], "A": FUSING["A"], "X": FUSING["X"]}
    assert ilp_extract(twins, ["R"], solver="highs").cost == 11.0


def test_a_saving_must_name_a_child_and_not_exceed_the_cost():
    with pytest.raises(ValueError, match="0 <= saving <= cost"):
        N(1.0, ("A",), fusible=(("A", 2.0),))
    with pytest.raises(ValueError, match="a fusion saving needs a child"):
        N(1.0, ("A",), fusible=(("B", 0.5),))


# Two element-wise ops read the parts of a split (no kernel to join) and feed one add: as FuseOps
# builds it, the three are one kernel. Each alone costs 5; inside the add's kernel, 1.
SPLIT_TAIL = {
    "R": [N(5.0, ("P", "Q"), "add", opens=True, fusible=(("P", 4.0), ("Q", 4.0)))],
    "P": [N(5.0, ("S",), "relu", opens=True, fusible=(("S", 4.0),), prologue=4.0)],
    "Q": [N(5.0, ("S",), "sigmoid", opens=True, fusible=(("S", 4.0),), prologue=4.0),
          N(3.0, ("X",), "other")],
    "S": [N(0.0, ("X",), "split-part")],
    "X": [N(0.0)],
}


def test_element_wise_ops_reading_split_parts_share_their_readers_kernel():
    # add, relu and sigmoid in one kernel: 15 - 8; the other form of Q (3, a kernel no epilogue joins) loses
    assert dag_cost(SPLIT_TAIL, ["R"], {"R": 0, "P": 0, "Q": 0, "S": 0, "X": 0}) == 7.0
    assert dag_cost(SPLIT_TAIL, ["R"], {"R": 0, "P": 0, "Q": 1, "S": 0, "X": 0}) == 9.0
    for solver in ("highs", "cp-sat"):
        ilp = ilp_extract(SPLIT_TAIL, ["R"], solver=solver)
        assert ilp.choice["Q"] == 0 and ilp.cost == 7.0
    # read by the caller as well, P is written: a kernel of its own
    assert dag_cost(SPLIT_TAIL, ["R", "P"], {"R": 0, "P": 0, "Q": 0, "S": 0, "X": 0}) == 11.0


# add(relu(matmul1), relu(matmul2)): each relu runs inside its matmul's kernel, and the add in
# one of them; a relu fused into its matmul is not also inside the add's kernel (a kernel
# never holds both matmuls), so the add saves once: 25 - 3 * 4.
ANCHORS = {
    "R": [N(5.0, ("P", "Q"), "add", opens=True, fusible=(("P", 4.0), ("Q", 4.0)))],
    "P": [N(5.0, ("M1",), "relu", opens=True, fusible=(("M1", 4.0),), prologue=4.0)],
    "Q": [N(5.0, ("M2",), "relu", opens=True, fusible=(("M2", 4.0),), prologue=4.0)],
    "M1": [N(5.0, ("X",), "matmul", opens=True)],
    "M2": [N(5.0, ("X",), "matmul", opens=True)],
    "X": [N(0.0)],
}


def test_a_kernel_holds_one_anchor():
    choice = dict.fromkeys(ANCHORS, 0)
    assert dag_cost(ANCHORS, ["R"], choice) == 13.0 == fused_price(ANCHORS, ["R"], choice)
    for solver in ("highs", "cp-sat"):
        assert ilp_extract(ANCHORS, ["R"], solver=solver).cost == 13.0


def test_a_prologue_saving_must_not_exceed_the_cost():
    with pytest.raises(ValueError, match="prologue saving needs 0 <= saving <= cost"):
        N(1.0, prologue=2.0)
