"""Attribute expressions evaluated on hand-built graph nodes, against hand-computed values."""

import numpy as np
import pytest

from gsl_eq.frontend import EvaluationError, Env, Memo, attr, evaluate, op, pat, satisfies
from gsl_eq.frontend.attr import BinOp
from gsl_eq.graph import Node, TensorType

X = Node.var("x", TensorType((1, 3, 8, 8), "float32"))
W = Node.var("w", TensorType((4, 3, 3, 3), "float32"))
CONV = Node.call("relax.nn.conv2d", [X, W], {"strides": (2, 2), "padding": (1, 1, 1, 1), "groups": 1})
SPLIT = Node.call("relax.split", [X], {"indices_or_sections": 3, "axis": 1})
ITEM = Node.getitem(SPLIT, 2)


@pytest.fixture
def rule():
    """Patterns standing for the nodes above."""
    x, w = pat.Wildcard(), pat.Variable()
    conv = op.Conv2D(x, w)
    split = op.Split(x)
    item = split[2]
    env = Env(nodes={x: X, w: W, conv: CONV, split: SPLIT, item: ITEM})
    return x, w, conv, split, item, env


def test_shape_dtype_ndim_of_variables_and_calls(rule):
    x, w, conv, _, _, env = rule
    assert evaluate(x.shape, env) == (1, 3, 8, 8)
    assert evaluate(w.dtype, env) == "float32"
    assert evaluate(conv.ndim, env) == 4
    assert evaluate(conv.shape, env) == (1, 4, 4, 4)  # (8 + 2 - 3) // 2 + 1 = 4


def test_op_attributes_and_their_defaults(rule):
    _, _, conv, split, item, env = rule
    assert evaluate(conv.strides, env) == (2, 2)
    assert evaluate(conv.padding, env) == (1, 1, 1, 1)
    assert evaluate(conv.dilation, env) == (1, 1)  # not carried by the node: conv2d's default
    assert evaluate(split.axis, env) == 1
    assert evaluate(item.index, env) == 2
    assert evaluate(item.shape, env) == (1, 1, 8, 8)
    assert evaluate(split.length, env) == 3


