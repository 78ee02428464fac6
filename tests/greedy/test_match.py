"""The greedy executor: single, multi-output and variadic matching, rewriting, and the drivers."""

import numpy as np
import pytest
from tvm import relax

from gsl_eq import Subst, Workload, op, pat, rules
from gsl_eq.graph import Graph, Kind, Node, TensorType
from gsl_eq.greedy import Matcher, greedy, rewrite
from gsl_eq.run.limits import StopReason
from gsl_eq.models import diamond_conv
from tests.conftest import assert_same_outputs

R = relax.op
T = TensorType((4, 8), "float32")


def tvar(name, *shape):
    return relax.Var(name, relax.TensorType(shape, "float32"))


def test_seed_002_diamond_example():
    wl = diamond_conv()
    new = rules.diamond_conv_add()(wl)
    assert [p.name for p in new.mod["main"].params] == ["x", "v_param_1"]
    assert new.graph.op_counts() == {"relax.nn.conv2d": 1}
    assert relax.analysis.check_well_formed(new.mod)
    assert_same_outputs(wl, new)
    unfolded = rules.diamond_conv_add()(wl, fold_params=False)
    assert unfolded.graph.op_counts() == {"relax.nn.conv2d": 1, "relax.add": 1}
    assert list(unfolded.params) == ["w1", "w2"]
    assert_same_outputs(wl, unfolded)
    assert wl.graph.op_counts() == {"relax.nn.conv2d": 2, "relax.add": 1}  # the input is untouched


def test_attribute_constraint_forbids_a_match():
    x, w1, w2 = tvar("x", 1, 2, 8, 8), tvar("w1", 4, 2, 1, 1), tvar("w2", 4, 2, 1, 1)
    y = R.add(R.nn.conv2d(x, w1), R.nn.conv2d(x, w2, strides=1, padding=0, dilation=2))
    wl = Workload.from_expr(y, {"x"})
    new, count = rewrite(wl, rules.diamond_conv_add())
    assert count == 0 and new.graph.op_counts() == wl.graph.op_counts()


def test_a_shared_inner_node_forbids_a_match():
    """Condition 4 of f: conv1 is also returned, so it cannot be removed."""
    x, w1, w2 = tvar("x", 1, 2, 4, 4), tvar("w1", 4, 2, 1, 1), tvar("w2", 4, 2, 1, 1)
    c1 = R.nn.conv2d(x, w1)
    wl = Workload.from_expr(relax.Tuple([R.add(c1, R.nn.conv2d(x, w2)), R.nn.relu(c1)]), {"x"})
    assert rewrite(wl, rules.diamond_conv_add())[1] == 0


def test_every_non_overlapping_match_is_rewritten_in_one_pass():
    x = tvar("x", 1, 2, 4, 4)
    h = x
    for k in range(5):
        w1, w2 = tvar(f"a{k}", 2, 2, 1, 1), tvar(f"b{k}", 2, 2, 1, 1)
        h = R.nn.relu(R.add(R.nn.conv2d(h, w1), R.nn.conv2d(h, w2)))
    wl = Workload.from_expr(h, {"x"})
    new, count = rewrite(wl, rules.diamond_conv_add())
    assert count == 5
    assert new.graph.op_counts() == {"relax.nn.conv2d": 5, "relax.nn.relu": 5}
    assert len(new.params) == 5
    assert_same_outputs(wl, new)


def seed000_graph():
    """Seed 000's multi-output example: a 10-vertex graph holding the 6-vertex pattern."""
    x = Node.var("x", T)
    v2, v3, v7 = Node.call("relax.nn.relu", [x]), Node.call("relax.tanh", [x]), Node.call("relax.negative", [x])
    v4, v5, v6 = Node.call("relax.sigmoid", [v2]), Node.call("relax.exp", [v3]), Node.call("relax.sqrt", [v3])
    v8, v9 = Node.call("relax.add", [v4, v5]), Node.call("relax.nn.relu", [v6])
    v10 = Node.call("relax.concat", [Node.tuple([v8, v9, v7])], {"axis": 0})
    return Graph([x], [v10]), dict(v1=x, v2=v2, v3=v3, v4=v4, v5=v5, v6=v6, v7=v7)


def seed000_rule():
    vp1 = pat.Wildcard()
    vp2, vp3 = op.ReLU(vp1), op.Tanh(vp1)
    vp4, vp5, vp6 = op.Sigmoid(vp2), op.Exp(vp3), op.Sqrt(vp3)
    t3 = op.Tanh(vp1)
    return Subst([vp4, vp5, vp6], [op.Sigmoid(op.ReLU(vp1)), op.Exp(t3), op.Sqrt(t3)]), (vp1, vp2, vp3, vp4, vp5, vp6)


