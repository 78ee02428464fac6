"""Proofs: recorded in greedy mode, found toward the extraction in saturate mode, replayed and checked."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tvm import relax

from gsl_eq import Subst, Workload, optimize, op, pat, rules
from gsl_eq.models.registry import load_model
from gsl_eq.proof import ReplayError, same_workload


RULES = rules.default() + rules.algebraic()


@pytest.fixture(scope="module")
def squeezenet() -> Workload:
    return load_model("squeezenet", quick=True)


def _outputs_equal(a: Workload, b: Workload) -> None:
    inputs = a.random_inputs(0)
    np.testing.assert_allclose(a(**inputs), b(**inputs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["greedy", "saturate"])
def test_a_proof_replays_into_the_result(squeezenet: Workload, mode: str) -> None:
    result = optimize(squeezenet, rules.default() + rules.algebraic(), mode=mode, time_limit=30)
    proof = result.proof
    assert not result.report.input_returned
    assert proof.complete, proof.missing
    replayed = proof.replay(squeezenet)
    assert same_workload(replayed, result.workload)
    assert [s.kind for s in proof.steps][0] != "rule" or proof.start is squeezenet
    assert len(proof.rule_steps) >= 4
    if mode == "greedy":  # every rewrite greedy mode made is one step
        assert len(proof.rule_steps) == sum(result.report.applications.values())
    assert {s.name for s in proof.rule_steps} <= set(result.report.applications)
    _outputs_equal(replayed, squeezenet)


def test_every_step_applies_to_the_graph_the_steps_before_made(squeezenet: Workload) -> None:
    proof = optimize(squeezenet, RULES, mode="greedy", time_limit=30).proof
    assert proof.rule_steps
    for before, step in proof.befores():
        if step.kind == "rule":
            order = before.rpo()
            assert all(0 <= k < len(order) for k in (*step.at, *step.matched))
            assert step.made and all(0 <= k < len(step.after) for k in step.made)
            assert order[step.at[0]].op is not None
    records = [json.loads(line) for line in proof.to_json_lines().splitlines()]
    assert [r["step"] for r in records] == list(range(1, len(proof) + 1))
    assert all(r["where"].endswith(".py:" + r["where"].rsplit(":", 1)[1]) for r in records if r["kind"] == "rule")


def test_a_replay_on_another_input_names_the_step_that_does_not_apply(squeezenet: Workload) -> None:
    proof = optimize(squeezenet, RULES, mode="greedy", time_limit=30).proof
    x = relax.Var("x", relax.TensorType((1, 8), "float32"))
    other = Workload.from_expr(relax.op.nn.relu(x), ["x"])
    with pytest.raises(ReplayError, match=r"step \d+ of \d+"):
        proof.replay(other)


def _planted() -> Subst:
    """An unsound rule: relu(x) -> x."""
    x = pat.Wildcard()
    return Subst(op.ReLU(x), x, name="planted_relu_drop")


def test_check_names_the_step_of_a_planted_unsound_rule(squeezenet: Workload) -> None:
    result = optimize(squeezenet, RULES + [_planted()], mode="greedy", time_limit=60)
    assert result.report.fallbacks, "the check rejects the unsound result"
    proof = result.report.fallbacks[0].proof
    assert proof is not None and proof.complete
    failure = proof.check(trials=1)
    assert failure is not None and failure.rule == "planted_relu_drop"
    assert failure.where == f"test_proof.py:{_planted.__code__.co_firstlineno + 3}"
    assert proof.steps[failure.step - 1].name == "planted_relu_drop"
    assert all(s.name != "planted_relu_drop" for s in proof.steps[:failure.step - 1])


def test_a_sound_proof_checks(squeezenet: Workload) -> None:
    proof = optimize(squeezenet, RULES, mode="greedy", time_limit=30).proof
    assert proof.check(trials=1) is None


def test_the_proof_of_a_returned_input_is_its_fold() -> None:
    x = relax.Var("x", relax.TensorType((1, 8), "float32"))
    wl = Workload.from_expr(relax.op.nn.relu(x), ["x"])
    result = optimize(wl, rules.default(), mode="saturate", time_limit=10)
    assert result.report.input_returned
    assert result.proof.complete and not result.proof.rule_steps
    assert same_workload(result.proof.replay(), result.workload)


@pytest.mark.parametrize("name", ["nasrnn", "resnet50"])
def test_saturate_proofs_take_chains_whose_middle_forms_the_result_lacks(name: str) -> None:
    """NasRNN's gates merge three matmuls at a time and move their split past add and sigmoid; ResNet-50's
    residual sums gather their biases by commuting and reassociating one term at a time."""
    wl = load_model(name, quick=True)
    result = optimize(wl, RULES, mode="saturate", time_limit=30)
    proof = result.proof
    assert proof.complete, proof.missing
    assert same_workload(proof.replay(wl), result.workload)
    used = {s.name for s in proof.rule_steps}
    expected = {"split_of_element_wise", "parallel_matmul_variadic"} if name == "nasrnn" else {"add_associative", "add_commutative"}
    assert expected <= used
    assert proof.check(trials=1) is None
    _outputs_equal(wl, proof.replay(wl))


@pytest.mark.slow
def test_a_saturate_proof_pairs_the_convs_tensat_merges() -> None:
    """TENSAT's NasNet-A under its own rules: the e-graph merges convs of one input pairwise (a two-output
    rule, which an e-graph applies to every pair); the proof pairs them among the near nodes, merges
    what the pairs build twice, and replays into the result."""
    from gsl_eq import models

    wl = models.tensat_model("nasnet_a")
    # a limit a loaded machine leaves the search within (its reference outputs alone took 18 s there)
    result = optimize(wl, rules.tensat(), mode="saturate", time_limit=120, cost="gpu", multi_iterations=1,
                      cycles="filter")
    proof = result.proof
    assert proof.complete, proof.missing
    assert same_workload(proof.replay(wl), result.workload)
    assert any(len(s.rule.source.outputs) == 2 for s in proof.rule_steps)
    assert any(s.kind == "merge" for s in proof.steps)
    assert result.report.calls_after < result.report.calls_before


@pytest.mark.slow
def test_a_saturate_proof_keeps_what_a_merge_would_take_from_a_concat() -> None:
    """TENSAT's NasRNN under its own rules: two gates' matmuls of one input are both joined by a concat
    (one matmul of the joined weights) and, elsewhere, merged into pieces of a split. Merged first, the
    concat no longer matches the rule that joins them; the proof takes only merges whose pieces the
    result holds until nothing else brings it closer, and replays into the result."""
    from gsl_eq import models

    wl = models.tensat_model("nasrnn")
    result = optimize(wl, rules.tensat(), mode="saturate", time_limit=60, cost="gpu", multi_iterations=1,
                      cycles="filter")
    proof = result.proof
    assert proof.complete, proof.missing
    assert same_workload(proof.replay(wl), result.workload)
    used = {s.rule.name for s in proof.rule_steps}
    assert {"taso:converted.txt#72", "taso:converted_multi.txt#8"} <= used
    assert result.report.calls_after < result.report.calls_before