def test_arithmetic(rule):
    x, w, _, _, _, env = rule
    assert evaluate(x.shape[2] * w.shape[0] + 1, env) == 33
    assert evaluate(x.shape[2] - w.shape[3], env) == 5
    assert evaluate(x.shape[2] / 16, env) == 0.5
    assert evaluate(x.shape[2] // 3, env) == 2
    assert evaluate(x.shape[2] % 3, env) == 2
    assert evaluate(2 ** w.shape[0], env) == 16
    assert evaluate(-x.shape[1], env) == -3
    assert evaluate(abs(1 - x.shape[2]), env) == 7
    assert evaluate(100 - x.shape[2], env) == 92  # reflected operators


def test_comparisons_and_logic(rule):
    x, w, _, _, _, env = rule
    assert evaluate(x.shape[1] == w.shape[1], env) is True
    assert evaluate(x.shape[1] != w.shape[1], env) is False
    assert evaluate((x.shape[2] > w.shape[2]) & (x.ndim >= 4), env) is True
    assert evaluate((x.shape[2] < w.shape[2]) | (x.ndim <= 3), env) is False
    assert evaluate(~(x.dtype == "float16"), env) is True
    # & and | short-circuit: the right side would fail (index 9 of a 4-tuple).
    assert evaluate((x.ndim == 3) & (x.shape[9] == 1), env) is False
    assert evaluate((x.ndim == 4) | (x.shape[9] == 1), env) is True


def test_max_min(rule):
    x, w, _, _, _, env = rule
    assert evaluate(attr.Max(x.shape[1], w.shape[0], 2), env) == 4
    assert evaluate(attr.Min(x.shape[2], w.shape[2]), env) == 3


def test_tuples_indexing_slicing(rule):
    x, w, _, _, _, env = rule
    assert evaluate((x.shape[0], w.shape[0], 7), env) == (1, 4, 7)
    assert evaluate(attr.Tuple(x.shape[1]), env) == (3,)
    assert evaluate(x.shape[1:], env) == (3, 8, 8)
    assert evaluate(x.shape[:-2], env) == (1, 3)
    assert evaluate(w.shape[::2], env) == (4, 3)
    assert evaluate(x.shape[-1], env) == 8
    assert evaluate(x.shape + w.shape[2:], env) == (1, 3, 8, 8, 3, 3)


def test_len_in_reverse(rule):
    x, w, _, _, _, env = rule
    assert evaluate(attr.Len(x.shape), env) == 4
    assert evaluate(attr.In(4, w.shape), env) is True
    assert evaluate(attr.In(x.shape[2], w.shape), env) is False
    assert evaluate(attr.Reverse(w.shape), env) == (3, 3, 3, 4)


def test_cond_evaluates_only_the_chosen_branch(rule):
    x, _, _, _, _, env = rule
    assert evaluate(attr.Cond(x.ndim == 4, x.shape[3], x.shape[10]), env) == 8
    assert evaluate(attr.Cond(x.ndim == 5, x.shape[10], "no"), env) == "no"


def test_sum_and_reduce_indexed(rule):
    x, _, _, _, _, env = rule
    j = attr.Symbol()
    assert evaluate(attr.Sum(x.shape[j], j, 4), env) == 1 + 3 + 8 + 8
    assert evaluate(attr.Sum(x.shape[j], j, 0), env) == 0
    assert evaluate(attr.ReduceIndexed(BinOp.MUL, x.shape[j], j, attr.Len(x.shape), 1), env) == 192
    assert evaluate(attr.ReduceIndexed("max", x.shape[j] * j, j, 4, 0), env) == 24
    assert evaluate(attr.ReduceTuple("add", x.shape, 0), env) == 20


def test_variadic_attribute(rule):
    x, _, _, _, _, env = rule
    i, j = attr.Symbol(), attr.Symbol()
    assert evaluate(attr.Variadic(x.shape[i] * 2, index=i, length=3), env) == (2, 6, 16)
    prefix_sums = attr.Variadic(attr.Sum(x.shape[j], j, i + 1), index=i, length=attr.Len(x.shape) - 1)
    assert evaluate(prefix_sums, env) == (1, 4, 12)
    assert evaluate(attr.Variadic(0, length=0), env) == ()


def test_map(rule):
    x, w, _, _, _, env = rule
    assert evaluate(attr.Map(x.shape, lambda d: d * 2), env) == (2, 6, 16, 16)
    assert evaluate(attr.Map(w.shape[2:], lambda d: d // 2 + x.ndim), env) == (5, 5)


def test_variadic_pattern_attributes():
    """The split sizes of seed 002's variadic parallel conv, on kernels of 4, 6 and 2 channels."""
    x = pat.Wildcard()
    w1 = pat.Variable()
    w = pat.Variable()
    conv1 = op.Conv2D(x, w1)
    conv = op.Conv2D(x, w)
    src = pat.Variadic(conv, templates=[conv, w], first=[conv1, w1])
    i, j = attr.Symbol(), attr.Symbol()
    sections = attr.Variadic(attr.Sum(src(w, j).shape[0], j, i + 1), index=i, length=src.length - 1)
    kernels = [Node.var(f"w{k}", TensorType((c, 3, 1, 1), "float32")) for k, c in enumerate((4, 6, 2))]
    env = Env(instances={src: [{w: k} for k in kernels]})
    assert evaluate(src.length, env) == 3
    assert evaluate(sections, env) == (4, 10)
    assert evaluate(src(w, 2).shape, env) == (2, 3, 1, 1)
    k = attr.Symbol()
    assert evaluate(attr.Variadic(src(w, k).shape[0], index=k, length=src.length), env) == (4, 6, 2)


def test_tuple_field_variadic_length():
    x = pat.Wildcard()
    split = op.Split(x)
    i = attr.Symbol()
    item = split[i]
    fields = pat.Variadic(item, templates=[item], index=i)
    tup = Node.tuple([Node.getitem(SPLIT, n) for n in range(3)])
    assert evaluate(fields.length, {fields: tup}) == 3


def test_env_from_one_mapping(rule):
    x, _, _, _, _, _ = rule
    i = attr.Symbol()
    assert evaluate(x.shape[i] + i, {x: X, i: 2}) == 10


def test_symbol_values_shadow_inner_binders():
    i = attr.Symbol()
    inner = attr.Variadic(i, index=i, length=2)
    assert evaluate(attr.Tuple(i, inner), {i: 9}) == (9, (0, 1))


def test_memo_keeps_values_of_memoizable_expressions(rule):
    x, _, _, _, _, env = rule
    shared = x.shape[1] * 10
    memo = Memo(frozenset({shared}))
    assert evaluate(shared + shared, env, memo) == 60
    assert memo.values == {shared: 30}
    other = Env(nodes={x: Node.var("y", TensorType((1, 5), "float32"))})
    assert evaluate(shared, other, memo) == 30  # from the memo, not recomputed
    assert evaluate(shared, other) == 50


def test_errors_name_the_expression_and_its_line(rule):
    x, _, conv, _, _, env = rule
    missing = pat.Variable()
    with pytest.raises(EvaluationError, match=r"test_attr_eval.py:\d+: .*has no node"):
        evaluate(missing.shape, env)
    i = attr.Symbol()
    with pytest.raises(EvaluationError, match="has no value"):
        evaluate(x.shape[i], env)
    bad = x.shape[7]
    with pytest.raises(EvaluationError, match=f"test_attr_eval.py:{bad.loc.lineno}: cannot evaluate .*IndexError"):
        evaluate(bad, env)
    with pytest.raises(EvaluationError, match="not a non-negative int"):
        evaluate(attr.Variadic(1, length=x.dtype), env)
    first = pat.GetItem(conv, 0)
    with pytest.raises(EvaluationError, match="has no attribute 'index'"):
        evaluate(first.index, {first: CONV})


def test_instance_out_of_range():
    w = pat.Variable()
    relu = op.ReLU(w)
    src = pat.Variadic(relu, templates=[relu, w])
    with pytest.raises(EvaluationError, match="instance 2 .* has 1 instances"):
        evaluate(src(w, 2).shape, Env(instances={src: [{w: X}]}))


def test_satisfies():
    assert satisfies((4, 3, 3, 3), (None, None, 3, 3))
    assert not satisfies((4, 3, 1, 1), (None, None, 3, 3))
    assert not satisfies((4, 3, 3), (None, None, 3, 3))
    assert satisfies((1, 1), [1, 1])
    assert satisfies("float32", None) and satisfies(None, None)
    assert satisfies(2, 2.0) and not satisfies(2, 3)
    assert not satisfies(2, (2,)) and not satisfies((2,), 2)
    assert satisfies(np.float32(0.5), 0.5)
