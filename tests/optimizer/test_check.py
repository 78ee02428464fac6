"""optimize() returns only what it has seen build, run and compute what the input computes; extraction
prices what TVM cannot build as a computation, so the buildable form wins on cost."""

import numpy as np
import pytest
from tvm import relax

from gsl_eq import FoldWarning, Subst, Workload, op, optimize, pat, rules
from gsl_eq.workload.buildable import unbuildable
from gsl_eq.graph import TensorType
from gsl_eq.graph.ops import freeze, infer
from gsl_eq.optimizer.verify import Reference, compare
from gsl_eq.cost import Roofline, graph_cost
from tests.conftest import assert_same_outputs

R = relax.op


def var(name, shape, dtype="float32"):
    return relax.Var(name, relax.TensorType(shape, dtype))


def signature(op_name, attrs, inputs):
    output, canonical = infer(op_name, attrs, inputs)
    return op_name, freeze(canonical), tuple(inputs), output


def test_the_build_probe_names_exactly_the_calls_tvm_cannot_build():
    flags, floats = TensorType((2, 5), "bool"), TensorType((2, 5), "float32")
    bad = [signature("relax.cumsum", {"axis": 1}, [flags]), signature("relax.equal", {}, [flags, flags])]
    good = [signature("relax.cumsum", {"axis": 1}, [floats]), signature("relax.equal", {}, [floats, floats]),
            signature("relax.astype", {"dtype": "int8"}, [flags])]
    assert unbuildable([good[0], *bad, *good[1:]]) == set(bad)


def test_the_probe_builds_one_call_of_each_kind(monkeypatch):
    """Sizes do not decide what TVM can build: a kind (op, attributes but sizes, dtypes, ranks) is built once."""
    from gsl_eq.workload import buildable

    monkeypatch.setattr(buildable, "_known", {})
    built = []
    module = buildable._module
    monkeypatch.setattr(buildable, "_module", lambda calls: built.append(list(calls)) or module(calls))
    flags = [TensorType((2, n), "bool") for n in (3, 5, 7)]
    floats = [TensorType((n, 4, 3, 3), "float32") for n in (8, 16)]
    cumsums = [signature("relax.cumsum", {"axis": 1}, [t]) for t in flags]
    pads = [signature("relax.nn.pad", {"pad_width": (0, 0, 0, 0, w, w, w, w)}, [t]) for w, t in zip((1, 2), floats)]
    assert buildable.kind(pads[0]) == buildable.kind(pads[1]) != buildable.kind(cumsums[0])
    assert unbuildable([*cumsums, *pads]) == set(cumsums)
    assert sorted(len(calls) for calls in built) == [1, 1, 2]  # the batch of both kinds, then each alone
    assert unbuildable([signature("relax.cumsum", {"axis": 1}, [TensorType((4, 9), "bool")])])
    assert len(built) == 3, "a kind known already is not built again"


def unbuildable_cumsum() -> Subst:
    """Sound but unbuildable: bool_cumsum backwards, one call instead of three."""
    mask = pat.Wildcard(dtype="bool")
    counts = op.CumSum(op.AsType(mask, dtype="int32"), dtype="int32", exclusive=False)
    return Subst(op.AsType(counts, dtype="bool"), op.CumSum(mask, axis=counts.axis, dtype=None, exclusive=False),
                 name="unbuildable_cumsum")


def scan_and_transposes() -> Workload:
    """A boolean scan through int32 (unbuildable_cumsum's source) beside a transpose undone."""
    m, x = var("m", (2, 6), "bool"), var("x", (3, 4))
    scan = R.astype(R.cumsum(R.astype(m, "int32"), axis=1, dtype="int32"), "bool")
    y = R.permute_dims(R.permute_dims(R.nn.relu(x), [1, 0]), [1, 0])
    return Workload.from_expr(relax.Tuple([scan, y]), {"m", "x"})


def test_when_the_cheapest_extraction_cannot_be_built_the_next_that_can_is_returned(same_outputs):
    wl = scan_and_transposes()
    result = optimize(wl, [unbuildable_cumsum(), rules.transpose_transpose()], extractor="ilp")
    report = result.report
    assert report.fallbacks and report.fallbacks[0].startswith("result: WorkloadError: TVM cannot build")
    assert not report.input_returned and "returned instead" in report.notes[-1]
    counts = result.workload.graph.op_counts()
    assert counts["relax.permute_dims"] == 0 and counts["relax.cumsum"] == 1 and counts["relax.astype"] == 2
    assert report.rules_used == ["transpose_transpose"]
    same_outputs(wl, result.workload)


