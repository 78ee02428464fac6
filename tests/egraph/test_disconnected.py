"""Rules whose source outputs share no node: saturate mode pairs their matches, within a budget;
greedy mode refuses them with a clear error."""

import pytest
from tvm import relax

from gsl_eq import Subst, Workload, explain, op, optimize, pat
from gsl_eq.egraph import Runner
from gsl_eq.frontend import DisconnectedSourceError
from gsl_eq.soundness import Verdict, check_rule

R = relax.op


def relu_pair(swap: bool = False) -> Subst:
    """TASO's ``[relu(a), relu(b)] -> split(relu(concat(a, b)))`` on axis 1 of 2-d tensors;
    ``swap`` plants a bug: the two halves handed to the wrong outputs."""
    a, b = pat.Wildcard(), pat.Wildcard()
    halves = op.Split(op.ReLU(op.Concatenate((a, b), axis=1)), indices_or_sections=(a.shape[1],), axis=1)
    tgt = [halves[1], halves[0]] if swap else [halves[0], halves[1]]
    return Subst([op.ReLU(a), op.ReLU(b)], tgt, name="relu_pair" + ("_swapped" * swap),
                 where=[a.ndim == 2, b.ndim == 2, a.shape[0] == b.shape[0]])


def relus(widths, rows: int = 4) -> Workload:
    xs = [relax.Var(f"x{i}", relax.TensorType((rows, w), "float32")) for i, w in enumerate(widths)]
    return Workload.from_expr(relax.Tuple([R.nn.relu(x) for x in xs]), {f"x{i}" for i in range(len(widths))})


def same_class(runner, a, b) -> bool:
    snap = runner.egraph.snapshot()
    return snap.handles[runner.handles[a]] == snap.handles[runner.handles[b]]


def test_every_pair_of_matches_is_formed_and_applied():
    wl = relus([3, 4, 5])
    runner = Runner(wl.graph, [relu_pair()], iter_limit=1)
    report = runner.run()
    first = report.iterations[0]
    # 3 x 3 combinations of the parts' keys decided, each once; the 6 ordered pairs of distinct relus applied
    assert first.new_keys == {"relu_pair": 9} and first.accepted_keys == {"relu_pair": 9}
    assert first.matches == {"relu_pair": 6} and first.applied == {"relu_pair": 6}
    snap = runner.egraph.snapshot()
    assert len(wl.graph.outputs) == 3
    for out in wl.graph.outputs:
        ops = {n.op for n in snap.classes[snap.handles[runner.handles[out]]]}
        assert ops == {"relax.nn.relu", None}  # the relu, and the projections of two splits


def test_a_rejected_combination_forms_no_pair():
    wide = relax.Var("z", relax.TensorType((5, 2), "float32"))  # another row count: concat on axis 1 fails
    wl = Workload.from_expr(relax.Tuple([*(R.nn.relu(relax.Var(f"x{i}", relax.TensorType((4, w), "float32")))
                                          for i, w in enumerate((3, 4))), R.nn.relu(wide)]), {"x0", "x1", "z"})
    report = Runner(wl.graph, [relu_pair()], iter_limit=1).run()
    first = report.iterations[0]
    assert first.matches == {"relu_pair": 2}  # x0 with x1, both ways
    assert first.rejected["relu_pair"] == {"source guard false": 4}  # z with x0 or x1, both ways


class ReluHeavy:
    """A cost model under which one relu over a concat beats two relus."""

    name = "relu-heavy"

    def __call__(self, op, attrs, inputs, output) -> float:
        return 100.0 if op == "relax.nn.relu" else 1.0


def test_saturate_mode_extracts_a_merged_relu_that_computes_the_same(same_outputs):
    wl = relus([3, 4])
    result = optimize(wl, [relu_pair()], mode="saturate", cost=ReluHeavy(), node_limit=1_000, iter_limit=3)
    assert result.workload.graph.op_counts()["relax.nn.relu"] == 1
    assert result.report.rules_used == ["relu_pair"]
    same_outputs(wl, result.workload)


def test_pairs_per_iteration_stay_near_the_budget_on_many_matches():
    """40 relus of one shape: 1,560 ordered pairs at once, formed over several iterations."""
    wl = relus([8] * 40)
    limit = 50
    runner = Runner(wl.graph, [relu_pair()], node_limit=20_000, iter_limit=5, multi_match_limit=limit,
                    pair_iterations=5)
    report = runner.run()
    pairs = [it.matches.get("relu_pair", 0) for it in report.iterations]
    # the budget, passed by the last round's rows times their 39 partners (a round holds a row or
    # a few); never all 1,560 at once
    assert all(p <= limit + 3 * 39 for p in pairs) and pairs[0] >= limit
    assert sum(pairs) > 4 * limit  # the rest keeps coming, iteration after iteration
    # a backlog past the budget is applied in part, by buckets: about the budget
    assert all(it.applied.get("relu_pair", 0) <= 1.25 * limit for it in report.iterations)
    assert not any(it.new_bans for it in report.iterations)


def test_pairs_form_only_in_the_first_pair_iterations():
    wl = relus([8] * 40)
    report = Runner(wl.graph, [relu_pair()], iter_limit=4, multi_match_limit=50).run()
    assert report.iterations[0].matches["relu_pair"] >= 50
    assert all(not it.matches.get("relu_pair") for it in report.iterations[1:])


