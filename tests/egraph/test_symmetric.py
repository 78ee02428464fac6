"""Symmetric rules (``Subst(symmetric=True)``): saturate mode applies one of each pair of
matches that differ by swapping the two outputs, as TENSAT does for TASO's learned
two-output rules; the source must read the same swapped, and the guards must agree."""

import pytest
from tvm import relax

from gsl_eq import Subst, Workload, attr, op, optimize, pat, rules
from gsl_eq.egraph import Runner
from gsl_eq.egraph.compile import UnsupportedRuleError
from gsl_eq.frontend import InvalidOperandError, OutputCountError, SourcePatternError
from gsl_eq.rules import taso_equations as taso
from gsl_eq.rules._common import concat_each, split_back

R = relax.op


def matmul_merge(symmetric: bool, where=()) -> Subst:
    """[x @ w1, x @ w2] -> the two halves of x @ concat(w1, w2) (merged weights merge again)."""
    x, w1, w2 = pat.Wildcard(), pat.Wildcard(), pat.Wildcard()
    merged = op.Split(op.MatMul(x, op.Concatenate((w1, w2), axis=1)), indices_or_sections=(w1.shape[1],), axis=1)
    return Subst([op.MatMul(x, w1), op.MatMul(x, w2)], [merged[0], merged[1]], name="merge",
                 where=[w1.ndim == 2, w2.ndim == 2, *where], symmetric=symmetric)


def projections(n: int) -> Workload:
    """``n`` matmuls of one input by weights of 3, 4, ... columns."""
    x = relax.Var("x", relax.TensorType((2, 8), "float32"))
    ws = [relax.Var(f"w{i}", relax.TensorType((8, 3 + i), "float32")) for i in range(n)]
    return Workload.from_expr(relax.Tuple([R.matmul(x, w) for w in ws]), {"x"})


class MatmulHeavy:
    """A matmul costs a launch: one matmul by merged weights beats several."""

    name = "matmul-heavy"

    def __call__(self, op, attrs, inputs, output) -> float:
        return 100.0 if op == "relax.matmul" else 1.0


def test_one_of_each_mirrored_pair_of_matches_is_applied():
    wl = projections(3)
    both = Runner(wl.graph, [matmul_merge(False)], iter_limit=1).run().iterations[0]
    one = Runner(wl.graph, [matmul_merge(True)], iter_limit=1).run().iterations[0]
    assert both.applied == {"merge": 6}  # the ordered pairs of 3 matmuls
    assert one.applied == {"merge": 3}  # the unordered ones
    assert one.enodes < both.enodes


@pytest.mark.slow
def test_a_symmetric_rule_reaches_the_same_best_graph_in_a_smaller_e_graph(same_outputs):
    """Three projections merged into one matmul in two iterations: 97 e-nodes instead of 439."""
    wl = projections(3)
    settings = dict(mode="saturate", cost=MatmulHeavy(), node_limit=20_000, iter_limit=2, cycles="filter")
    both = optimize(wl, [matmul_merge(False)], **settings)
    one = optimize(wl, [matmul_merge(True)], **settings)
    assert one.report.enodes < both.report.enodes / 3
    assert one.report.cost_after == both.report.cost_after
    assert one.workload.graph.op_counts()["relax.matmul"] == 1
    same_outputs(wl, one.workload)


def test_guards_that_tell_a_match_from_its_mirror_are_refused():
    """A guard wanting the first weight narrower accepts a match and rejects its mirror: the outputs
    are not interchangeable, and applying one of the two would lose half the merges."""
    rule = matmul_merge(True)
    w1, w2 = (out.inputs[1] for out in rule.source.outputs)
    narrower = Subst(list(rule.source.outputs), list(rule.target.outputs), name="narrower first",
                     where=[*rule.where, w1.shape[1] < w2.shape[1]], symmetric=True)
    with pytest.raises(UnsupportedRuleError, match="narrower first.*one is accepted and the other rejected"):
        optimize(projections(2), [narrower], mode="saturate", cost=MatmulHeavy(), iter_limit=2)


def test_convs_that_differ_in_an_implicit_out_dtype_merge(same_outputs):
    """PyTorch's exporter writes out_dtype="float32" on a float32 conv, a rule's target leaves it unset:
    read into one form, the two convs merge. Before, the symmetric parallel_conv_variadic compared the
    unset one as a wildcard and the set one as a value, and optimize raised mid-run on a user's CNN."""
    x = relax.Var("x", relax.TensorType((1, 4, 6, 6), "float32"))
    w1, w2 = (relax.Var(f"w{i}", relax.TensorType((4, 4, 1, 1), "float32")) for i in (1, 2))
    wl = Workload.from_expr(relax.Tuple([R.nn.conv2d(x, w1, out_dtype="float32"), R.nn.conv2d(x, w2)]), {"x"})
    assert {n.attrs["out_dtype"] for n in wl.graph if n.op == "relax.nn.conv2d"} == {None}
    for mode in ("saturate", "greedy"):
        result = optimize(wl, [rules.parallel_conv_variadic()], mode=mode, cost="gpu")
        assert result.workload.graph.op_counts()["relax.nn.conv2d"] == 1
        same_outputs(wl, result.workload)


