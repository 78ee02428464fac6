"""The exact extractor on a large e-graph starts from the e-graph as an early iteration left it."""

import importlib

import pytest

from gsl_eq import optimize, rules
from gsl_eq.egraph import Runner
from gsl_eq.extract import dag_cost, ilp_candidates
from gsl_eq.optimizer.choose import as_of, priced, roots
from gsl_eq.cost.gpu_cost import GPU
from gsl_eq.models import nasrnn
from tests.conftest import assert_same_outputs

pytestmark = pytest.mark.slow

optimize_module = importlib.import_module("gsl_eq.optimizer.saturate")


def small_nasrnn():
    return nasrnn(steps=2, hidden=24)


def test_as_of_an_iteration_only_the_e_nodes_born_by_then_can_be_chosen():
    wl = small_nasrnn()
    runner = Runner(wl.graph, [*rules.default(), *rules.algebraic()], node_limit=20_000, iter_limit=8,
                    time_limit=60, params=wl.params)
    run = runner.run()
    snap = runner.egraph.snapshot()
    egraph, heads = priced(runner.egraph, snap, GPU()), roots(runner, snap)
    best = ilp_candidates(egraph, heads, 1, time_limit=30)[0]
    kept = []
    for iteration in range(len(run.iterations) + 1):
        earlier = as_of(egraph, snap, iteration)
        finite = [(cls, i) for cls, row in earlier.items() for i, e in enumerate(row) if e.cost < float("inf")]
        assert all(0 <= snap.classes[cls][i].born <= iteration for cls, i in finite)
        kept.append(len(finite))
        early = ilp_candidates(earlier, heads, 1, time_limit=30)[0]
        # one of the whole e-graph's choices, at the same cost, and none cheaper than its best
        assert dag_cost(egraph, heads, early.choice) == early.cost >= best.cost
    assert kept == sorted(kept) and kept[0] < kept[-1] and early.cost == best.cost


def test_a_large_e_graph_starts_its_ilp_from_an_early_iterations_extraction(monkeypatch):
    """TASO's rules grow an e-graph tenfold past the iteration where the default rules' forms are
    in; where the ILP then finds nothing in its time (forced here: no time at all), the result is
    the early iteration's optimum, not the greedy DAG choice."""
    monkeypatch.setattr(optimize_module, "EARLY_ENODES", 600)
    monkeypatch.setattr(optimize_module, "EARLY_GROWTH", 2)
    real, calls = optimize_module.ilp_candidates, []

    def whole_program_without_time(egraph, heads, k, time_limit=60.0, **kwargs):
        calls.append(time_limit)
        return real(egraph, heads, k, time_limit=time_limit if len(calls) == 1 else 0.0, **kwargs)

    monkeypatch.setattr(optimize_module, "ilp_candidates", whole_program_without_time)
    wl = small_nasrnn()
    result = optimize(wl, [*rules.default(), *rules.algebraic()], cost="gpu", node_limit=20_000, iter_limit=8,
                      time_limit=120)
    report = result.report
    assert len(calls) == 2 and report.enodes >= 1_200
    assert any(note.startswith("the ILP started from the exact extraction of the e-graph as iteration")
               for note in report.notes)
    assert "no ILP solution: kept the warm start" in report.extraction_status
    assert report.extracted_cost < report.greedy_dag_cost and report.cost_after < report.cost_before
    assert_same_outputs(wl, result.workload)
