"""optimize() says clearly what is wrong with its arguments, before doing anything."""

import pytest

from gsl_eq.errors import GslEqError
from gsl_eq import Subst, op, optimize, pat, rules
from gsl_eq.run.limits import LimitError
from gsl_eq.models import diamond_conv
from tests.conftest import assert_same_outputs


@pytest.fixture(scope="module")
def wl():
    return diamond_conv()


@pytest.mark.parametrize("bad, message", [
    (rules.default, r"got the function .*default.*: .*default is a function; call it, e\.g\. rules\.default\(\)"),
    ("default", r"rules must be a list of Subst; got the str 'default'"),
    ([None], r"rules must be a list of Subst; item 0 is the NoneType None"),
    (42, r"rules must be a list of Subst; got the int 42"),
])
def test_the_rules_argument_is_checked(wl, bad, message):
    with pytest.raises(TypeError, match=message):
        optimize(wl, bad)


def test_a_single_rule_or_a_workload_as_rules(wl):
    rule = rules.default()[0]
    with pytest.raises(TypeError, match=r"got the Subst .*: put a single rule in a list, \[rule\]"):
        optimize(wl, rule)
    with pytest.raises(TypeError, match=r"rules must be a list of Subst; got the Workload"):
        optimize(wl, wl)


@pytest.mark.parametrize("limits, message", [
    (dict(node_limit=0), "node_limit must be a positive integer; got the int 0"),
    (dict(node_limit=-1), "node_limit must be a positive integer; got the int -1"),
    (dict(node_limit=1.5), "node_limit must be a positive integer; got the float 1.5"),
    (dict(iter_limit=True), "iter_limit must be a positive integer; got the bool True"),
    (dict(time_limit="10"), "time_limit must be a positive, finite number of seconds; got the str '10'"),
    (dict(time_limit=-1.0), "time_limit must be a positive, finite number of seconds; got the float -1.0"),
    (dict(time_limit=float("nan")), "time_limit must be a positive, finite number of seconds; got the float nan"),
    (dict(ilp_time_limit=float("inf")), "ilp_time_limit must be a positive, finite number of seconds; got the float inf"),
    (dict(multi_iterations=0), "multi_iterations must be a positive integer; got the int 0"),
])
@pytest.mark.parametrize("mode", ["saturate", "greedy"])
def test_limits_are_validated(wl, limits, message, mode):
    with pytest.raises(LimitError, match=message.replace("(", r"\(").replace(".", r"\.")):
        optimize(wl, rules.default(), mode=mode, **limits)
    assert issubclass(LimitError, GslEqError) and issubclass(LimitError, ValueError)


def make_rule():
    x = pat.Wildcard()
    return Subst(op.ReLU(op.ReLU(x)), op.ReLU(x))


def test_rules_built_on_one_line_get_distinct_names(wl):
    first, second = make_rule(), make_rule()  # same file:line inside make_rule
    assert first.name != second.name and second.name.startswith(first.name.split("#")[0])
    result = optimize(wl, [first, second], mode="greedy", order=[second.name, first.name])
    assert set(result.report.rules) == {first.name, second.name}


def test_two_rules_with_one_explicit_name_are_refused(wl):
    x = pat.Wildcard()
    a = Subst(op.ReLU(op.ReLU(x)), op.ReLU(x), name="twice")
    b = Subst(op.Sigmoid(op.Sigmoid(x)), op.Sigmoid(x), name="twice")
    with pytest.raises(ValueError, match=r"rules must have distinct names; more than one rule is named 'twice'"):
        optimize(wl, [a, b])


@pytest.mark.slow
@pytest.mark.parametrize("combined", [
    lambda: rules.legalize() + rules.default(), lambda: rules.default() + rules.fusion(),
    lambda: rules.default() + rules.all() + rules.algebraic(),
], ids=["legalize+default", "default+fusion", "default+all+algebraic"])
def test_a_library_rule_given_twice_is_kept_once(wl, combined):
    """Groups of the library overlap (default() holds legalize() and part of fusion()): a sum of
    them takes each rule once, where it comes first, as `--rules default+all` does."""
    rule_list = combined()
    names = list(dict.fromkeys(r.name for r in rule_list))
    assert len(names) < len(rule_list)
    result = optimize(wl, rule_list, mode="greedy", cost="opcount")
    assert result.report.rules == names
    assert_same_outputs(wl, result.workload)
    saturated = optimize(wl, rule_list, cost="opcount", time_limit=30)
    assert saturated.report.rules == names and saturated.report.calls_after <= result.report.calls_after
    assert_same_outputs(wl, saturated.workload)


def test_a_rule_of_ones_own_named_as_a_library_rule_is_refused(wl):
    x = pat.Wildcard()
    mine = Subst(op.ReLU(op.ReLU(x)), op.ReLU(x), name="bool_cumsum")
    with pytest.raises(ValueError, match=r"more than one rule is named 'bool_cumsum'"):
        optimize(wl, [mine, *rules.default()])
    assert optimize(wl, [mine, mine], mode="greedy").report.rules == ["bool_cumsum"]  # one rule, given twice


def test_cycles_is_keep_or_filter(wl):
    with pytest.raises(ValueError, match=r"unknown cycles 'drop'; choose one of keep, filter"):
        optimize(wl, rules.default(), cycles="drop")


def test_the_default_rules_for_tvms_kernels_include_the_cpu_rules():
    """optimize(wl, cost="tvm") in saturate mode prices the CPU forms and layouts without being asked."""
    from gsl_eq.cost import get_cost_model
    from gsl_eq.optimizer.arguments import rule_list

    default, cpu = [r.name for r in rules.default()], {r.name for r in rules.cpu()}
    tvm = get_cost_model("tvm")
    assert cpu <= {r.name for r in rule_list(None, None, "saturate", tvm)}
    assert [r.name for r in rule_list(None, None, "greedy", tvm)] == default  # greedy would take each of them
    assert [r.name for r in rule_list(None, None, "saturate", get_cost_model("roofline"))] == default
    assert [r.name for r in rule_list(rules.default(), None, "saturate", tvm)] == default  # rules given are kept
