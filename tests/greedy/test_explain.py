"""Why a rule does not fire: explain() names the failing guard with its values, condition 4, the refused target."""

import json

import pytest
from tvm import relax

from gsl_eq.errors import ArgumentError
from gsl_eq import Subst, Workload, explain, op, pat, rules

R = relax.op


def tvar(name, *shape):
    return relax.Var(name, relax.TensorType(shape, "float32"))


def test_names_the_false_guard_and_its_values():
    """The second conv has dilation 2: diamond_conv_add's same-attributes guard is false (from test_match)."""
    x, w1, w2 = tvar("x", 1, 2, 8, 8), tvar("w1", 4, 2, 1, 1), tvar("w2", 4, 2, 1, 1)
    wl = Workload.from_expr(R.add(R.nn.conv2d(x, w1), R.nn.conv2d(x, w2, dilation=2)), {"x"})
    why = explain(rules.diamond_conv_add(), wl)
    (attempt,) = why.attempts
    assert why.fires == 0 and attempt.outcome == "no match"
    assert "guard dilation=" in attempt.reason and "is false" in attempt.reason
    assert "expected (1, 1)" in attempt.reason and "the node has (2, 2)" in attempt.reason
    assert "relax.nn.conv2d" in attempt.pattern and "conv.py:" in attempt.pattern
    assert attempt.matched >= 4  # x, w1, conv1, w2 were matched before the second conv's guard
    assert "guard dilation=" in str(why)


def test_names_condition_4():
    """conv1 is also returned, so it cannot be removed (test_match's shared inner node)."""
    x, w1, w2 = tvar("x", 1, 2, 4, 4), tvar("w1", 4, 2, 1, 1), tvar("w2", 4, 2, 1, 1)
    c1 = R.nn.conv2d(x, w1)
    wl = Workload.from_expr(relax.Tuple([R.add(c1, R.nn.conv2d(x, w2)), R.nn.relu(c1)]), {"x"})
    (attempt,) = explain(rules.diamond_conv_add(), wl).attempts
    assert attempt.outcome == "no match"
    assert attempt.reason.startswith("condition 4") and "successor outside the match (relax.nn.relu" in attempt.reason
    assert attempt.matched == len(rules.diamond_conv_add().source)


def test_fires_where_the_rule_applies_and_names_the_op_mismatch_elsewhere():
    x, w1, w2 = tvar("x", 1, 2, 4, 4), tvar("w1", 4, 2, 1, 1), tvar("w2", 4, 2, 1, 1)
    good = R.add(R.nn.conv2d(x, w1), R.nn.conv2d(x, w2))
    other = R.add(R.nn.relu(good), R.nn.conv2d(x, w1))
    why = explain(rules.diamond_conv_add(), Workload.from_expr(other, {"x"}))
    outcomes = sorted(a.outcome for a in why.attempts)
    assert outcomes == ["fires", "no match"]
    miss = next(a for a in why.attempts if a.outcome == "no match")
    assert "relax.nn.conv2d with 2 inputs is expected, the node calls relax.nn.relu with 1" in miss.reason
    assert json.loads(why.to_json())["fires"] == 1


def test_names_the_refused_target():
    """A target TVM cannot type: the match is found, the target refused with TVM's reason."""
    x = pat.Wildcard(ndim=2)
    flat = op.Reshape(x, shape=(x.shape[0] * x.shape[1],))
    rule = Subst(op.ReLU(x), op.Concatenate((x, flat)), name="untyped")
    (attempt,) = explain(rule, Workload.from_expr(R.nn.relu(tvar("x", 2, 3)), {"x"})).attempts
    assert attempt.outcome == "target refused" and "target cannot be typed" in attempt.reason
    assert "TVM cannot type relax.concat" in attempt.reason


def test_no_place_to_start():
    why = explain(rules.diamond_conv_add(), Workload.from_expr(R.nn.relu(tvar("x", 2, 3)), {"x"}))
    assert why.attempts == [] and "no node where its source could start" in why.summary()


@pytest.mark.parametrize("rule, workload, message", [
    ("relu", None, r"explain takes a rule \(a gsl_eq.Subst\) first, got the str 'relu'; .*rules.relu\(\)"),
    ([], None, r"got the list \[\]; for several rules: \[explain\(r, wl\) for r in rules\]"),
    (None, 42, r"explain takes a gsl_eq.Workload \(or a gsl_eq.Graph\) second, got the int 42"),
    (None, "module", r"got an IRModule; for a bare module: explain\(rule, Workload\(mod\)\)"),
])
def test_explain_names_what_it_got_and_what_it_takes(rule, workload, message):
    wl = Workload.from_expr(R.nn.relu(tvar("x", 2, 3)), {"x"})
    rule = rules.diamond_conv_add() if rule is None else rule
    workload = wl if workload is None else wl.mod if workload == "module" else workload
    with pytest.raises(ArgumentError, match=message):
        explain(rule, workload)
