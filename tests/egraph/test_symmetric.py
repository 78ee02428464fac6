"""Symmetric rules (``Subst(symmetric=True)``): saturate mode applies one of each pair of
matches that differ by swapping the two outputs, as TENSAT does for TASO's learned
two-output rules; the source must read the same swapped, and the guards must agree."""

import pytest
from tvm import relax

from gsl_eq import Subst, Workload, op, optimize, pat, rules
from gsl_eq.egraph import Runner
from gsl_eq.egraph.compile import UnsupportedRuleError
from gsl_eq.frontend import InvalidOperandError, OutputCountError, SourcePatternError
from gsl_eq.rules import taso_equations as taso

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