def test_a_disconnected_symmetric_rule_pairs_each_two_matches_once():
    a, b = pat.Wildcard(), pat.Wildcard()
    halves = op.Split(op.ReLU(op.Concatenate((a, b), axis=1)), indices_or_sections=(a.shape[1],), axis=1)
    rule = Subst([op.ReLU(a), op.ReLU(b)], [halves[0], halves[1]], name="relu_pair", symmetric=True,
                 where=[a.ndim == 2, b.ndim == 2, a.shape[0] == b.shape[0]])
    xs = [relax.Var(f"x{i}", relax.TensorType((4, 3 + i), "float32")) for i in range(3)]
    wl = Workload.from_expr(relax.Tuple([R.nn.relu(x) for x in xs]), {f"x{i}" for i in range(3)})
    first = Runner(wl.graph, [rule], iter_limit=1).run().iterations[0]
    assert first.applied == {"relu_pair": 3}  # 6 ordered pairs without symmetric=True


# --- the rule must read the same swapped --------------------------------------------------


def test_a_symmetric_rule_needs_mirrored_sources():
    x, w1, w2 = pat.Wildcard(), pat.Variable(), pat.Variable()
    with pytest.raises(SourcePatternError, match="not mirror images"):
        Subst([op.MatMul(x, w1), op.ReLU(op.MatMul(x, w2))], [op.MatMul(x, w1), op.ReLU(op.MatMul(x, w2))],
              symmetric=True)
    with pytest.raises(SourcePatternError, match="not mirror images"):  # the attributes differ
        Subst([op.Softmax(x, axis=0), op.Softmax(w1, axis=1)], [op.Softmax(x, axis=0), op.Softmax(w1, axis=1)],
              symmetric=True)


def test_a_symmetric_rule_needs_two_outputs():
    x = pat.Wildcard()
    with pytest.raises(OutputCountError, match="exactly two source outputs"):
        Subst(op.ReLU(x), op.ReLU(x), symmetric=True)


def test_symmetric_is_a_bool():
    x = pat.Wildcard()
    with pytest.raises(InvalidOperandError, match="symmetric must be True or False"):
        Subst([op.ReLU(x), op.Sigmoid(x)], [op.ReLU(x), op.Sigmoid(x)], symmetric="yes")


def test_tensat_takes_the_learned_merges_of_one_input_as_symmetric():
    """As TENSAT: a learned two-output rule whose sources differ only in input names is symmetric;
    the hand-written ones are not, nor (measured: Inception-v3 loses) the relu merges of two inputs."""
    by_name = {r.name: r for r in rules.tensat()}
    assert by_name["taso:converted_multi.txt#8"].symmetric  # [x @ w1, x @ w2]
    assert by_name["taso:converted_multi.txt#16"].symmetric  # convs of one input
    assert not by_name["taso:converted_multi.txt#6"].symmetric  # [relu(a), relu(b)]: no shared input
    assert not any(r.symmetric for r in taso.translation("predefined_multi.txt").rules)
    assert not by_name["taso:converted_multi.txt#0"].symmetric  # two different associativities


# --- variadic outputs: one order of each set of matches ------------------------------------


def variadic_matmul_merge(symmetric: bool, wider: bool = False) -> Subst:
    """Two or more ``x @ w_k`` -> the parts of ``x @ concat(w_k)``; ``wider``: every weight after
    the first has one column more than the first (a guard that tells the instances apart)."""
    x, w1 = pat.Wildcard(), pat.Variable(ndim=2)
    w = pat.Variable(shape=(w1.shape[0], w1.shape[1] + 1 if wider else None), dtype=w1.dtype)
    mm = op.MatMul(x, w)
    src = pat.Variadic(mm, templates=[mm, w], first=[op.MatMul(x, w1), w1], min_len=2)
    merged = op.MatMul(x, concat_each(src, w, axis=1))
    return Subst(src, split_back(merged, src, w, 1, axis=-1), name="merge_all", symmetric=symmetric)


