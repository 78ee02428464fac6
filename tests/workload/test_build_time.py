"""What a build that runs once is predicted to take (gsl_eq.workload.build_time): the fold's and the check's rates."""

import dataclasses

import numpy as np
import pytest
from tvm import relax
from tvm.relax import op as R

from gsl_eq import Workload
from gsl_eq.workload import workload
from gsl_eq.workload.build_time import OPTIMIZED_ONCE_ABOVE, REMEMBERED_RATES, BuildRates, optimized
from gsl_eq.graph import Kind
from gsl_eq.graph.work import roofline_seconds

def tvar(name, *shape):
    return relax.Var(name, relax.TensorType(shape, "float32"))


RATES = dict(once=0.1, per_call={False: 0.002, True: 0.01}, per_roofline_second={False: 50.0, True: 10.0})


def test_a_prediction_takes_the_slower_of_the_given_and_the_timed_rates():
    rates = BuildRates(**RATES)
    light, heavy = (40, 0.001), (2, 1.0)  # many cheap calls; two products of large matrices
    assert not optimized(*light) and optimized(*heavy) and OPTIMIZED_ONCE_ABOVE * 2 < 1.0
    assert rates.predicted(*light) == pytest.approx(0.1 + 0.002 * 40 + 50 * 0.001)
    assert rates.predicted(*heavy) == pytest.approx(0.1 + 0.01 * 2 + 10 * 1.0)
    rates.record(*heavy, built=0.01, ran=2.0)  # faster than given: the prediction stays
    assert rates.predicted(*heavy) == pytest.approx(0.1 + 0.01 * 2 + 10 * 1.0)
    rates.record(*heavy, built=0.2, ran=30.0)  # slower (once its own 0.1 s): it rises, for optimized builds only,
    assert rates.predicted(*heavy) == pytest.approx(0.1 + 0.1 / 4 * 2 + 32 / 2 * 1.0)  # to both timings' rate
    assert rates.predicted(*light) == pytest.approx(0.1 + 0.002 * 40 + 50 * 0.001)
    for _ in range(REMEMBERED_RATES):  # the slow one is forgotten after as many timed since
        rates.record(*heavy, built=0.01, ran=1.0)
    assert rates.predicted(*heavy) == pytest.approx(0.1 + 0.01 * 2 + 10 * 1.0)


def test_a_small_build_weighs_as_little_as_its_work():
    """A build of a few calls is mostly fixed cost: its rate per call is high, and it hardly moves the
    prediction a large build timed before it made (as GoogLeNet's greedy rounds fold hundreds of calls,
    then a few)."""
    rates = BuildRates(**RATES)
    large, small = (570, 0.0057), (18, 0.0015)
    assert not optimized(*large) and not optimized(*small)
    rates.record(*large, built=2.2, ran=0.013)
    once_large = 0.1 + (2.2 - 0.1) + 50 * 0.0057  # its building as timed, its running at the given rate
    assert rates.predicted(*large) == pytest.approx(once_large)
    rates.record(*small, built=0.5, ran=0.004)
    assert rates.predicted(*large) == pytest.approx(0.1 + (2.1 + 0.4) / 588 * 570 + 50 * 0.0057)
    assert rates.predicted(*large) < 1.25 * once_large  # its own rate, 0.4 s over 18 calls, would say five times


def test_a_fold_is_predicted_from_its_calls_and_timed_into_the_fold_rates(monkeypatch):
    fresh = dataclasses.replace(workload.FOLD_RATES, timed={})
    monkeypatch.setattr(workload, "FOLD_RATES", fresh)
    x, w1, w2 = tvar("x", 4, 512), tvar("w1", 512, 512), tvar("w2", 512, 512)
    wl = Workload.from_expr(R.matmul(x, R.matmul(w1, w2)), ["x"])
    (product,) = wl.fold_calls()
    seconds = roofline_seconds(product.op, product.attrs, [i.type for i in product.inputs], product.type)
    assert wl.predicted_fold_seconds() == pytest.approx(fresh.predicted(1, seconds))
    folded = wl.fold_params()
    assert folded.predicted_fold_seconds() == 0.0 and not folded.fold_calls()
    assert [n.op for n in folded.graph.rpo() if n.kind is Kind.CALL] == ["relax.matmul"]
    assert set(fresh.timed) == {("build", True), ("run", True)}  # one optimized build, one run
    inputs = folded.random_inputs(seed=0)
    np.testing.assert_allclose(folded(**inputs), inputs["x"] @ (wl.params["w1"] @ wl.params["w2"]),
                               rtol=1e-4, atol=1e-5)