def test_seed_000_multi_output_example_matches():
    graph, v = seed000_graph()
    rule, patterns = seed000_rule()
    (m,) = list(Matcher(rule, graph).matches(lambda m: True))
    assert [m.nodes[p] for p in patterns] == [v[f"v{i}"] for i in range(1, 7)]
    assert m.outputs == [v["v4"], v["v5"], v["v6"]]
    wl = Workload.from_graph(graph, {})
    new, count = rewrite(wl, rule, max_passes=1)  # the target has the source's form: it would match again
    assert count == 1 and len(new.graph) == len(wl.graph)
    assert v["v4"] not in set(new.graph.rpo())
    assert_same_outputs(wl, new)


def test_pyramid_three_outputs_sharing_inputs():
    x, y = pat.Wildcard(), pat.Wildcard()
    src = [x + y, x * y, x - y]
    tgt = [y + x, y * x, op.Negative(y - x)]
    rule = Subst(src, tgt)
    a, b = tvar("a", 4, 8), tvar("b", 4, 8)
    out = R.concat([R.add(a, b), R.multiply(a, b), R.subtract(a, b)], axis=0)
    wl = Workload.from_expr(R.nn.relu(out), {"a", "b"})
    new, count = rewrite(wl, rule, max_passes=1)
    assert count == 1
    counts = new.graph.op_counts()
    assert counts["relax.negative"] == 1 and counts["relax.subtract"] == 1
    add = next(n for n in new.graph.rpo() if n.op == "relax.add")
    assert [i.name for i in add.inputs] == ["b", "a"]
    assert_same_outputs(wl, new)


def test_dead_end_candidate_is_backtracked():
    """The first successor of x offered for the second output does not match; the next one does."""
    x = pat.Wildcard()
    twice = op.Negative(op.Negative(x))
    rule = Subst([op.ReLU(x), op.Exp(x)], [op.ReLU(twice), op.Exp(twice)])
    a = Node.var("a", T)
    relu, sig, exp = Node.call("relax.nn.relu", [a]), Node.call("relax.sigmoid", [a]), Node.call("relax.exp", [a])
    graph = Graph([a], [relu, sig, exp])
    assert graph.successors()[a] == [relu, sig, exp]
    (m,) = list(Matcher(rule, graph).matches(lambda m: True))
    assert m.outputs == [relu, exp]
    wl = Workload.from_graph(graph, {})
    new, count = rewrite(wl, rule, max_passes=1)
    assert count == 1 and new.graph.op_counts()["relax.negative"] == 2
    assert_same_outputs(wl, new)


def test_multi_output_match_fails_when_second_output_missing():
    x = pat.Wildcard()
    rule = Subst([op.ReLU(x), op.Exp(x)], [op.ReLU(x), op.Exp(x)])
    a = Node.var("a", T)
    graph = Graph([a], [Node.call("relax.nn.relu", [a]), Node.call("relax.sigmoid", [a])])
    assert list(Matcher(rule, graph).matches(lambda m: True)) == []


@pytest.mark.parametrize("sections, concat_axis, fires", [(3, 1, True), (2, 1, True), (3, 0, False)])
def test_variadic_tuple_split_concat(sections, concat_axis, fires):
    x = tvar("x", 6, 6)
    parts = R.split(R.nn.relu(x), sections, axis=1)
    cat = R.concat([relax.TupleGetItem(parts, k) for k in range(sections)], axis=concat_axis)
    wl = Workload.from_expr(R.exp(cat), {"x"})
    new, count = rewrite(wl, rules.split_concat_variadic())
    assert count == int(fires)
    if fires:
        assert new.graph.op_counts() == {"relax.nn.relu": 1, "relax.exp": 1}
    assert_same_outputs(wl, new)


def test_variadic_tuple_needs_every_field_of_the_split_in_order():
    x = tvar("x", 6, 6)
    parts = R.split(x, 3, axis=1)
    cat = R.concat([relax.TupleGetItem(parts, k) for k in (0, 2, 1)], axis=1)
    wl = Workload.from_expr(cat, {"x"})
    assert rewrite(wl, rules.split_concat_variadic())[1] == 0


def test_variadic_outputs_parallel_convs():
    x = tvar("x", 1, 4, 6, 6)
    outs = [R.nn.conv2d(x, tvar(f"w{k}", ch, 4, 3, 3), padding=1) for k, ch in enumerate((2, 5, 3))]
    odd = R.nn.conv2d(x, tvar("w_odd", 2, 4, 1, 1))  # other kernel size: not an instance
    wl = Workload.from_expr(relax.Tuple([*outs, odd]), {"x"})
    new, count = rewrite(wl, rules.parallel_conv_variadic())
    assert count == 1
    assert new.graph.op_counts() == {"relax.nn.conv2d": 2, "relax.split": 1}
    split = next(n for n in new.graph.rpo() if n.op == "relax.split")
    assert split.attrs["indices_or_sections"] == (2, 7)
    assert_same_outputs(wl, new)