def test_the_greedy_extractor_falls_back_to_the_input_when_no_other_extraction_differs():
    wl = scan_and_transposes()
    result = optimize(wl, [unbuildable_cumsum(), rules.transpose_transpose()], extractor="greedy")
    assert result.report.fallbacks[0].startswith("result: WorkloadError: TVM cannot build")
    assert result.report.input_returned and result.workload.mod.script() == wl.mod.script()


def test_when_nothing_cheaper_can_be_built_the_input_is_returned_and_the_notes_say_why():
    m = var("m", (2, 6), "bool")
    wl = Workload.from_expr(R.astype(R.cumsum(R.astype(m, "int32"), axis=1, dtype="int32"), "bool"), {"m"})
    result = optimize(wl, [unbuildable_cumsum()])
    assert result.report.input_returned and result.workload.mod.script() == wl.mod.script()
    assert result.report.fallbacks[0].startswith("result: ")
    assert "the input is returned" in result.report.notes[-1]


@pytest.mark.parametrize("mode", ["greedy", "saturate"])
def test_a_wrong_rule_is_caught_by_the_check_and_the_input_returned(mode):
    x = pat.Wildcard()
    wrong = Subst(op.ReLU(op.ReLU(x)), x, name="relu_relu_is_identity")  # a call fewer, and wrong
    wl = Workload.from_expr(R.nn.relu(R.nn.relu(R.add(var("x", (4, 4)), var("b", (4, 4))))), {"x"})
    result = optimize(wl, [wrong], mode=mode)
    assert result.report.input_returned and result.report.rules_used == []
    assert result.report.fallbacks and "output 0 differs" in result.report.fallbacks[0]
    assert result.workload.graph.op_counts()["relax.nn.relu"] == 2


@pytest.mark.parametrize("extractor", ["ilp", "greedy", "egglog"])
def test_a_parameter_only_computation_tvm_cannot_build_is_not_free(extractor):
    """Both forms of the mask are computed from parameters alone; only the legalized one folds."""
    p, q, x = var("p", (1, 8), "bool"), var("q", (1, 8), "bool"), var("x", (1, 8))
    wl = Workload.from_expr(R.add(x, R.astype(R.equal(p, q), "float32")), {"x"})
    with pytest.warns(FoldWarning, match="relax.equal"):
        assert wl.fold_params().unfolded  # as given, folding leaves the boolean equal
    result = optimize(wl, [rules.bool_equal()], extractor=extractor)
    if extractor == "egglog":  # egglog's extraction, the fewest e-nodes, is the equal: the check falls back
        assert len(result.report.fallbacks) == 1 and "TVM cannot build" in result.report.fallbacks[0]
        assert "greedy DAG under roofline is returned instead" in result.report.notes[-1]
    else:
        assert result.report.fallbacks == []
    assert result.workload.unfolded == () and not result.report.input_returned
    assert result.report.rules_used == ["bool_equal"]
    assert result.workload.graph.op_counts() == {"relax.add": 1}


def test_the_comparison_tolerates_rounding_and_catches_real_differences():
    a = np.linspace(-3, 3, 50, dtype="float32").reshape(5, 10)
    assert compare((a * (1 + 1e-5),), (a,)) is None
    assert compare((a + 1e-5,), (a,)) is None  # near zero too, relative to the output's scale
    assert "differs at 1 of 50" in compare((np.where(a == a[2, 3], a + 0.1, a),), (a,))
    assert "(5, 10) float32" in compare((a.reshape(10, 5),), (a,))
    ints = np.arange(6, dtype="int32")
    assert compare((ints + (ints == 5),), (ints,)).startswith("output 0 differs at 1 of 6")
    nan = np.array([np.nan, 1.0], "float32")
    assert compare((nan.copy(),), (nan,)) is None


def test_the_reference_of_an_unbuildable_input_is_its_legalized_form():
    m = var("m", (2, 6), "bool")
    wl = Workload.from_expr(R.cumsum(m, axis=1), {"m"})
    reference = Reference.of(wl)
    assert reference.label == "legalized input" and reference.outputs is not None
    inputs = reference.inputs["m"]
    np.testing.assert_array_equal(reference.outputs[0], np.cumsum(inputs, axis=1) > 0)


