"""optimize()'s report is honest: the rules the returned module uses, apart from what the run did;
matches left alone counted per rule and reason; costs in one unit, speedup = before / after."""

import math

import numpy as np
import pytest
from tvm import relax
from tvm.relax import op as R

from gsl_eq import Subst, Workload, op, optimize, pat, rules
from gsl_eq.models import diamond_conv
from gsl_eq.cost import cost_unit, display_unit, speedup
from gsl_eq.cost import Measured, OpCount, Roofline

SOURCE_GUARD, UNTYPED, TYPE_CHANGE = "source guard false", "target cannot be typed", "output type would change"


def var(name, *shape, dtype="float32"):
    return relax.Var(name, relax.TensorType(shape, dtype))


def relu_relu():
    x = pat.Wildcard()
    return Subst(op.ReLU(op.ReLU(x)), op.ReLU(x), name="relu_relu")


def abs_relu():
    x = pat.Wildcard()
    return Subst(op.Abs(op.ReLU(x)), op.ReLU(x), name="abs_relu")


def abs_as_max():
    """An equal but costlier form: abs(x) -> maximum(x, -x)."""
    x = pat.Wildcard()
    return Subst(op.Abs(x), op.Maximum(x, op.Negative(x)), name="abs_as_max")


def flatten16():
    """relu(relu(x)) -> relu(reshape(x, (16,))) for float32 x: typed only when x has 16 elements,
    of the same type only when x is a vector."""
    x = pat.Wildcard(dtype="float32")
    return Subst(op.ReLU(op.ReLU(x)), op.ReLU(op.Reshape(x, shape=(16,))), name="flatten16")


@pytest.fixture(scope="module")
def abs_relu_relu():
    return Workload.from_expr(R.abs(R.nn.relu(R.nn.relu(var("u", 2, 3)))), {"u"})


def rows(report):
    """The report's table as {row name: text}, wrapped cells joined."""
    table: dict[str, str] = {}
    for line in str(report).splitlines():
        if line.count("│") == 3:
            name, text = (cell.strip() for cell in line.split("│")[1:3])
            if name:
                table[key := name] = text
            else:
                table[key] += " " + text
    return table


# --------------------------------------------------------------------------- rules used


def test_a_greedy_run_that_returns_its_input_lists_no_rule_used(abs_relu_relu):
    result = optimize(abs_relu_relu, [abs_as_max()], mode="greedy", cost="opcount")
    report = result.report
    assert report.applications == {"abs_as_max": 1}  # it did rewrite, into something costlier
    assert report.input_returned and report.rules_used == []
    assert result.mod.script() == abs_relu_relu.fold_params().mod.script()
    assert report.cost_after == report.cost_before == 3 and report.calls_after == 3
    assert any("is not below the input's" in note and "the input is returned" in note for note in report.notes)
    table = rows(report)
    assert table["rules used"] == "none: the input is returned"
    assert table["rewrites done (discarded)"] == "abs_as_max x1"
    assert not any(name.startswith("rules applied") for name in table)


@pytest.mark.parametrize("mode", ["greedy", "saturate"])
def test_where_no_rule_fires_the_repeated_computations_are_merged_all_the_same(mode):
    x = var("x", 4, 8)
    wl = Workload.from_expr(R.multiply(R.nn.relu(x), R.nn.relu(x)), {"x"})
    y = pat.Wildcard()
    never = Subst(op.Sigmoid(op.Sigmoid(y)), op.Sigmoid(y), name="never")
    result = optimize(wl, [never], mode=mode, cost="opcount")
    report = result.report
    assert report.applications == {} and report.rules_used == [] and not report.input_returned
    assert (report.calls_before, report.calls_after) == (3, 2)
    assert any(note.startswith("no rule's rewrite is on the result") for note in report.notes)
    inputs = wl.random_inputs(0)
    np.testing.assert_array_equal(result.workload(**inputs), wl(**inputs))


