"""Fast iterations: while the limits are far, every new match of a decided key is applied at once
(no worklist); an iteration past a limit is undone and run controlled, and so is every later one."""

import math

import pytest

from gsl_eq import optimize, rules
from gsl_eq.egraph import Runner, StopReason
from gsl_eq.models import ac_sum, polynomial
from tests.conftest import assert_same_outputs

FAR = dict(node_limit=10**9, time_limit=10**6, match_limit=10**9, multi_match_limit=10**9)


def test_fast_iterations_grow_the_e_graph_as_controlled_ones_do():
    graph = polynomial(60).graph
    fast = Runner(graph, rules.ring(), iter_limit=4, push_worth=math.inf, **FAR).run()
    controlled = Runner(graph, rules.ring(), iter_limit=4, fast=False, **FAR).run()
    assert [it.fast for it in fast.iterations] == [True] * 4
    assert not any(it.fast for it in controlled.iterations)
    assert [it.enodes for it in fast.iterations] == [it.enodes for it in controlled.iterations]
    for it in fast.iterations:  # every match found is applied
        assert it.applied == {name: m for name, m in it.matches.items() if m}


def test_an_iteration_past_a_rule_limit_is_undone_and_run_controlled():
    graph = ac_sum(10).graph
    # push_worth=inf: only the rule limit ends fast iterations, not the clock (a copy that looks
    # dear against its iteration on a loaded machine)
    runner = Runner(graph, [rules.add_commutative(), rules.add_associative()], node_limit=10**9, iter_limit=6,
                    time_limit=120, match_limit=300, push_worth=math.inf)
    report = runner.run()
    kinds = [it.fast for it in report.iterations]
    first = kinds.index(False)
    assert first > 0 and not any(kinds[first:])  # fast until refused, then controlled for good
    assert not runner.fast
    refused = report.iterations[first]
    # the undone fast iteration left no trace: the controlled one counted only new matches and banned
    # the rule past its limit instead of applying all of them
    assert refused.new_bans and all(refused.applied.get(name, 0) <= 300 for name in refused.new_bans)
    assert max(it.enodes for it in report.iterations[:first]) < refused.enodes
    assert runner.egraph.size() == report.iterations[-1].enodes


def test_the_node_limit_holds_when_a_fast_iteration_would_pass_it():
    wl = ac_sum(16)
    runner = Runner(wl.graph, [rules.add_commutative(), rules.add_associative()], node_limit=5_000,
                    iter_limit=100, time_limit=120, match_limit=10**9)
    report = runner.run()
    assert report.stop_reason is StopReason.NODE_LIMIT
    assert report.iterations[0].fast and not report.iterations[-1].fast
    assert 0.9 * 5_000 <= report.iterations[-1].enodes <= 5_000
    assert runner._pushed <= 5_000  # the copies pushed on egglog's stack fit the node budget


def test_keys_are_not_recorded_once_every_key_a_match_could_have_is_decided():
    graph = ac_sum(12).graph
    # push_worth=inf: whether a copy costs more than applying is a matter of the clock, not of keys
    runner = Runner(graph, [rules.add_commutative(), rules.add_associative()], iter_limit=4, push_worth=math.inf,
                    **FAR)
    recorded = []
    run = runner._run

    def spy(counts, rulesets, rows=0):
        recorded.append([r for r in rulesets if r.startswith("key_")])
        return run(counts, rulesets, rows)

    runner._run = spy
    report = runner.run()
    assert all(it.fast for it in report.iterations)
    # one add form: after the first iteration decided it, every later key is known
    assert recorded[0] == ["key_0", "key_1"] and not any(recorded[1:])
    assert all(q.covered(runner.egraph) for qs in runner.queries for q in qs)


def test_optimize_through_fast_iterations_keeps_the_outputs():
    wl = polynomial(60)
    result = optimize(wl, rules.ring(), node_limit=5_000, iter_limit=3, time_limit=60, extractor="greedy")
    assert result.report.iterations[0]["fast"]
    assert_same_outputs(wl, result.workload, rtol=1e-4, atol=1e-5)


def test_fast_iterations_end_when_the_copy_costs_more_than_applying():
    graph = polynomial(60).graph
    switched = Runner(graph, rules.ring(), iter_limit=4, push_worth=0.0, **FAR).run()  # any copy costs too much
    controlled = Runner(graph, rules.ring(), iter_limit=4, fast=False, **FAR).run()
    assert [it.fast for it in switched.iterations] == [True, False, False, False]
    # the first controlled search drops the rows the fast iteration applied: the same growth
    assert [it.enodes for it in switched.iterations] == [it.enodes for it in controlled.iterations]


def test_after_a_dear_copy_one_iteration_is_controlled_then_the_copy_is_predicted(monkeypatch):
    """push_worth=0: every measured copy costs too much, so each fast iteration is followed by a
    controlled one; with copies predicted free, the iteration after a controlled one is fast again."""
    from gsl_eq.egraph import fast

    monkeypatch.setattr(fast, "PUSH_SECONDS_PER_TABLE", 0.0)
    graph = polynomial(60).graph
    alternating = Runner(graph, rules.ring(), iter_limit=5, push_worth=0.0, **FAR).run()
    controlled = Runner(graph, rules.ring(), iter_limit=5, fast=False, **FAR).run()
    assert [it.fast for it in alternating.iterations] == [True, False, True, False, True]
    assert [it.enodes for it in alternating.iterations] == [it.enodes for it in controlled.iterations]


def test_only_key_relations_that_grew_are_read():
    graph = ac_sum(8).graph
    runner = Runner(graph, [rules.add_commutative(), rules.add_associative(), rules.mul_commutative()],
                    iter_limit=6, **FAR)
    read = []
    keys = runner._keys

    def spy(*relations):
        read.append([name for name, _ in relations])
        return keys(*relations)

    runner._keys = spy
    report = runner.run()
    assert len(report.iterations) >= 2
    mul = [q.name for q in runner.queries[2]]
    assert not any(f"Key_{name}" in names for names in read for name in mul)  # no multiply: never grew
    # one add form: after the first iteration read it, no key relation grows, none is read
    assert read[0] and not any(read[1:])
    assert runner.egraph.size() == Runner(graph, [rules.add_commutative(), rules.add_associative()],
                                          iter_limit=6, **FAR).run().iterations[-1].enodes


@pytest.mark.slow
def test_where_bans_bind_the_e_graph_grown_does_not_depend_on_which_iterations_were_fast():
    """TENSAT's BERT under tensat()+default() with TENSAT's settings: rules pass their limits and are
    banned. Whether an iteration is fast follows the clock; what is banned, and so the e-graph grown,
    must not: a semi-naive search finds again matches an earlier iteration applied, as many as that
    iteration's kind makes it, and only the others count."""
    from gsl_eq import models

    wl = models.tensat_model("bert").fold_params()
    settings = dict(node_limit=50_000, iter_limit=15, time_limit=180, params=wl.params, multi_iterations=1)
    runs = [Runner(wl.graph, rules.tensat() + rules.default(), **kind, **settings).run()
            for kind in (dict(fast=False), dict(push_worth=math.inf), {})]  # the last: as the clock says
    assert not any(it.fast for it in runs[0].iterations) and any(it.fast for it in runs[1].iterations)
    grown = [[(it.enodes, it.new_bans, it.banned) for it in run.iterations] for run in runs]
    assert grown[0] == grown[1] == grown[2]
    assert any(it.new_bans for it in runs[0].iterations)  # the bans bind
    assert len({run.stop_reason for run in runs}) == 1