@pytest.mark.timed
@pytest.mark.slow
def test_the_check_is_predicted_from_the_reference_computed_first_within_the_limit(monkeypatch):
    """The check is part of time_limit: the input's reference outputs are computed first, and the result's
    check is predicted from what that took (a margin over it), not from rates: rates alone are the slowest
    seen on any model and machine, and left short limits' searches half the limit for checks of a second."""
    import importlib
    import time
    from collections import OrderedDict

    from gsl_eq import models
    from gsl_eq.optimizer import verify

    for memory in ("_references", "_verdicts"):  # nothing remembered from another test
        monkeypatch.setattr(verify, memory, OrderedDict())
    wl = models.bert_encoder(layers=1, seq=8, dim=32, heads=2, ffn=64).fold_params()
    calls, seconds = wl.work()
    assert calls == sum(wl.graph.op_counts().values()) and seconds == pytest.approx(graph_cost(wl.graph, Roofline()))
    assert not wl.optimized_once()  # a small model: checked as built without LLVM's optimizations
    limit = 30.0
    start = time.perf_counter()
    result = optimize(wl, rules.default() + rules.algebraic(), time_limit=limit)
    wall = time.perf_counter() - start
    report = result.report
    assert "check" in report.timings and not report.input_returned
    assert wall - report.timings.get("release", 0.0) <= 1.1 * limit
    reference = verify.Reference.of(wl)  # computed by the call, and remembered
    assert 0 < reference.seconds <= report.timings["reference"] < wall
    optimize_module = importlib.import_module("gsl_eq.optimizer.budget")
    assert report.check_reserve == pytest.approx(min(verify.CHECK_MARGIN * reference.seconds,
                                                     optimize_module.CHECK_SHARE * limit))
    assert report.check_reserve < 1.0 < optimize_module.CHECK_SHARE * limit  # a small model's check: a moment
    assert report.timings["check"] < 3 * report.check_reserve  # the prediction is close
    # the check built a copy of the result: its user builds it as they choose
    assert result.workload._vm is None


@pytest.mark.timed
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["saturate", "greedy"])
def test_a_reference_that_takes_the_limit_leaves_no_search_and_says_so(monkeypatch, mode):
    """A model TVM builds slowly (a NasNet-A with batch norms at 32 px: 4.7 s for its reference) under a
    short limit: the reference and the time kept for the check and the final build take the whole limit,
    so nothing is searched, one note says why in those terms (not a stop of -1.5 s, nor rules
    "not compiled"), and the call still ends within the limit, its result equal to the input."""
    import time
    from collections import OrderedDict

    from gsl_eq import models
    from gsl_eq.optimizer import verify

    monkeypatch.setattr(verify, "_references", OrderedDict())
    compute = verify.Reference._compute

    def slow(wl):  # as a large model's build takes, without building one
        time.sleep(1.2)
        return compute(wl)

    monkeypatch.setattr(verify.Reference, "_compute", staticmethod(slow))
    wl = models.bert_encoder(layers=1, seq=8, dim=32, heads=2, ffn=64)
    limit = 2.0
    start = time.perf_counter()
    result = optimize(wl, rules.default() + rules.algebraic(), mode=mode, time_limit=limit)
    wall = time.perf_counter() - start
    report = result.report
    assert report.starved and report.timings["reference"] >= 1.2
    (note,) = [n for n in report.notes if n.startswith("the time limit left no time for the search")]
    assert f"took {report.timings['reference']:.1f} s of its 2 s" in note
    assert f"{report.check_reserve:.1f} s of it are kept for checking the result" in note
    assert not [n for n in report.notes if "s of the time limit left" in n or "were not compiled" in n
                or n.startswith("greedy rewriting stopped")]
    assert not report.applications
    assert wall - report.timings.get("release", 0.0) <= 1.1 * limit
    assert_same_outputs(wl, result.workload)


@pytest.mark.timed
@pytest.mark.slow
def test_a_fold_predicted_past_the_time_limit_is_not_begun_and_the_call_ends_within_it():
    """TASO's rules merge TENSAT's BERT's matrix products into products of weight matrices, whose fold
    took 11 s against a search of 0.5 s: a result whose fold is predicted to end past the time limit is
    not folded, nor checked, and the call ends within the limit, returning the input or, on a machine fast
    enough to fold and check it in the time left, an option made already (saturate mode's rival)."""
    import time

    from gsl_eq import models

    wl = models.tensat_model("bert")
    Reference.of(wl.fold_params())  # remembered, as a repeated call finds it: 0.5 s here, more under load
    rule_list = rules.tensat() + rules.default()  # reading TASO's rules is not the call's
    start = time.perf_counter()
    result = optimize(wl, rule_list, cost="gpu", time_limit=3.0, multi_iterations=1)
    assert time.perf_counter() - start < 3.0
    report = result.report
    assert report.applications
    (note,) = [n for n in report.notes if n.startswith("folding the result's parameter computations")]
    predicted = float(note.split("is predicted to take ")[1].split(" s")[0])
    left = float(note.split("past the time limit (")[1].split(" s left")[0])
    assert predicted > left  # the extraction's fold, or greedy mode's where cheaper (a smaller one), would end past it
    if report.input_returned:  # not folded, or folded past its prediction and not checked
        assert result.workload is result.input
        assert ("final build" in report.timings) == note.endswith("leaving its check no time before the limit: "
                                                                  "the input is returned")
    else:
        assert "is returned instead, the next cheapest that folds in time and passes the check" in note
        assert not note.split(": ")[-1].startswith("result ") and report.cost_after < report.cost_before
        assert_same_outputs(wl, result.workload)


