"""``Subst(..., where=...)``: guards over the whole matched source, in both executors, the checker and explain."""

import pytest
from tvm import relax

from gsl_eq import GSLError, Subst, Workload, check_rule, explain, op, optimize, pat
from gsl_eq.greedy import rewrite
from gsl_eq.rules._common import CONV_ATTRS, NCHW
from tests.conftest import assert_same_outputs

R = relax.op


def tvar(name, *shape):
    return relax.Var(name, relax.TensorType(shape, "float32"))


def swap_equal_shapes() -> Subst:
    a, b = pat.Wildcard(), pat.Wildcard()
    return Subst(op.Subtract(a, b), a + op.Negative(b), where=a.shape == b.shape, name="swap_sub")


def test_greedy_applies_only_where_the_guard_holds():
    x, y, z = tvar("x", 2, 3), tvar("y", 2, 3), tvar("z", 3)
    wl = Workload.from_expr(relax.Tuple([R.subtract(x, y), R.subtract(x, z)]), {"x", "y", "z"})
    new, count = rewrite(wl, swap_equal_shapes())
    assert count == 1 and new.graph.op_counts()["relax.negative"] == 1
    assert_same_outputs(wl, new)


def test_saturate_counts_the_guard_as_a_rejection_reason():
    x, z = tvar("x", 2, 3), tvar("z", 3)
    wl = Workload.from_expr(R.subtract(x, z), {"x", "z"})
    report = optimize(wl, [swap_equal_shapes()], mode="saturate", cost="opcount").report
    assert report.rules_used == [] and report.rejected["swap_sub"] == {"source guard false": 1}


def test_explain_shows_the_values_a_false_guard_compared():
    x, z = tvar("x", 2, 3), tvar("z", 3)
    (attempt,) = explain(swap_equal_shapes(), Workload.from_expr(R.subtract(x, z), {"x", "z"})).attempts
    assert attempt.reason.startswith("where (") and "is false: (2, 3) against (3,)" in attempt.reason
    assert attempt.pattern == "the whole match"


@pytest.mark.slow
def test_a_guard_makes_the_broadcast_kernel_rule_sound():
    x, w1, w2 = pat.Wildcard(), pat.Variable(), pat.Variable()
    conv1 = op.Conv2D(x, w1, **NCHW)
    conv2 = op.Conv2D(x, w2, **pat.same_attr(conv1, CONV_ATTRS))
    rule = Subst(conv1 + conv2, op.Conv2D(x, w1 + w2, **pat.same_attr(conv1, CONV_ATTRS)),
                 where=w1.shape == w2.shape, name="guarded_kernel_sum")
    result = check_rule(rule, trials=6)
    assert result.verdict.value == "sound" and result.instances == 6


def test_where_must_be_an_expression_over_the_source():
    a, b, c = pat.Wildcard(), pat.Wildcard(), pat.Wildcard()
    with pytest.raises(GSLError, match="where guard 0 is False of type bool, not an attribute expression") as err:
        Subst(a + b, b + a, where=a is b)
    assert "test_where.py" in str(err.value)
    with pytest.raises(GSLError, match="which is not part of the rule's source"):
        Subst(a + b, b + a, where=[a.ndim == 2, c.shape == b.shape])