def test_a_symmetric_variadic_rule_applies_one_order_of_each_set():
    wl = projections(4)
    every = Runner(wl.graph, [variadic_matmul_merge(False)], iter_limit=1).run().iterations[0]
    one = Runner(wl.graph, [variadic_matmul_merge(True)], iter_limit=1).run().iterations[0]
    assert every.applied == {"merge_all": 4 * 3 + 4 * 3 * 2}  # ordered pairs and triples (MAX_VARIADIC)
    assert one.applied == {"merge_all": 6 + 4}  # the pairs and the triples as sets
    assert one.enodes < every.enodes / 2


@pytest.mark.slow
def test_a_symmetric_variadic_rule_reaches_the_same_best_graph(same_outputs):
    wl = projections(4)
    settings = dict(mode="saturate", cost=MatmulHeavy(), iter_limit=3, cycles="filter")
    every = optimize(wl, [variadic_matmul_merge(False)], **settings)
    one = optimize(wl, [variadic_matmul_merge(True)], **settings)
    assert one.report.enodes < every.report.enodes / 2  # 73 against 249
    assert one.report.cost_after == every.report.cost_after
    # all four merged: instances cover three outputs at most, the group of four is seeded at load
    assert one.workload.graph.op_counts()["relax.matmul"] == 1
    assert one.report.applications[one.report.rules_used[0]] >= 1 and len(one.report.rules_used) == 1
    same_outputs(wl, one.workload)


def branches(channels: tuple[int, ...]) -> Workload:
    """Conv + bias + relu branches of one input, with ``channels`` output channels, concatenated."""
    x = relax.Var("x", relax.TensorType((1, 4, 6, 6), "float32"))
    out = []
    for k, c in enumerate(channels):
        w = relax.Var(f"w{k}", relax.TensorType((c, 4, 1, 1), "float32"))
        b = relax.Var(f"b{k}", relax.TensorType((1, c, 1, 1), "float32"))
        out.append(R.nn.relu(R.add(R.nn.conv2d(x, w), b)))
    return Workload.from_expr(R.concat(out, axis=1), {"x"})


@pytest.mark.slow
def test_merged_branches_split_back_in_the_order_a_concat_reads_them(same_outputs):
    """Of each set of matches, the one whose outputs come in the order the graph reads them is
    applied: three branches concatenated become one conv, its split and the concat cancelling."""
    wl = branches((2, 3, 4))
    result = optimize(wl, rules.default(), mode="saturate", cost="gpu")
    assert result.report.iterations[0]["applied"]["parallel_conv_bias_act_variadic"] == 3 + 1  # 12 in every order
    assert result.workload.graph.op_counts() == {"relax.nn.conv2d": 1, "relax.add": 1, "relax.nn.relu": 1}
    same_outputs(wl, result.workload)


@pytest.mark.slow
def test_the_librarys_merges_of_one_input_are_symmetric(same_outputs):
    """The library's conv merges, unordered (as built) and in every order (the same rules without
    ``symmetric``), on four branches: the same best graph in a third of the e-graph."""
    merges = [r for r in rules.default() if r.symmetric]
    assert {r.name for r in merges} >= {"parallel_conv_variadic", "parallel_conv_bias_variadic",
                                        "parallel_conv_bias_act_variadic", "parallel_matmul_variadic",
                                        "parallel_matmul_bias_variadic", "merge_element_wise_variadic"}
    ordered = [Subst(r.source.outputs[0], r.target.outputs[0], name=r.name, where=r.where) if r.symmetric else r
               for r in rules.default()]
    wl = branches((2, 3, 4, 5))
    one = optimize(wl, rules.default(), mode="saturate", cost="gpu")
    every = optimize(wl, ordered, mode="saturate", cost="gpu")
    assert one.report.iterations[0]["applied"]["parallel_conv_bias_act_variadic"] == 6 + 4
    assert every.report.iterations[0]["applied"]["parallel_conv_bias_act_variadic"] == 12 + 24
    assert one.report.enodes < every.report.enodes / 3  # 195 against 671
    assert one.report.cost_after == every.report.cost_after < one.report.cost_before
    same_outputs(wl, one.workload)


def test_guards_that_tell_variadic_instances_apart_are_refused():
    with pytest.raises(UnsupportedRuleError, match="merge_all.*one is accepted and the other rejected"):
        optimize(projections(3), [variadic_matmul_merge(True, wider=True)], mode="saturate", cost=MatmulHeavy(),
                 iter_limit=2)


def test_a_symmetric_variadic_needs_interchangeable_instances():
    def merge(index=None) -> Subst:
        x, w = pat.Wildcard(), pat.Variable()
        mm = op.MatMul(x, w)
        out = op.ReLU(x)
        return Subst(pat.Variadic(mm, templates=[mm, w], index=index, min_len=2), pat.Variadic(out, templates=[out]),
                     symmetric=True)

    assert merge().symmetric
    with pytest.raises(SourcePatternError, match="bind an index"):
        merge(index=attr.Symbol())
