"""Fusion in extraction: an e-node that runs inside its child's kernel, priced exactly by every
extractor's cost and chosen optimally by both exact solvers, checked against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from gsl_eq.extract import ENodeCost as N
from gsl_eq.extract import dag_cost, greedy_dag_extract, ilp_extract

from .test_extractors import brute_force, reachable


def fused_price(egraph, roots, choice):
    """An independent reference: each reachable class's chosen e-node, less its largest saving into
    a child whose chosen e-node opens and that nothing else reads (a root is read by the caller)."""
    used = reachable(egraph, roots, choice)
    readers = {cls: list(roots).count(cls) for cls in used}
    for cls in used:
        for child in set(egraph[cls][choice[cls]].children):
            readers[child] += 1
    total = 0.0
    for cls in used:
        node = egraph[cls][choice[cls]]
        savings = [s for child, s in node.fusible if readers[child] == 1 and egraph[child][choice[child]].opens]
        total += node.cost - max(savings, default=0.0)
    return total


def random_fusing_egraph(seed: int):
    """3-7 classes of 1-3 e-nodes, 0-2 children each (cycles included), a leaf; 60 % of the
    e-nodes open a kernel and each child offers a saving of part of its reader's cost 70 % of the time."""
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
            row.append(N(cost, children, opens=bool(rng.random() < 0.6), fusible=fusible))
        egraph[cls] = row
    egraph[int(rng.integers(n))].append(N(float(rng.integers(0, 6)), opens=bool(rng.random() < 0.5)))
    roots = [int(r) for r in rng.integers(0, n, size=rng.integers(1, 3))]
    return egraph, roots


@pytest.mark.parametrize("seed", range(80))
def test_random_fusing_egraphs_against_brute_force(seed):
    egraph, roots = random_fusing_egraph(seed)
    optimum = brute_force(egraph, roots, fused_price)
    if optimum is None:
        return
    greedy = greedy_dag_extract(egraph, roots)
    assert greedy.cost == pytest.approx(fused_price(egraph, roots, greedy.choice))
    for solver in ("highs", "cp-sat"):
        ilp = ilp_extract(egraph, roots, solver=solver)
        assert (ilp.status, ilp.solver) == ("optimal", solver)
        assert ilp.cost == pytest.approx(optimum) and ilp.cost == pytest.approx(fused_price(egraph, roots, ilp.choice))


# R = relu(A); A holds a conv (10, opens a kernel) and another form (9, does not): the relu (5)
# runs inside the conv's kernel for 1, so conv + relu costs 11 where the other form costs 14.
RELU = N(5.0, ("A",), "relu", fusible=(("A", 4.0),))
FUSING = {"R": [RELU], "A": [N(10.0, ("X",), "conv", opens=True), N(9.0, ("X",), "other")], "X": [N(0.0)]}


def test_a_fused_epilogue_decides_the_choice():
    for solver in ("highs", "cp-sat"):
        ilp = ilp_extract(FUSING, ["R"], solver=solver)
        assert ilp.choice["A"] == 0 and ilp.cost == 11.0
    assert dag_cost(FUSING, ["R"], {"R": 0, "A": 1, "X": 0}) == 14.0
    assert ilp_extract(FUSING, ["R"]).solver == "cp-sat"  # auto: CP-SAT where e-nodes may fuse


def test_no_fusion_into_a_tensor_another_reads_or_the_caller_does():
    # a second root reads A too: the relu is a kernel of its own, the cheaper form wins
    shared = {**FUSING, "S": [N(1.0, ("A",), "neg")]}
    for solver in ("highs", "cp-sat"):
        ilp = ilp_extract(shared, ["R", "S"], solver=solver)
        assert ilp.choice["A"] == 1 and ilp.cost == 15.0
    # A is an output itself
    assert ilp_extract(FUSING, ["R", "A"]).cost == 14.0
    assert dag_cost(FUSING, ["R", "A"], {"R": 0, "A": 0, "X": 0}) == 15.0


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
