"""Seeding (gsl_eq.egraph.seeding): a variadic-output rule's groups of more outputs than its
e-matched instances hold are merged whole when the graph is loaded, as greedy mode merges them."""

import time

import pytest
from tvm import relax

from gsl_eq import Workload, models, optimize, rules
from gsl_eq.egraph import Runner

R = relax.op


def projections(*groups: int) -> Workload:
    """Per entry of ``groups``, an input read by that many matmuls (weights of 3, 4, ... columns)."""
    inputs, outs = [], []
    for g, n in enumerate(groups):
        x = relax.Var(f"x{g}", relax.TensorType((2, 8), "float32"))
        inputs.append(f"x{g}")
        outs += [R.matmul(x, relax.Var(f"w{g}_{i}", relax.TensorType((8, 3 + i), "float32"))) for i in range(n)]
    return Workload.from_expr(relax.Tuple(outs), set(inputs))


class MatmulHeavy:
    """A matmul costs a launch: one matmul by merged weights beats several."""

    name = "matmul-heavy"

    def __call__(self, op, attrs, inputs, output) -> float:
        return 100.0 if op == "relax.matmul" else 1.0


def test_a_group_larger_than_the_instances_is_merged_whole(same_outputs):
    wl = projections(6)
    runner = Runner(wl.graph, [rules.parallel_matmul_variadic()], iter_limit=1)
    assert runner.report.seeded == {"parallel_matmul_variadic": 1}
    result = optimize(wl, [rules.parallel_matmul_variadic()], mode="saturate", cost=MatmulHeavy())
    assert result.workload.graph.op_counts()["relax.matmul"] == 1
    assert result.report.rules_used == ["parallel_matmul_variadic"]
    # the seeded merge, then the subsets of two and three the instances e-match: C(6,2) + C(6,3)
    assert result.report.applications["parallel_matmul_variadic"] == 1 + 15 + 20
    same_outputs(wl, result.workload)
    assert wl.graph.op_counts()["relax.matmul"] == 6  # the input is left as it was


@pytest.mark.slow
def test_every_maximal_group_is_seeded_and_none_the_instances_cover(same_outputs):
    wl = projections(5, 4, 3)
    runner = Runner(wl.graph, [rules.parallel_matmul_variadic()], iter_limit=1)
    assert runner.report.seeded == {"parallel_matmul_variadic": 2}  # the group of three is e-matched
    assert Runner(wl.graph, [rules.parallel_matmul_variadic()], max_variadic=5).report.seeded == {}
    result = optimize(wl, [rules.parallel_matmul_variadic()], mode="saturate", cost=MatmulHeavy())
    assert result.workload.graph.op_counts()["relax.matmul"] == 3
    same_outputs(wl, result.workload)


def test_a_rule_without_variadic_outputs_is_not_seeded():
    wl = projections(6)
    assert Runner(wl.graph, rules.default(), iter_limit=1).report.seeded == {"parallel_matmul_variadic": 1}
    assert Runner(wl.graph, rules.tensat(), iter_limit=1).report.seeded == {}  # TASO's merges are of two


def test_seeding_keeps_to_the_node_limit():
    wl = projections(6, 6)
    loaded = Runner(wl.graph, [], iter_limit=1).egraph.size()
    seeded = Runner(wl.graph, [rules.parallel_matmul_variadic()], iter_limit=1)
    per_group = (seeded.egraph.size() - loaded) // 2
    assert seeded.report.seeded == {"parallel_matmul_variadic": 2} and per_group > 0
    for limit, groups in [(loaded + 2 * per_group, 2), (loaded + 2 * per_group - 1, 1), (loaded + per_group - 1, 0)]:
        runner = Runner(wl.graph, [rules.parallel_matmul_variadic()], node_limit=limit, iter_limit=1)
        assert runner.report.seeded == ({"parallel_matmul_variadic": groups} if groups else {})
        assert runner.egraph.size() <= limit


def test_seeding_stops_at_the_deadline():
    wl = projections(6)
    runner = Runner(wl.graph, [rules.parallel_matmul_variadic()], deadline=time.perf_counter())
    assert runner.report.seeded == {} and runner.report.uncompiled == ["parallel_matmul_variadic"]


@pytest.mark.slow
def test_tensats_nasrnn_merges_each_steps_eight_projections(same_outputs):
    """TENSAT's NasRNN: per step, eight matmuls of the input and eight of the state; under the
    gpu model the result reads each step's input and state through one matmul each."""
    wl = models.tensat_nasrnn(steps=2, hidden=64)
    result = optimize(wl, rules.tensat() + rules.default(), mode="saturate", cost="gpu", multi_iterations=1)
    assert result.report.rules_used and "parallel_matmul_variadic" in result.report.rules_used
    assert result.workload.graph.op_counts()["relax.matmul"] <= 4 < wl.graph.op_counts()["relax.matmul"]
    assert result.report.cost_after < result.report.cost_before
    same_outputs(wl, result.workload, rtol=1e-4, atol=1e-5)