def test_variadic_outputs_past_a_reader_that_is_no_instance():
    """An attempt that fails between instances (x @ a constant) keeps the instances found after it."""
    x = tvar("x", 4, 8)
    ones = relax.const(np.ones((8, 3), "float32"))
    outs = [R.matmul(x, tvar("w0", 8, 2)), R.matmul(x, ones), R.matmul(x, tvar("w1", 8, 5)), R.matmul(x, tvar("w2", 8, 3))]
    wl = Workload.from_expr(relax.Tuple(outs), {"x"})
    new, count = rewrite(wl, rules.parallel_matmul_variadic())
    assert count == 1
    assert new.graph.op_counts() == {"relax.matmul": 2, "relax.split": 1}
    assert_same_outputs(wl, new)


def test_variadic_outputs_respect_min_len():
    x = tvar("x", 1, 4, 6, 6)
    wl = Workload.from_expr(relax.Tuple([R.nn.conv2d(x, tvar("w0", 2, 4, 3, 3)), R.nn.relu(x)]), {"x"})
    assert rewrite(wl, rules.parallel_conv_variadic())[1] == 0


def test_alt_and_match_choose_per_alternative():
    x = pat.Wildcard()
    alt = pat.Alt(op.ReLU(x), op.Sigmoid(x))
    rule = Subst(op.Exp(alt), op.Negative(op.Negative(op.Exp(pat.Match(alt, [op.ReLU(x), op.Sigmoid(x)])))))
    a = tvar("a", 4, 8)
    wl = Workload.from_expr(relax.Tuple([R.exp(R.nn.relu(a)), R.exp(R.sigmoid(a)), R.exp(R.tanh(a))]), {"a"})
    new, count = rewrite(wl, rule, max_passes=1)
    assert count == 2
    counts = new.graph.op_counts()
    assert counts["relax.negative"] == 4 and counts["relax.nn.relu"] == 1 and counts["relax.sigmoid"] == 1
    assert_same_outputs(wl, new)


def test_op_with_trait_binds_one_op():
    from gsl_eq import spec

    x = pat.Wildcard()
    ew = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE)
    rule = Subst(ew(ew(x)), op.Negative(op.Negative(ew(ew(x)))))
    a = tvar("a", 4, 8)
    wl = Workload.from_expr(relax.Tuple([R.exp(R.exp(a)), R.exp(R.nn.relu(a))]), {"a"})
    new, count = rewrite(wl, rule, max_passes=1)
    assert count == 1
    assert new.graph.op_counts()["relax.exp"] == 3
    assert_same_outputs(wl, new)


def test_greedy_applies_rules_in_order_and_counts():
    x = tvar("x", 6, 6)
    parts = R.split(x, 2, axis=1)
    cat = R.concat([relax.TupleGetItem(parts, 0), relax.TupleGetItem(parts, 1)], axis=1)
    y = R.permute_dims(R.permute_dims(cat, [1, 0]), [1, 0])
    wl = Workload.from_expr(y, {"x"})
    xx = pat.Wildcard()
    inner = op.Transpose(xx, axes=(1, 0))
    twice = Subst(op.Transpose(inner, axes=(1, 0)), op.Negative(op.Negative(xx)), name="transpose-twice")
    split_concat = rules.split_concat_variadic()
    result = greedy(wl, [split_concat, twice], fold_params=False)
    assert result.fired == {split_concat.name: 1, "transpose-twice": 1}
    assert result.converged and result.rounds == 2
    assert result.workload.graph.op_counts() == {"relax.negative": 2}
    assert_same_outputs(wl, result.workload)


def test_rule_that_never_stops_is_bounded():
    x, y = pat.Wildcard(), pat.Wildcard()
    commute = Subst(x + y, y + x, name="commute")
    a, b = tvar("a", 4, 8), tvar("b", 4, 8)
    wl = Workload.from_expr(R.add(a, b), {"a", "b"})
    result = greedy(wl, [commute], max_rounds=3, max_passes=4)
    assert not result.converged and result.stop_reason is StopReason.CYCLE and result.fired["commute"] == 2
    assert_same_outputs(wl, result.workload)


def test_an_unset_attribute_read_from_a_matched_node_is_a_value_not_a_wildcard():
    """``axis=first.axis`` where first's axis is unset asks for an unset axis: a squeeze of every
    unit axis is not the squeeze of listed axes (a None written in a rule still accepts any value)."""
    x = pat.Wildcard()
    first = op.Squeeze(x)
    same = Subst([first, op.Squeeze(x, axis=first.axis)], [op.Squeeze(x, axis=first.axis)] * 2, name="same squeeze")
    v = relax.Var("x", relax.TensorType((1, 3, 1), "float32"))
    listed = Workload.from_expr(relax.Tuple([relax.op.squeeze(v), relax.op.squeeze(v, [0, 2])]), {"x"})
    assert same(listed).graph.op_counts()["relax.squeeze"] == 2
    alike = Workload.from_expr(relax.Tuple([relax.op.squeeze(v), relax.op.squeeze(v)]), {"x"})
    assert same(alike).graph.op_counts()["relax.squeeze"] == 1
    anything = Subst([first, op.Squeeze(x, axis=None)], [op.Squeeze(x, axis=first.axis)] * 2, name="any squeeze")
    assert anything(listed).graph.op_counts()["relax.squeeze"] == 1