def test_a_result_that_only_merges_repeated_computations_says_so():
    x = var("x", 4, 8)
    wl = Workload.from_expr(R.add(R.abs(x), R.multiply(R.nn.relu(x), R.nn.relu(x))), {"x"})
    report = optimize(wl, [abs_as_max()], mode="saturate", cost="opcount").report
    assert report.applications == {"abs_as_max": 1} and report.rules_used == [] and not report.input_returned
    assert (report.calls_before, report.calls_after) == (5, 4)
    assert any(note.startswith("no rule's rewrite is on the result: it is the input with the computations it "
                               "repeats merged") for note in report.notes)


@pytest.mark.parametrize("mode", ["greedy", "saturate"])
def test_when_no_rule_fires_the_input_is_returned_and_no_rule_is_used(abs_relu_relu, mode):
    x = pat.Wildcard()
    never = Subst(op.Sigmoid(op.Sigmoid(x)), op.Sigmoid(x), name="never")
    report = optimize(abs_relu_relu, [never], mode=mode, cost="opcount").report
    assert report.input_returned and report.rules_used == [] and report.applications == {}
    assert "no rule rewrote anything: the input is returned" in report.notes


@pytest.mark.parametrize("order, survivor", [(["relu_relu", "abs_relu"], "abs_relu"),
                                             (["abs_relu", "relu_relu"], "relu_relu")])
def test_greedy_lists_only_the_rule_whose_nodes_survive(abs_relu_relu, order, survivor):
    # the first rule's new relu is matched and replaced by the second rule's
    report = optimize(abs_relu_relu, [relu_relu(), abs_relu()], mode="greedy", cost="opcount", order=order).report
    assert report.applications == {"relu_relu": 1, "abs_relu": 1}
    assert report.rules_used == [survivor] and not report.input_returned
    assert report.calls_after == 1
    assert rows(report)["rules used"] == survivor


def test_greedy_counts_a_rewrite_folded_into_a_parameter_as_used():
    # diamond_conv_add builds conv(x, w1 + w2); w1 + w2 is folded into a new parameter
    result = optimize(diamond_conv(), rules.default(), mode="greedy", cost="opcount")
    assert result.report.rules_used == ["diamond_conv_add"]
    assert result.workload.graph.op_counts() == {"relax.nn.conv2d": 1}


def test_greedy_counts_a_rewrite_that_only_removes_nodes_as_used():
    wl = Workload.from_expr(R.nn.relu(R.permute_dims(R.permute_dims(var("x", 2, 3)))), {"x"})
    report = optimize(wl, [rules.transpose_transpose()], mode="greedy", cost="opcount").report
    assert report.rules_used == ["transpose_transpose"] and report.calls_after == 1


@pytest.mark.parametrize("extractor", ["ilp", "greedy", "tree", "egglog"])
def test_saturate_lists_only_rules_on_the_extracted_term(abs_relu_relu, extractor):
    report = optimize(abs_relu_relu, [relu_relu(), abs_as_max(), abs_relu()], mode="saturate", cost="opcount",
                      extractor=extractor).report
    assert report.calls_after == 1  # relu(u)
    assert report.applications["abs_as_max"] > 0  # its maximum(x, -x) is in the e-graph, not in the result
    # relu(u) replaces abs(relu(relu(u))): abs_relu and relu_relu each built it again
    assert report.rules_used == ["relu_relu", "abs_relu"]


def test_saturate_names_every_rule_that_built_an_extracted_e_node():
    x, y = var("x", 2, 3), var("y", 2, 3)
    wl = Workload.from_expr(R.add(R.multiply(x, y), R.multiply(x, x)), {"x", "y"})
    a, b, c = pat.Wildcard(), pat.Wildcard(), pat.Wildcard()
    factor = Subst(a * b + a * c, a * (b + c), name="factor")
    commute = Subst(a * b, b * a, name="commute")
    report = optimize(wl, [commute, factor], mode="saturate", cost="opcount").report
    assert report.calls_after == 2  # x * (y + x)
    # factor created multiply(x, y + x); commute, applied twice, built it again: both count
    assert report.rules_used == ["commute", "factor"]


def test_saturate_names_a_rule_that_only_merges_e_classes():
    wl = Workload.from_expr(R.nn.relu(R.permute_dims(R.permute_dims(var("x", 2, 3)))), {"x"})
    report = optimize(wl, [rules.transpose_transpose(), abs_as_max()], mode="saturate", cost="opcount").report
    assert report.calls_after == 1 and report.rules_used == ["transpose_transpose"]


