"""Greedy mode never takes a match whose result would read itself: a multi-output rule whose second
output's input is computed from its first (an RNN's next step), or two matches feeding each other."""

import pytest
from tvm import relax

from gsl_eq import Workload, optimize
from gsl_eq.rules import taso_equations as taso

R = relax.op


def shared_weight_merge():
    """TASO's ``[x1 @ w, x2 @ w] -> split(concat(x1, x2) @ w)``."""
    (rule,) = [r for r in taso.translation("converted_multi.txt").rules if r.name == "taso:converted_multi.txt#10"]
    return rule


def var(name, *shape):
    return relax.Var(name, relax.TensorType(shape, "float32"))


def test_a_step_reading_the_step_before_is_not_merged_with_it(same_outputs):
    x, w = var("x", 4, 8), var("w", 8, 8)
    first = R.matmul(x, w)
    second = R.matmul(R.tanh(first), w)  # the second step's input is the first step's output
    wl = Workload.from_expr(relax.Tuple([first, second]), {"x"})
    result = optimize(wl, [shared_weight_merge()], mode="greedy")
    assert result.report.rejected["taso:converted_multi.txt#10"]["the result would read itself"] >= 1
    assert not result.report.applications and result.report.input_returned
    same_outputs(wl, result.workload)


def test_two_independent_steps_are_merged(same_outputs):
    x, y, w = var("x", 4, 8), var("y", 4, 8), var("w", 8, 8)
    wl = Workload.from_expr(relax.Tuple([R.matmul(x, w), R.tanh(R.matmul(y, w))]), {"x", "y"})
    merged = shared_weight_merge()(wl)  # the rule applied greedily, whatever it costs
    assert merged.graph.op_counts()["relax.matmul"] == 1
    same_outputs(wl, merged)


@pytest.mark.slow
def test_tensat_rules_run_greedily_on_nasrnn(same_outputs):
    """Its steps share their weights: the merge of a step with the next is refused, not a crash."""
    from gsl_eq import models, rules

    wl = models.nasrnn(steps=3, hidden=32)
    result = optimize(wl, rules.tensat() + rules.default(), mode="greedy")
    assert result.report.rejected["taso:converted_multi.txt#10"]["the result would read itself"] >= 1
    assert result.report.cost_after < result.report.cost_before
    same_outputs(wl, result.workload)
