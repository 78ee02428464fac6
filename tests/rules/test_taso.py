"""TASO's equations as GSL rules: what is translated and left out, and every rule numerically sound."""

from __future__ import annotations

import pytest

from gsl_eq import rules
from gsl_eq.rules import taso_equations as taso
from gsl_eq.soundness import Verdict, check_rule

FILES = ("single_rules.txt", "multi_rules.txt", "converted.txt", "converted_multi.txt", *taso.HAND_WRITTEN)


@pytest.fixture(scope="module")
def translations():
    return {file: taso.translation(file) for file in FILES}


@pytest.mark.slow
def test_counts_are_the_documented_ones(translations):
    counts = {f: (t.parsed, len(t.rules), {why: len(names) for why, names in t.left_out.items()})
              for f, t in translations.items()}
    assert counts["single_rules.txt"] == (659, 673, {"a constant on the left side": 31, "both sides are the same term": 21})
    assert len({r.name.removesuffix(taso.ENLARGED) for r in translations["single_rules.txt"].rules}) == 607
    assert counts["multi_rules.txt"] == (13, 11, {"both sides are the same term": 2})
    assert sum(not r.connected for r in translations["multi_rules.txt"].rules) == 4
    assert counts["converted.txt"] == (120, 118, {"both sides are the same term": 2})
    assert counts["converted_multi.txt"] == counts["multi_rules.txt"]
    hand = {f: taso.translation(f) for f in taso.HAND_WRITTEN}
    assert [r.name for r in hand["predefined_multi.txt"].rules] == [
        "taso:predefined_multi.txt#0", "taso:predefined_multi.txt#0/enlarged",
        "taso:predefined_multi.txt#2", "taso:predefined_multi.txt#2/enlarged"]
    assert hand["predefined.txt"].left_out == {}
    assert [r.name for r in hand["predefined.txt"].rules] == [f"taso:predefined.txt#{k}" for k in range(4)]
    assert {r.name for f in taso.HAND_WRITTEN for r in hand[f].rules} <= {r.name for r in rules.tensat()} & {
        r.name for r in rules.taso()}
    assert len(rules.taso()) >= 600 and len(rules.tensat()) >= 125
    assert all(r.name.startswith("taso:") for r in rules.taso() + rules.tensat())


def test_parsers_read_both_notations_alike():
    assert taso.normalize(taso.parse_taso("matmul(input_1,input_4)==transpose(input_1)0")[0][0]) == \
        taso.normalize(taso.parse_tensat("(matmul 0 ?input_1 ?input_4)=>(transpose ?input_1)")[0][0])
    # a fused activation is its own op: TASO's conv with relu is relu(conv)
    assert taso.normalize(taso.parse_tensat("(conv2d 1 1 0 2 ?x ?w)=>?x")[0][0]) == \
        ("relu", ("conv2d", 1, 1, 0, 0, "x", "w"))


def _distinct(translations) -> list[tuple[str, object]]:
    """One rule per distinct equation (two where it enlarges a kernel) over the four files (TASO's
    list repeats some)."""
    seen, out = set(), []
    for t in translations.values():
        for rule in t.rules:
            key = t.key(rule)
            if key not in seen:
                seen.add(key)
                out.append((rule.name, rule))
    return out


#: One distinct equation in this many is checked here, every one by ``benchmarks/soundness.py --taso``
#: (BENCHMARKS.md, soundness-taso): the whole sweep takes minutes.
SAMPLE_STRIDE = 15


@pytest.mark.slow
def test_a_sample_of_the_rules_is_sound(translations):
    """Every fifteenth distinct rule and every multi-pattern one, on one drawn instance each."""
    problems = []
    rules_ = _distinct(translations)
    sample = [(name, rule) for k, (name, rule) in enumerate(rules_) if k % SAMPLE_STRIDE == 0 or not rule.connected
              or len(rule.source.outputs) > 1]
    assert len(sample) >= len(rules_) // SAMPLE_STRIDE
    for name, rule in sample:
        result = check_rule(rule, trials=1, seed=0, tries=100)  # some need two images of one shape: 1 draw in 10-40
        if result.verdict is not Verdict.SOUND or result.untyped:
            problems.append(f"{name}: {result.summary()}")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_pointwise_equations_hold_where_relax_broadcasts(same_outputs):
    """Two biased convs summed: TASO's add reassociations gather the two (1, C, 1, 1) biases, which
    fold into one; they can because an equation of element-wise ops alone may broadcast."""
    from tvm import relax

    from gsl_eq import Workload, optimize

    R = relax.op
    x = relax.Var("x", relax.TensorType((1, 4, 8, 8), "float32"))
    w1, w2 = (relax.Var(n, relax.TensorType((4, 4, k, k), "float32")) for n, k in (("w1", 3), ("w2", 1)))
    b1, b2 = (relax.Var(n, relax.TensorType((1, 4, 1, 1), "float32")) for n in ("b1", "b2"))
    same = dict(padding=(1, 1, 1, 1))
    y = R.add(R.add(R.nn.conv2d(x, w1, **same), b1), R.add(R.nn.conv2d(x, w2), b2))
    wl = Workload.from_expr(y, {"x"})
    equations = taso.translation("converted.txt").equations
    pointwise = {name for name, (lhs, rhs) in equations.items() if taso.pointwise(*lhs, *rhs)}
    result = optimize(wl, rules.tensat(), mode="saturate", node_limit=5_000, iter_limit=6)
    assert result.workload.graph.op_counts()["relax.add"] < wl.graph.op_counts()["relax.add"]
    assert result.report.rules_used and set(result.report.rules_used) <= pointwise
    same_outputs(wl, result.workload)