def test_saturate_returning_its_input_lists_no_rule_used(abs_relu_relu):
    report = optimize(abs_relu_relu, [abs_as_max()], mode="saturate", cost="opcount").report
    assert report.applications == {"abs_as_max": 1} and report.input_returned and report.rules_used == []
    assert rows(report)["e-graph applications (discarded)"] == "abs_as_max x1"


# --------------------------------------------------------------------------- rejections


@pytest.fixture(scope="module")
def four_chains():
    """relu(relu(x)) on a 16-vector (rewritten), a 4x4 matrix (the output type would change),
    a 3x4 matrix (reshape to 16 cannot be typed) and a float16 16-vector (the guard is false)."""
    shapes = {"a": ((16,), "float32"), "b": ((4, 4), "float32"), "c": ((3, 4), "float32"), "d": ((16,), "float16")}
    chains = [R.nn.relu(R.nn.relu(var(n, *s, dtype=d))) for n, (s, d) in shapes.items()]
    return Workload.from_expr(relax.Tuple(chains), set(shapes))


def test_greedy_counts_rejected_matches_per_rule_and_reason_once(four_chains):
    report = optimize(four_chains, [flatten16()], mode="greedy", cost="opcount").report
    assert report.applications == {"flatten16": 1} and report.rules_used == ["flatten16"]
    # refused at every pass of every round, counted once; greedy's matcher refuses the float16 chain itself
    assert report.rejected == {"flatten16": {TYPE_CHANGE: 1, UNTYPED: 1}}
    assert rows(report)["rejected matches"] == f"flatten16: {TYPE_CHANGE} x1, {UNTYPED} x1"


def test_saturate_counts_rejected_keys_per_rule_and_reason(four_chains):
    report = optimize(four_chains, [flatten16()], mode="saturate", cost="opcount").report
    assert report.applications == {"flatten16": 1}
    assert report.rejected == {"flatten16": {SOURCE_GUARD: 1, TYPE_CHANGE: 1, UNTYPED: 1}}
    assert report.iterations[0]["rejected"] == report.rejected
    assert report.iterations[0]["accepted_keys"] == {"flatten16": 1}
    assert rows(report)["rejected keys"] == f"flatten16: {TYPE_CHANGE} x1, {SOURCE_GUARD} x1, {UNTYPED} x1"


# --------------------------------------------------------------------------- units and ratios


@pytest.mark.parametrize("cost, unit, shown", [("roofline", "s", "us"), ("opcount", "op calls", "op calls")])
def test_the_table_states_one_unit_and_speedup_is_before_over_after(cost, unit, shown):
    report = optimize(diamond_conv(), rules.default(), mode="greedy", cost=cost).report
    assert report.cost_unit == unit and report.speedup == report.cost_before / report.cost_after > 1
    factor = display_unit(unit)[1]
    title = str(report).splitlines()[0]
    assert f"costs in {shown}, {cost} model" in title
    assert rows(report)[f"cost ({shown}, {cost})"] == (
        f"before {report.cost_before * factor:.6g} -> after {report.cost_after * factor:.6g}: "
        f"speedup {report.speedup:.3f}x (before / after)")


def test_cost_units_of_the_models():
    class Flops:
        name, unit = "flops", "FLOP"

        def __call__(self, op, attrs, inputs, output):
            return 1.0

    assert [cost_unit(m) for m in (Roofline(), Measured(), OpCount(), Flops())] == ["s", "s", "op calls", "FLOP"]
    assert display_unit("s") == ("us", 1e6) and display_unit("FLOP") == ("FLOP", 1.0)
    assert speedup(4.0, 2.0) == 2.0 and speedup(1.0, 0.0) == math.inf and math.isnan(speedup(0.0, 0.0))


def test_the_time_budget_says_what_a_measuring_cost_model_spent_outside_it():
    from gsl_eq.optimizer import OptimizeReport

    def report(cost_model: str) -> OptimizeReport:
        return OptimizeReport("saturate", cost_model, 2.0, 1.0, 10, 8, timings={"price": 61.3},
                              time_limit=10.0, extraction_budget=7.7, check_reserve=2.0, fold_reserve=0.3)

    assert report("tvm").budget() == ("10 s, 7.70 s of it left for extraction, 0.30 s kept for the final build and "
                                      "2.00 s for the check; 61.3 s timing ops for the tvm model, outside it")
    assert report("roofline").budget() == ("10 s, 7.70 s of it left for extraction, 0.30 s kept for the final build "
                                           "and 2.00 s for the check")


