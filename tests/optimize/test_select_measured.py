"""optimize(select="measured"): TVM's time decides among distinct candidates, the input one of them."""

import pytest
import tvm_ffi

from gsl_eq import models, optimize, rules, selection
from gsl_eq.schedule_db import ScheduleDatabase


@pytest.fixture(scope="module")
def schedules(tmp_path_factory):
    return ScheduleDatabase(samples=1, cache_dir=tmp_path_factory.mktemp("schedules"), number=2, repeat=1)


@pytest.mark.parametrize("mode", ["saturate", "greedy"])
def test_the_fastest_distinct_candidate_is_returned_and_the_input_is_one(mode, schedules, same_outputs):
    wl = models.resnet_bottleneck()
    result = optimize(wl, rules.default(), mode=mode, select="measured", candidates=4, schedules=schedules,
                      time_limit=30)
    timed = result.report.candidates
    assert timed[0]["label"] == "input" and 2 <= len(timed) <= 4
    labels = [c["label"] for c in timed]
    assert len(set(labels)) == len(labels)  # structurally equal candidates are one (their labels joined)
    fastest = min(timed, key=lambda c: c["seconds"])
    assert all(len(c["rounds"]) == 5 and c["seconds"] > 0 for c in timed)
    assert result.report.input_returned == (fastest is timed[0])
    assert fastest["label"] in result.report.notes[-1]
    assert result.report.cost_after == pytest.approx(fastest["cost"])
    assert "select" in result.report.timings
    same_outputs(wl, result.workload)


@pytest.fixture
def timed_pools(monkeypatch):
    """The candidates (label, workload) each measured selection times, recorded."""
    pools = []
    time_candidates = selection.time_candidates

    def recording(pool, schedules, **kwargs):
        pools.append(list(pool))
        return time_candidates(pool, schedules, **kwargs)

    monkeypatch.setattr(selection, "time_candidates", recording)
    return pools


@pytest.mark.parametrize("k", [4, 2])
def test_the_ilp_gives_as_many_distinct_candidates_as_asked_computing_the_same(k, schedules, timed_pools,
                                                                               same_outputs):
    wl = models.diamond_conv()  # its e-graph holds more than 8 distinct graphs
    result = optimize(wl, rules.default(), select="measured", candidates=k, schedules=schedules, time_limit=30)
    labels = [c["label"] for c in result.report.candidates]
    assert len(labels) == k and labels[:2] == ["input", "result"]
    # the ILP's next cheapest under the run's cost model, before any greedy DAG extraction
    assert all(label.startswith("ILP #") and label.endswith(" under roofline") for label in labels[2:])
    (pool,) = timed_pools
    assert [label for label, _ in pool] == labels
    assert len({tvm_ffi.structural_hash(w.mod, map_free_vars=True) for _, w in pool}) == k
    for _, candidate in pool[1:]:
        same_outputs(wl, candidate)


def test_bad_selection_arguments_are_named():
    wl = models.resnet_bottleneck()
    with pytest.raises(ValueError, match="select 'fastest'"):
        optimize(wl, rules.default(), select="fastest")
    with pytest.raises(Exception, match="candidates"):
        optimize(wl, rules.default(), select="measured", candidates=0)