@pytest.mark.slow
def test_kernels_of_one_class_merge_at_different_shapes_unless_the_merge_is_grouped(translations, same_outputs):
    """TASO's engine merges two 1x1 convs of one input with 64 and 256 outputs (ResNeXt's first
    block); concat(conv(a, w1), conv(b, w2)) -> one grouped conv keeps TASO's one shape per class,
    without which the groups misalign (the checker finds it unsound)."""
    from tvm import relax

    from gsl_eq import Workload, optimize

    grouped = next(r for r in translations["converted.txt"].rules if r.name == "taso:converted.txt#91")
    assert taso._grouped_merge(translations["converted.txt"].equations[grouped.name][1])
    result = check_rule(grouped, trials=3, seed=0, tries=40)
    assert result.verdict is Verdict.SOUND and result.instances >= 3, result.summary()

    R = relax.op
    x = relax.Var("x", relax.TensorType((1, 16, 8, 8), "float32"))
    w1, w2 = (relax.Var(n, relax.TensorType((c, 16, 1, 1), "float32")) for n, c in (("w1", 8), ("w2", 32)))
    wl = Workload.from_expr(relax.Tuple([R.nn.relu(R.nn.conv2d(x, w1)), R.nn.relu(R.nn.conv2d(x, w2))]), {"x"})
    result = optimize(wl, rules.tensat(), mode="saturate", cost="gpu", node_limit=5_000, iter_limit=6,
                      multi_iterations=1)
    assert result.workload.graph.op_counts()["relax.nn.conv2d"] == 1
    same_outputs(wl, result.workload)


@pytest.mark.slow
def test_the_enlarge_merge_is_sound_and_needs_ungrouped_kernels():
    """TASO's hand-written merge of two convs of one input, the smaller kernel enlarged: sound on
    instances that enlarge (1x1 to 3x3 and more) and on kernels of one size, each its own rule;
    read on grouped kernels, the concatenated kernel's groups would mix the two convs' channels,
    so both must be ungrouped."""
    merge = taso.translation("predefined_multi.txt").rules
    assert taso._merged_kernels(taso.translation("predefined_multi.txt").equations[merge[0].name][1]) == {
        "input_2", "input_3"}
    for rule in merge:
        result = check_rule(rule, trials=6, seed=0)
        assert result.verdict is Verdict.SOUND and result.instances >= 6, result.summary()
        enlarged = rule.name.endswith(taso.ENLARGED)
        assert all((k2[2:] != k3[2:]) == enlarged for _, k2, k3 in result.checked), result.checked


@pytest.mark.slow
def test_an_enlarge_to_the_kernels_own_size_is_the_kernel(same_outputs):
    """Three 1x1 convs of one input merge into convs of their concatenated kernels with no pad:
    the same-size rule fires, the enlarging one matches nothing. One rule for both cases, padding
    a kernel to its own size, puts a padded copy beside each kernel and every merge on it twice:
    more e-nodes for the same cost."""
    from tvm import relax

    from gsl_eq import Workload, optimize

    R = relax.op
    x = relax.Var("x", relax.TensorType((1, 8, 6, 6), "float32"))
    kernels = [relax.Var(f"w{k}", relax.TensorType((4, 8, 1, 1), "float32")) for k in range(3)]
    wl = Workload.from_expr(relax.Tuple([R.nn.relu(R.nn.conv2d(x, w)) for w in kernels]), {"x"})
    settings = dict(mode="saturate", cost="gpu", iter_limit=4, multi_iterations=2)
    result = optimize(wl, rules.tensat(), **settings)
    applied = result.report.applications
    assert applied.get("taso:predefined_multi.txt#2", 0) > 0 and "taso:predefined_multi.txt#2/enlarged" not in applied
    assert result.workload.graph.op_counts()["relax.nn.conv2d"] == 1
    same_outputs(wl, result.workload)
    either = [r for r in rules.tensat() if "predefined_multi" not in r.name]
    for k in (0, 2):
        lhs, rhs = taso.translation("predefined_multi.txt").equations[f"taso:predefined_multi.txt#{k}"]
        either.append(taso.translate(list(lhs), list(rhs), f"either #{k}", symmetric=True, enlarging=None))
    padded = optimize(wl, either, **settings).report
    assert padded.enodes > result.report.enodes and padded.cost_after == result.report.cost_after