def test_which_rules_a_result_uses_is_asked_only_of_a_result_cheaper_than_the_input(monkeypatch):
    """The provenance rules took 8.8 s on a 50k-e-node e-graph of TASO's rules, for a result the input
    then replaced: saturate mode attributes only a result it may return."""
    import importlib

    module = importlib.import_module("gsl_eq.optimizer.saturate")
    asked = []
    real = module.rules_used
    monkeypatch.setattr(module, "rules_used", lambda *args, **kwargs: asked.append(1) or real(*args, **kwargs))
    wl = diamond_conv()
    x, y = pat.Wildcard(), pat.Wildcard()
    commuted = optimize(wl, [Subst(op.Add(x, y), op.Add(y, x), name="commute")], cost="opcount")
    assert commuted.report.input_returned and commuted.report.rules_used == [] and asked == []
    merged = optimize(wl, rules.default(), cost="opcount")
    assert not merged.report.input_returned and merged.report.rules_used and asked == [1]


@pytest.mark.timed
def test_which_rules_a_result_uses_is_not_asked_past_the_time_limit(monkeypatch):
    """egglog's provenance query cannot be stopped (283 s on Inception-v3's 50k-e-node e-graph of TASO's
    rules before it asked only of the e-classes rules built): past the time limit the report says the
    rules used are not known, and the result is returned all the same."""
    import time

    from gsl_eq.egraph import Runner

    real = Runner.attribute

    def slow(self, *args, **kwargs):
        time.sleep(30)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Runner, "attribute", slow)
    monkeypatch.setattr("gsl_eq.run.bounded.IN_PROCESS_ENODES", 0)  # as on a large e-graph: forked
    start = time.perf_counter()
    result = optimize(diamond_conv(), rules.default(), cost="opcount", time_limit=3.0)
    spent = time.perf_counter() - start - result.report.timings.get("check", 0.0)
    assert spent < 3.0 + 1.0, result.report.timings  # the check is predicted, and may end past the limit
    assert not result.report.input_returned and result.report.rules_used is None
    # the search took all of its time: the result's fold of the two weights took the time kept for it
    assert 0 < result.report.fold_reserve and "final build" in result.report.timings
    assert any("not known" in note for note in result.report.notes)
    assert "not known (time limit)" in str(result.report)
    assert result.report.calls_after < result.report.calls_before


@pytest.mark.slow
def test_a_stop_for_a_search_predicted_past_the_deadline_says_which_and_when(monkeypatch):
    # a merge's search predicted from its matches at a smaller e-graph can outgrow any time left;
    # saturation then stops long before the deadline, and the notes say why
    from gsl_eq.egraph.calls import EngineCalls
    from gsl_eq.egraph.runner import Runner
    from gsl_eq.models import bert_encoder

    # only controlled iterations record each search's matches, and the clock decides which iterations are
    # fast (CI once ran every one fast, under load): here every iteration is controlled
    monkeypatch.setattr(Runner, "_fast_possible", lambda self, n, searched: False)
    growing = EngineCalls._growing
    monkeypatch.setattr(EngineCalls, "_growing", lambda self, ruleset, size: 1e6 if ruleset.startswith("search_") and
                        any(len(q.outputs) > 1 for q in self.queries[int(ruleset[7:])]) and int(ruleset[7:]) in
                        self._last_matches else growing(self, ruleset, size))
    result = optimize(bert_encoder(layers=2, seq=8, dim=32, heads=2), rules.default(), time_limit=60)
    report = result.report
    assert report.stop_reason == "time limit" and report.timings["saturate"] < 30
    (note,) = [n for n in report.notes if n.startswith("saturation stopped after")]
    searched = note.split("searching ")[1].split(" again is predicted to take longer than that")[0].split(", ")
    assert "parallel_matmul_variadic" in searched and "of the time limit left" in note
