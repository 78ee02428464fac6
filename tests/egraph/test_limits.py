"""Limits are promises, kept on explosive growth: the node limit is a memory budget, the time
limit bounds the whole optimize() call, and the scheduler never applies a backlog at once."""

import importlib
import time
import weakref

import pytest

from gsl_eq import optimize, rules
from gsl_eq.egraph import Runner, StopReason
from gsl_eq.egraph.calls import SECONDS_PER_MATCH, TRIAL_FLOOR, EngineCalls
from gsl_eq.models import ac_sum, polynomial
from gsl_eq.optimizer.verify import Reference
from tests.conftest import assert_same_outputs

EXPLOSIVE = {
    "16-term sum, algebraic rules": (lambda: ac_sum(16), rules.algebraic),
    "polynomial of 300 ops, ring rules": (lambda: polynomial(300), rules.ring),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(EXPLOSIVE))
def test_the_node_limit_holds_on_explosive_growth(case):
    build, group = EXPLOSIVE[case]
    wl = build()
    runner = Runner(wl.graph, group(), node_limit=20_000, iter_limit=1000, time_limit=120)
    report = runner.run()
    assert report.stop_reason is StopReason.NODE_LIMIT
    sizes = [it.enodes for it in report.iterations]
    assert max(sizes) <= 20_000
    assert sizes[-1] >= 0.5 * 20_000  # the limit, not something else, stopped the growth
    snap = runner.egraph.snapshot()
    assert snap.num_enodes == sizes[-1]  # the report counts what the e-graph holds


def test_a_rule_past_the_headroom_on_its_own_is_applied_in_part():
    wl = ac_sum(12)
    limit = 3_000
    runner = Runner(wl.graph, [rules.add_associative(), rules.add_commutative()], node_limit=limit,
                    match_limit=10**9, iter_limit=1000, time_limit=120)
    report = runner.run()
    assert report.stop_reason is StopReason.NODE_LIMIT
    last = report.iterations[-1]
    # the last iteration had more matches waiting than the headroom could take: it applied some of them
    assert last.applied and last.backlog
    assert sum(last.backlog.values()) > 0 and last.enodes <= limit


def test_every_rule_applies_at_most_its_limit_per_iteration_and_bans_stop_searching():
    wl = polynomial(200)
    seen = []
    runner = Runner(wl.graph, rules.ring(), node_limit=30_000, match_limit=200, ban_length=2, iter_limit=60,
                    time_limit=120)

    def check(it):
        limits = {r.name: runner.scheduler.limit(k) for k, r in enumerate(runner.rules)}
        seen.append((it, limits))

    runner.on_iteration = check
    runner.run()
    assert any(it.new_bans for it, _ in seen) and any(it.banned for it, _ in seen)
    assert any(it.backlog for it, _ in seen)
    for it, limits in seen:
        for name, applied in it.applied.items():
            # buckets hold about the budget's worth: within a quarter of it
            assert applied <= 1.25 * limits[name], (name, applied, limits[name])
        for name in it.banned:
            assert name not in it.matches and name not in it.applied  # banned: neither searched nor applied
        for name in it.new_bans:
            assert it.matches[name] > limits[name] // 2 and name not in it.applied  # counted, not applied
        assert it.searched == len(it.matches) <= len(runner.rules) - len(it.banned)


def test_multi_output_rules_have_their_own_smaller_limit():
    runner = Runner(ac_sum(4).graph, [rules.add_commutative(), rules.parallel_matmul()],
                    match_limit=1000, multi_match_limit=50)
    assert [runner.scheduler.limit(k) for k in range(2)] == [1000, 50]