def test_a_part_that_reads_the_other_is_not_paired():
    """relu(x) feeds the second relu: merging them would make a cycle (the merged relu reads itself)."""
    x, y = (relax.Var(n, relax.TensorType((4, 3), "float32")) for n in "xy")
    first = R.nn.relu(x)
    wl = Workload.from_expr(relax.Tuple([R.nn.relu(R.add(first, y)), R.nn.relu(y)]), {"x", "y"})
    report = Runner(wl.graph, [relu_pair()], iter_limit=2, pair_iterations=2).run()
    # relu(x) with relu(y) and relu(x + y) with relu(y), both ways; never relu(x) with relu(x + y)
    assert sum(it.matches.get("relu_pair", 0) for it in report.iterations) == 4


def test_greedy_mode_and_explain_refuse_a_disconnected_rule():
    wl = relus([3, 4])
    with pytest.raises(DisconnectedSourceError, match="relu_pair: source output 1 .* greedy mode"):
        optimize(wl, [relu_pair()], mode="greedy")
    with pytest.raises(DisconnectedSourceError, match="saturate mode can"):
        explain(relu_pair(), wl)


def test_the_checker_pairs_the_outputs_of_a_disconnected_rule():
    assert check_rule(relu_pair(), trials=3, seed=0).verdict is Verdict.SOUND
    planted = check_rule(relu_pair(swap=True), trials=3, seed=0)
    assert planted.verdict is Verdict.UNSOUND and planted.counterexample is not None


def test_greedy_mode_leaves_out_the_disconnected_rules_of_a_set_and_says_which(same_outputs):
    """rules.tensat() + rules.default() in greedy mode, as the command line runs it: the four rules
    whose outputs share no node are left out and named; the others rewrite the graph."""
    from gsl_eq import models, rules

    wl = models.inception_block(ch=8, size=6)
    result = optimize(wl, rules.tensat() + rules.default(), mode="greedy", cost="gpu")
    disconnected = [r.name for r in rules.tensat() if not r.connected]
    assert len(disconnected) == 4
    note = next(n for n in result.report.notes if n.startswith("greedy mode leaves out 4 of the"))
    assert all(name in note for name in disconnected)
    assert result.report.applications and not set(disconnected) & set(result.report.applications)
    same_outputs(wl, result.workload)


@pytest.mark.slow
def test_rules_paired_together_grow_the_e_graph_that_pairing_rule_by_rule_grows(monkeypatch):
    """The paired rules move their pending rows and form their pairs in one egglog call each, and
    those whose budget admits every pending row are made active together; the e-graph, iteration
    by iteration, is the one pairing rule by rule, by rounds of buckets, grows."""
    from gsl_eq import models, rules
    from gsl_eq.egraph.pairing import Pairing

    def saturate(one_by_one: bool, wl: Workload, rule_list: list, **limits):
        calls = []
        original = Runner._run

        def counted(self, counts, rulesets, rows=0):
            if rulesets[0].split("_")[0] in ("pend", "activate", "pair"):
                calls.append(rulesets)
            return original(self, counts, rulesets, rows)

        with monkeypatch.context() as patch:
            patch.setattr(Runner, "_run", counted)
            if one_by_one:  # as before pairing together: each rule alone, by rounds of buckets
                pair_all = Pairing._pair_all
                patch.setattr(Pairing, "_admits_all", lambda self, k, sizes: False)
                patch.setattr(Pairing, "_pair_all", lambda self, paired, counts: {
                    k: pair_all(self, [k], counts)[k] for k in paired})
            # fast=False: whether an iteration is fast follows the times measured, which differ between runs
            report = Runner(wl.graph, rule_list, params=wl.params, fast=False, **limits).run()
        return [(it.enodes, it.matches, it.applied) for it in report.iterations], calls

    # TENSAT's SqueezeNet: budgets bind (its pairs go by rounds either way)
    squeezenet = models.tensat_model("squeezenet")
    together, together_calls = saturate(False, squeezenet, rules.tensat(), iter_limit=4, multi_iterations=1)
    one_by_one, one_by_one_calls = saturate(True, squeezenet, rules.tensat(), iter_limit=4, multi_iterations=1)
    assert together == one_by_one
    assert any(applied for _, _, applied in together)  # merges were paired and applied
    steps = lambda calls: [c for c in calls if c[0].split("_")[0] in ("pend", "pair")]  # noqa: E731
    assert len(steps(together_calls)) == 2 < len(steps(one_by_one_calls))  # one pairing iteration
    # a budget that admits every pending row: both parts made active in one call
    small = relus([3, 4, 5, 6])
    together, together_calls = saturate(False, small, [relu_pair()], iter_limit=3, multi_match_limit=1000)
    one_by_one, one_by_one_calls = saturate(True, small, [relu_pair()], iter_limit=3, multi_match_limit=1000)
    assert together == one_by_one and together[0][1] == {"relu_pair": 12}
    activations = lambda calls: [c for c in calls if c[0].startswith("activate")]  # noqa: E731
    assert len(activations(together_calls)) == 1 < len(activations(one_by_one_calls))