@pytest.mark.slow
def test_the_enlarge_merge_fuses_a_fire_module(same_outputs):
    """SqueezeNet's fire module: a 1x1 and a 3x3 expand conv of one input, concatenated; enlarged
    and merged, one conv writes the concat (with the default rules' concat-of-split identity): two
    fewer kernels under the gpu model, same outputs."""
    from tvm import relax

    from gsl_eq import Workload, optimize
    from gsl_eq.cost import GPU, graph_cost

    R = relax.op
    x = relax.Var("x", relax.TensorType((1, 16, 28, 28), "float32"))
    w1, w3 = (relax.Var(n, relax.TensorType((32, 16, k, k), "float32")) for n, k in (("w1", 1), ("w3", 3)))
    y = R.concat([R.nn.relu(R.nn.conv2d(x, w1)), R.nn.relu(R.nn.conv2d(x, w3, padding=(1, 1, 1, 1)))], axis=1)
    wl = Workload.from_expr(y, {"x"})
    result = optimize(wl, rules.tensat() + rules.default(), mode="saturate", cost="gpu", node_limit=5_000,
                      iter_limit=8, multi_iterations=1)
    counts = result.workload.graph.op_counts()
    assert counts["relax.nn.conv2d"] == 1 and "relax.concat" not in counts, counts
    assert "taso:predefined_multi.txt#2/enlarged" in result.report.rules_used
    assert graph_cost(result.workload.graph, GPU()) < graph_cost(wl.fold_params().graph, GPU())
    same_outputs(wl, result.workload)


@pytest.mark.slow
def test_a_grouped_convs_groups_merge_into_a_block_diagonal_kernel(same_outputs):
    """TASO's merge_gconv (``predefined.txt``): a conv of G groups equals one of G / 2 groups whose
    kernel holds each pair of the old groups' kernels block-diagonally. Sound at several group counts
    (a mask off the diagonal is found unsound); greedy mode merges a conv of 8 groups down to one
    dense conv with equal outputs, its kernel folded (no runtime op but the conv); under the gpu model
    the merged conv does twice the FLOPs for the same outputs, so saturate mode keeps the groups."""
    from tvm import relax

    from gsl_eq import Workload, optimize
    from gsl_eq.cost import GPU, graph_cost
    from gsl_eq.greedy.rewriter import greedy

    merges = taso.translation("predefined.txt").rules
    groups = set()
    for rule in merges:
        result = check_rule(rule, trials=4, seed=0, tries=200)
        assert result.verdict is Verdict.SOUND and result.instances >= 4, result.summary()
        groups |= {data[1] // kernel[1] for data, kernel in result.checked}
    assert all(g % 2 == 0 for g in groups) and len(groups) >= 2, groups

    eye = taso.op.Eye
    try:  # each new group reading the other old group's channels: caught
        taso.op.Eye = lambda n, m, dtype: eye(n=n, m=m, k=1, dtype=dtype)
        wrong = taso.translation("predefined.txt").rules[0]
        assert check_rule(wrong, trials=3, seed=0, tries=200).verdict is Verdict.UNSOUND
    finally:
        taso.op.Eye = eye

    R = relax.op
    x = relax.Var("x", relax.TensorType((1, 32, 10, 10), "float32"))
    w = relax.Var("w", relax.TensorType((64, 4, 3, 3), "float32"))
    wl = Workload.from_expr(R.nn.relu(R.nn.conv2d(x, w, padding=(1, 1, 1, 1), groups=8)), {"x"})
    dense = greedy(wl, merges).workload.fold_params()
    convs = [n for n in dense.graph if n.op == "relax.nn.conv2d"]
    assert [c.attrs["groups"] for c in convs] == [1] and convs[0].inputs[1].type.shape == (64, 32, 3, 3)
    assert dense.graph.op_counts() == {"relax.nn.conv2d": 1, "relax.nn.relu": 1}
    same_outputs(wl, dense)
    assert graph_cost(dense.graph, GPU()) > graph_cost(wl.fold_params().graph, GPU())
    kept = optimize(wl, rules.tensat(), mode="saturate", cost="gpu", node_limit=5_000, iter_limit=6)
    assert kept.report.applications.get("taso:predefined.txt#1", 0) >= 3  # 8 -> 4 -> 2 -> 1 groups
    assert kept.report.input_returned