def test_optimize_releases_the_egraph_before_it_returns_and_times_that(monkeypatch):
    """egglog frees an e-graph's tables when the last reference goes (half a second for TASO's rules at
    20k e-nodes): inside the call, in report.timings["release"], not in the caller's next statement."""
    import gsl_eq.egraph.runner as runner_module

    egraphs = []
    init = runner_module.Runner.__init__

    def keep_a_weak_reference(self, *args, **kwargs):
        init(self, *args, **kwargs)
        egraphs.append(weakref.ref(self.egraph))

    optimize_module = importlib.import_module("gsl_eq.optimizer.report")
    alive_at_the_end = []
    result_init = optimize_module.OptimizeResult.__init__

    def note_the_egraph(self, *args, **kwargs):
        alive_at_the_end.append(egraphs[0]() is not None)
        result_init(self, *args, **kwargs)

    monkeypatch.setattr(runner_module.Runner, "__init__", keep_a_weak_reference)
    monkeypatch.setattr(optimize_module.OptimizeResult, "__init__", note_the_egraph)
    result = optimize(ac_sum(6), rules.algebraic(), node_limit=5_000, time_limit=20)
    assert len(egraphs) == 1 and alive_at_the_end == [False]
    assert result.report.timings["release"] >= 0


@pytest.mark.timed
@pytest.mark.slow
def test_optimize_keeps_its_time_limit_on_explosive_growth():
    wl = polynomial(300)
    limit = 4.0
    # remembered, as a repeated call finds it: building it takes 0.8-2.5 s of the limit under the suite's
    # load, and what is asserted is the search's and extraction's share of what is left
    Reference.of(wl)
    start = time.perf_counter()
    result = optimize(wl, rules.ring(), node_limit=10**7, iter_limit=10**6, time_limit=limit)
    wall = time.perf_counter() - start
    report = result.report
    assert report.stop_reason == "time limit"
    after = report.timings.get("release", 0.0)  # the final build and the check are within
    assert wall - after <= 1.1 * limit
    assert {"fold", "compile", "load", "saturate", "extract", "attribute", "rebuild"} <= set(report.timings)
    assert report.extraction_budget >= 0.2 * limit * 0.9
    assert_same_outputs(wl, result.workload, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_optimize_under_the_node_limit_keeps_the_outputs():
    wl = ac_sum(16)
    result = optimize(wl, rules.algebraic(), extractor="greedy", node_limit=20_000, iter_limit=1000, time_limit=60)
    assert result.report.stop_reason == "node limit"
    assert result.report.enodes <= 20_000
    assert_same_outputs(wl, result.workload, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_the_node_limit_holds_where_a_bucket_holds_a_lump_of_matches():
    """TASO's merges on TENSAT's SqueezeNet, multi-pattern rules in every iteration: merges of
    merges share e-classes, so their matches fall into a few buckets. When the room left cuts a
    rule short, the rows of the buckets about to open are counted first (before, a lump passed
    the limit: 10,004 e-nodes at 10,000)."""
    from gsl_eq import models

    wl = models.tensat_model("squeezenet").fold_params()
    for limit in (10_000, 20_000):
        # Whether an iteration is fast depends on the clock (its copy against the applying measured
        # before), and so does the path to the limit: on a loaded machine a fast second iteration led
        # to one bucket too large for the room left at 17,397 e-nodes of 20,000. Controlled, the room
        # is used; either way, the limit holds.
        for fast in (False, True):
            runner = Runner(wl.graph, rules.tensat(), node_limit=limit, iter_limit=30, time_limit=120,
                            params=wl.params, fast=fast)
            report = runner.run()
            assert report.stop_reason is StopReason.NODE_LIMIT
            assert runner.egraph.size() == report.iterations[-1].enodes <= limit
            assert fast or 0.9 * limit <= runner.egraph.size()


@pytest.mark.slow
def test_the_node_limit_holds_where_a_rule_applied_about_its_budget_would_pass_it():
    """TASO's matmul merge on a 2-layer BERT encoder under tensat()+default(): late in the growth a
    few buckets hold most of its matches, and applied about its budget of 400 (6 e-nodes each) it
    applied 733 where the room held 409 (51,941 e-nodes at 50,000). Where its whole backlog could
    pass the room, a rule is applied never past its budget."""
    from gsl_eq import models
    from gsl_eq.rules.sets import rule_set

    wl = models.bert_encoder(layers=2, seq=24, dim=96, heads=3, ffn=192).fold_params()
    runner = Runner(wl.graph, rule_set("tensat+default"), node_limit=50_000, iter_limit=100, time_limit=120,
                    params=wl.params)
    report = runner.run()
    assert report.stop_reason is StopReason.NODE_LIMIT
    assert runner.egraph.size() == report.iterations[-1].enodes <= 50_000
    assert runner.egraph.size() >= 0.95 * 50_000


def test_a_multi_output_search_is_predicted_from_its_matches_growing_as_the_cube_of_the_egraph():
    runner = Runner(ac_sum(4).graph, [rules.add_commutative(), rules.parallel_matmul()])
    for k in range(2):
        runner._last_time[f"search_{k}"] = (0.01, 100)
        runner._last_matches[k] = (1000, 100)
    size = 100 * 10  # the e-graph grew tenfold since both searches
    assert runner._predicted(["search_0"], size) == pytest.approx(0.01 * 10)  # one output: by its time
    assert runner._predicted(["search_1"], size) == pytest.approx(SECONDS_PER_MATCH * 1000 * 10**3)
    runner._last_matches[1] = (1, 100)
    assert runner._predicted(["search_1"], size) == pytest.approx(0.01 * 10)  # few matches: by its time


@pytest.mark.timed
def test_a_search_predicted_past_the_deadline_is_left_out_and_the_run_stops_at_the_time_limit(monkeypatch):
    """TASO's matmul merge searched again when its ban lifted found 4,000 matches on 1,500 e-nodes
    and 28 million on 48,000, one egglog call of 57 s under a 12 s limit: the runner now leaves such
    a search out, and stops when nothing else is left to do. Predicted from matches on a far smaller
    e-graph, the search is first tried on a forked copy, stopped at its share of the time left (here
    it sleeps as such a search would run on)."""
    monkeypatch.setattr(EngineCalls, "_search_alone", lambda self, ruleset: time.sleep(60))
    runner = Runner(ac_sum(4).graph, [rules.parallel_matmul()], time_limit=5)
    runner._last_matches[0] = (10**6, 1)  # a million matches on a 1-node e-graph
    start = time.perf_counter()
    report = runner.run()
    assert time.perf_counter() - start < 0.25 * 5 + 1  # the trial's share of the time, and little more
    assert report.stop_reason is StopReason.TIME_LIMIT
    assert report.iterations[0].late == ["parallel_matmul"] and report.iterations[0].matches == {}


def test_a_search_predicted_from_a_far_smaller_egraph_is_tried_and_run_when_it_is_quick():
    """A variadic matmul merge's 3,528 matches on a NasRNN's 259 e-nodes predicted its search at
    5,400 s on 18,900, where it took 0.03 s: such a prediction is a bound, and the search, tried on a
    forked copy within its share of the time, runs here when the trial says it fits."""
    runner = Runner(ac_sum(4).graph, [rules.parallel_matmul()], time_limit=30)
    runner._last_matches[0] = (10**6, 1)  # as before: a million matches on a 1-node e-graph
    report = runner.run()
    assert report.iterations[0].late == [] and "parallel_matmul" in report.iterations[0].matches
    assert report.stop_reason is StopReason.SATURATED
    assert runner._last_matches[0][0] < 10**6 and runner._probed == {0: len(ac_sum(4).graph)}


@pytest.mark.timed
def test_a_stale_multi_output_search_predicted_quick_is_tried_first_and_left_out_when_the_trial_runs_on(monkeypatch):
    """A record from a far smaller e-graph can promise a quick search however explosive it is now (a
    variadic merge over sums regrouped by associativity: predicted at 13 s, 23 s for 10 million
    matches): such a search is tried on a forked copy first, and one that did not end there is left
    out for the rest of the run, whatever its prediction says."""
    monkeypatch.setattr(EngineCalls, "_search_alone", lambda self, ruleset: time.sleep(60))
    runner = Runner(ac_sum(4).graph, [rules.parallel_matmul()], time_limit=5)
    runner._last_matches[0] = (1, 1)  # one match on a 1-node e-graph, in 0.02 s: predicted far within the limit
    runner._last_time["search_0"] = (0.02, 1)
    assert TRIAL_FLOOR <= runner._predicted(["search_0"], len(ac_sum(4).graph)) < 1.0
    start = time.perf_counter()
    report = runner.run()
    assert time.perf_counter() - start < 0.25 * 5 + 1
    assert report.stop_reason is StopReason.TIME_LIMIT
    assert report.iterations[0].late == ["parallel_matmul"] and report.iterations[0].matches == {}
    assert runner._last_time["search_0"][0] == float("inf")
    assert report.iterations[0].search_time >= 0.25 * 5 * 0.9  # the trial is part of the search's time


@pytest.mark.timed
def test_multi_output_searches_that_found_nothing_are_tried_together_once_the_egraph_doubles(monkeypatch):
    """MNASNet from ONNX under default() + algebraic(): a variadic split rule's search found nothing on
    3,539 e-nodes in milliseconds, and on 8,237, one iteration later, ran for minutes under a 30 s
    limit (a record of no matches predicts nothing). Multi-output searches predicted quick are tried
    together on a forked copy once the e-graph has doubled since their record; one that does not end
    there, tried alone, is left out (here the trial sleeps as such a search runs on)."""
    from gsl_eq.egraph import calls

    monkeypatch.setattr(calls, "IN_PROCESS_ENODES", 0)
    monkeypatch.setattr(EngineCalls, "_search_alone", lambda self, rulesets: time.sleep(60))
    size = len(ac_sum(4).graph)
    runner = Runner(ac_sum(4).graph, [rules.parallel_matmul()], time_limit=8)
    runner._last_matches[0] = (0, size // 2)  # nothing found, on half the e-graph
    runner._last_time["search_0"] = (0.001, size // 2)
    assert runner._predicted(["search_0"], size) < calls.TRIAL_FLOOR
    start = time.perf_counter()
    report = runner.run()
    assert time.perf_counter() - start < 8
    assert report.stop_reason is StopReason.TIME_LIMIT
    assert report.iterations[0].late == ["parallel_matmul"] and report.iterations[0].matches == {}
    assert runner._last_time["search_0"][0] == float("inf")


def test_multi_output_searches_tried_together_run_here_when_the_trial_ends():
    """The grouped trial's seconds and matches become the searches' records, and they run here."""
    from gsl_eq.egraph import calls

    size = len(ac_sum(4).graph)
    runner = Runner(ac_sum(4).graph, [rules.parallel_matmul()], time_limit=30)
    runner._last_matches[0] = (0, size // 2)
    runner._last_time["search_0"] = (0.001, size // 2)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(calls, "IN_PROCESS_ENODES", 0)
        report = runner.run()
    assert report.iterations[0].late == [] and "parallel_matmul" in report.iterations[0].matches
    assert report.stop_reason is StopReason.SATURATED
    assert runner._probed[0] == size


@pytest.mark.timed
@pytest.mark.slow
def test_optimize_keeps_its_time_limit_where_a_lifted_ban_meets_regrouped_sums(same_outputs):
    """A user's PyTorch CNN adding five convs of one input, under tensat() + default() with default
    settings: TASO's associativity regroups the sum, so a variadic merge's operands multiply; banned
    early, its search came back at 16 times the e-graph it was last predicted from, and a 10 s limit
    ran 29 s (one egglog call of 24 s)."""
    torch = pytest.importorskip("torch")
    from gsl_eq import Workload
    from gsl_eq.rules.sets import rule_set

    class Net(torch.nn.Module):
        def __init__(self, c: int = 8, k: int = 5):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, c, 3, padding=1)
            self.branches = torch.nn.ModuleList(torch.nn.Conv2d(c, c, 3 - 2 * (i % 2), padding=1 - i % 2)
                                                for i in range(k))

        def forward(self, x):
            x = torch.relu(self.stem(x))
            out = self.branches[0](x)
            for branch in self.branches[1:]:
                out = out + branch(x)
            return torch.relu(out)

    torch.manual_seed(0)
    wl = Workload.from_torch(Net().eval(), (torch.randn(2, 3, 10, 10),))
    limit = 10.0
    start = time.perf_counter()
    result = optimize(wl, rule_set("tensat+default"), mode="saturate", cost="gpu", time_limit=limit)
    wall = time.perf_counter() - start
    report = result.report
    after = report.timings.get("release", 0.0)  # the final build and the check are within
    assert wall - after <= 1.1 * limit
    assert report.cost_after < report.cost_before
    same_outputs(wl, result.workload)


def test_dropping_the_rows_of_rejected_keys_is_predicted_by_the_rows_before_any_rate_is_measured():
    """A variadic source on MobileNet-V2 found 21 million matches in 37 s, nearly all of rejected keys;
    dropping their rows took 24 s more, past the deadline, as nothing predicted that call. A call
    consuming rows is now predicted at SECONDS_PER_ROW each until its own rate is measured."""
    from gsl_eq.egraph.calls import SECONDS_PER_ROW, Counts, OutOfTime

    runner = Runner(ac_sum(4).graph, [rules.add_commutative()])
    runner.deadline = time.perf_counter() + 1.0
    with pytest.raises(OutOfTime):
        runner._run(Counts(), ["reject"], rows=round(2.0 / SECONDS_PER_ROW))  # 2 s of rows, 1 s left
    runner._run(Counts(), ["reject"], rows=100)  # well within


def test_a_rule_ready_only_after_the_deadline_is_left_out_and_the_run_is_not_saturated():
    """A rule is given to egglog when the ops it matches appear (test_compile); one that becomes
    ready past the deadline is never searched, so the run cannot be called saturated."""
    from gsl_eq.egraph.egraph import head_name
    from gsl_eq.graph import Kind

    runner = Runner(ac_sum(4).graph, [rules.add_commutative(), rules.mul_commutative()])
    assert runner._asleep[1] and not runner.queries[1]
    runner.egraph.note_literal(head_name(Kind.CALL, "relax.multiply", 2), 0)  # as if a rule had made one
    report = runner.run(deadline=time.perf_counter() - 1.0)
    assert report.stop_reason is StopReason.TIME_LIMIT and report.uncompiled == ["mul_commutative"]
    assert not runner.queries[1]


@pytest.mark.timed
def test_rules_not_compiled_by_the_deadline_are_never_searched():
    """Compiling TASO's 620 rules took 2.8 s under a 2 s limit: compiling now stops at the deadline."""
    deadline = time.perf_counter() + 0.2
    slow = [rules.add_commutative(), rules.mul_commutative()]
    runner = Runner(ac_sum(4).graph, slow, deadline=deadline - 1.0)  # already past: nothing is compiled
    assert runner.report.uncompiled == [r.name for r in slow] and runner.queries == [[], []]
    report = runner.run(deadline=deadline)
    assert report.stop_reason is StopReason.TIME_LIMIT and not report.applied()
    compiled = Runner(ac_sum(4).graph, slow, deadline=time.perf_counter() + 60)
    # the multiply rule's query waits for a multiply (test_compile: woken when one appears)
    assert compiled.report.uncompiled == [] and compiled.queries[0] and compiled._asleep[1]
