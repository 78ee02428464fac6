"""TENSAT's cycle filter (:func:`gsl_eq.egraph.cycles.closing_cycles`), the birth stamps it
orders e-nodes by, and TENSAT's ``iter_multi`` (``multi_iterations``)."""

import pytest
from hypothesis import given, settings, strategies as st
from tvm import relax

from gsl_eq import Workload, optimize, rules
from gsl_eq.egraph import Runner
from gsl_eq.egraph.cycles import closing_cycles
from gsl_eq.egraph.egraph import ENode
from gsl_eq.graph import Kind
from gsl_eq.models import zoo_model
from tests.conftest import assert_same_outputs

R = relax.op


def enode(born: int, *children: int) -> ENode:
    return ENode(Kind.CALL, "f", -1, None, tuple(children), born=born)


def closes_cycle(classes, kept, node) -> bool:
    """Whether adding ``node`` (e-class, index) to the e-nodes ``kept`` puts its e-class among its descendants."""
    cls, i = node
    edges: dict = {}
    for c, j in kept:
        edges.setdefault(c, set()).update(classes[c][j].children)
    stack, seen = list(classes[cls][i].children), set()
    while stack:
        c = stack.pop()
        if c == cls:
            return True
        if c not in seen:
            seen.add(c)
            stack.extend(edges.get(c, ()))
    return False


def acyclic(classes, kept) -> bool:
    return not any(closes_cycle(classes, [k for k in kept if k != node], node) for node in kept)


@st.composite
def egraphs(draw):
    """A random e-graph: e-class 0 a leaf, every class an e-node born at 0 reading lower classes
    (the loaded graph), then e-nodes born later reading any class."""
    n = draw(st.integers(2, 7))
    classes = {0: [enode(0)]}
    for c in range(1, n):
        classes[c] = [enode(0, *draw(st.lists(st.integers(0, c - 1), min_size=1, max_size=2)))]
    for _ in range(draw(st.integers(0, 10))):
        c = draw(st.integers(0, n - 1))
        classes[c].append(enode(draw(st.integers(1, 4)), *draw(st.lists(st.integers(0, n - 1), min_size=1,
                                                                        max_size=2))))
    return classes


@settings(max_examples=150, deadline=None)
@given(egraphs())
def test_what_is_left_closes_no_cycle_and_what_is_left_out_closed_one_with_older_e_nodes(classes):
    left_out = closing_cycles(classes, [len(classes) - 1])
    assert left_out is not None  # the loaded e-nodes are acyclic: they always stay
    everything = [(c, i) for c, nodes in classes.items() for i in range(len(nodes))]
    kept = [node for node in everything if node not in left_out]
    assert acyclic(classes, kept)
    assert all(classes[c][i].born == 0 for c, i in everything if classes[c][i].born == 0 and (c, i) in kept)
    assert not any(classes[c][i].born == 0 for c, i in left_out)
    for cls, i in left_out:  # latest first: it closes a cycle with kept e-nodes born no later than itself
        born = classes[cls][i].born
        assert closes_cycle(classes, [(c, j) for c, j in kept if classes[c][j].born <= born], (cls, i))


def test_a_class_keeps_an_e_node_where_it_can():
    # class 2 = {f(1)}; class 1 = {g(0), h(2)} with h born with f: h goes, f stays (class 2 has nothing else)
    classes = {0: [enode(0)], 1: [enode(0, 0), enode(3, 2)], 2: [enode(3, 1)]}
    assert closing_cycles(classes, [2]) == {(1, 1)}


def test_none_when_a_root_would_be_left_without_a_term():
    # the loaded e-nodes themselves form the cycle (a union of a class with its own descendant)
    classes = {0: [enode(0, 1)], 1: [enode(0, 0)]}
    assert closing_cycles(classes, [0]) is None


def parallel_matmuls(n: int = 3) -> Workload:
    x = relax.Var("x", relax.TensorType((4, 16), "float32"))
    ws = [relax.Var(f"w{k}", relax.TensorType((16, 16), "float32")) for k in range(n)]
    return Workload.from_expr(relax.Tuple([R.matmul(x, w) for w in ws]), {"x"})


def test_births_are_the_iterations_after_which_e_nodes_are_first_seen():
    wl = parallel_matmuls()
    runner = Runner(wl.graph, rules.tensat(), iter_limit=3, fast=False)
    report = runner.run()
    enodes = [e for nodes in runner.egraph.snapshot().classes.values() for e in nodes]
    assert sum(e.born == 0 for e in enodes) == len(wl.graph)  # the loaded nodes
    sizes = [len(wl.graph)] + [it.enodes for it in report.iterations]
    grew = {n for n in range(1, len(sizes)) if sizes[n] > sizes[n - 1]}
    assert grew and {e.born for e in enodes} - {0} == grew  # the iterations that added e-nodes
    # a merged matmul (its weights a concat) is born in the first iteration, which merges
    concats = {cls for cls, nodes in runner.egraph.snapshot().classes.items() for e in nodes if e.op == "relax.concat"}
    assert min(e.born for e in enodes if e.op == "relax.matmul" and e.children[1] in concats) == 1


def test_multi_output_rules_are_searched_in_the_first_multi_iterations_only():
    wl = parallel_matmuls()
    unbounded = Runner(wl.graph, rules.tensat(), iter_limit=6, fast=False).run()
    bounded = Runner(wl.graph, rules.tensat(), iter_limit=6, fast=False, multi_iterations=1).run()
    assert bounded.iterations[-1].enodes < unbounded.iterations[-1].enodes
    merges = {name for name in bounded.applied() if "multi" in name}
    assert merges  # TASO's merges fire ...
    assert not any(name in it.matches and it.matches[name] for it in bounded.iterations[1:] for name in merges)
    assert bounded.stop_reason.value == "saturated"  # ... and the run saturates once only the others are left


@pytest.mark.slow
def test_tensats_settings_give_nasrnn_an_acyclic_e_graph_the_ilp_solves_exactly():
    wl = zoo_model("nasrnn", hidden=64, steps=3)
    kept = optimize(wl, rules.tensat(), node_limit=50_000, iter_limit=15, multi_iterations=1)
    filtered = optimize(wl, rules.tensat(), node_limit=50_000, iter_limit=15, multi_iterations=1, cycles="filter")
    # the e-graph TASO's rules grow is cyclic: the exact extractor runs CP-SAT and proves its choice
    assert (kept.report.solver, kept.report.extraction_status, kept.report.gap) == ("cp-sat", "optimal", 0.0)
    assert kept.report.extractor_label() == "ilp via cp-sat" and "ilp via cp-sat (optimal" in str(kept.report)
    assert_same_outputs(wl, kept.workload, rtol=1e-4, atol=1e-5)
    assert filtered.report.left_out > 0 and filtered.report.solver == "highs"
    assert filtered.report.extraction_status == "optimal"
    assert filtered.report.cost_after < filtered.report.cost_before and not filtered.report.fallbacks
    assert filtered.report.cost_after <= kept.report.cost_after * (1 + 1e-9)  # here the cycles buy nothing
    assert_same_outputs(wl, filtered.workload, rtol=1e-4, atol=1e-5)