@pytest.mark.timed
def test_an_option_whose_fold_would_end_past_the_limit_is_passed_over_for_the_next(monkeypatch):
    """The extraction's weight product would fold past the deadline; greedy mode's result, made already
    and folded as it went, is checked and returned in its place, and the note says why; no other option
    is made. Where none is ready, the input."""
    import dataclasses
    import time

    from gsl_eq.optimizer.candidates import Alternative, checked
    from gsl_eq.optimizer.report import OptimizeReport
    from gsl_eq.workload import workload

    x, w1, w2 = var("x", (4, 64)), var("w1", (64, 64)), var("w2", (64, 64))
    wl = Workload.from_expr(R.matmul(R.matmul(x, w1), w2), ["x"])
    extracted = Workload(Workload.from_expr(R.matmul(x, R.matmul(w1, w2)), ["x"]).mod, wl.params)
    folded = extracted.fold_params()
    assert len(extracted.fold_calls()) == 1 and not folded.fold_calls()
    monkeypatch.setattr(workload, "FOLD_RATES", dataclasses.replace(workload.FOLD_RATES, once=60.0))
    model, reference = Roofline(), Reference.of(wl)
    before = graph_cost(wl.graph, model)
    result, rival = Alternative("result", extracted, []), Alternative("greedy mode's result", folded, [])

    def options():
        yield result
        raise AssertionError("the next option is not made: a new search would take the time the fold lacks")

    report = OptimizeReport("saturate", "roofline", before, before, 2, 1, time_limit=5.0)
    chosen = checked(options(), before, model, reference, report, deadline=time.perf_counter() + 5.0, ready=[rival])
    assert chosen is not None and chosen.label == "greedy mode's result" and not report.fallbacks
    (note,) = report.notes
    assert note.startswith("folding the result's parameter computations (1 calls) is predicted to take 60.")
    assert note.endswith("greedy mode's result is returned instead, the next cheapest that folds in time and passes "
                         "the check")
    assert_same_outputs(wl, chosen.workload)
    report = OptimizeReport("saturate", "roofline", before, before, 2, 1, time_limit=5.0)
    assert checked(options(), before, model, reference, report, deadline=time.perf_counter() + 5.0) is None
    (note,) = report.notes
    assert note.startswith("folding the result's") and note.endswith("would leave room for it): the input is returned")


@pytest.mark.timed
def test_an_option_whose_fold_ends_later_than_predicted_is_not_checked_past_the_limit(monkeypatch):
    """Greedy mode's result, tried where the extraction's fold would not fit, folds past its prediction
    (as under load): its check, which would end past the deadline, is not begun and the input is returned."""
    import dataclasses
    import time

    from gsl_eq.optimizer import candidates
    from gsl_eq.optimizer.candidates import Alternative, checked
    from gsl_eq.optimizer.report import OptimizeReport
    from gsl_eq.workload import workload

    x, w1, w2 = var("x", (4, 64)), var("w1", (64, 64)), var("w2", (64, 64))
    wl = Workload.from_expr(R.matmul(R.matmul(x, w1), w2), ["x"])
    extracted = Workload(Workload.from_expr(R.matmul(x, R.matmul(w1, w2)), ["x"]).mod, wl.params)
    rival = Alternative("greedy mode's result", extracted.fold_params(), [])
    monkeypatch.setattr(workload, "FOLD_RATES", dataclasses.replace(workload.FOLD_RATES, once=60.0))
    model, reference = Roofline(), Reference.of(wl)
    final_build = candidates.final_build

    def slow(out, timings):
        time.sleep(1.0)
        return final_build(out, timings)

    def unchecked(_):
        raise AssertionError("a check that would end past the deadline is not begun")

    monkeypatch.setattr(candidates, "final_build", slow)
    monkeypatch.setattr(reference, "mismatch", unchecked)
    before = graph_cost(wl.graph, model)
    report = OptimizeReport("saturate", "roofline", before, before, 2, 1, time_limit=5.0)
    deadline = time.perf_counter() + reference.predicted_check_seconds() + 0.5
    chosen = checked(iter([Alternative("result", extracted, [])]), before, model, reference, report,
                     deadline=deadline, ready=[rival])
    assert chosen is None and time.perf_counter() < deadline + 0.6
    (note,) = report.notes
    assert note.startswith("folding the result's parameter computations (1 calls) is predicted to take 60.")
    assert note.endswith("the greedy mode's result was folded instead, but past its prediction, leaving its check "
                         "no time before the limit: the input is returned")
