"""Structural rules: split/concat, transposes and reshapes that undo each other; tuple items forwarded."""

import pytest
from tvm import relax

from gsl_eq import Workload, rules

from .support import R, bound, item, ops, outputs, var, workload


def x_4d():
    return var("x", 1, 4, 6, 6)


# --- split concat -----------------------------------------------------------------------


@pytest.mark.parametrize("parts", [2, (1,)])
def test_split_concat(applies, parts):
    x = x_4d()
    s = R.split(x, parts, axis=1)
    applies(workload(R.nn.relu(R.concat([item(s, 0), item(s, 1)], axis=1))), rules.split_concat(), {"nn.relu": 1})


def test_split_concat_needs_the_split_axis(rejects):
    x = x_4d()
    s = R.split(x, 2, axis=1)
    rejects(workload(R.concat([item(s, 0), item(s, 1)], axis=2)), rules.split_concat())


@pytest.mark.parametrize("parts", [2, 3, (1, 4)])
def test_split_concat_variadic(applies, parts):
    x = x_4d()
    s = R.split(x, parts, axis=2)
    n = parts if isinstance(parts, int) else len(parts) + 1
    applies(workload(R.nn.relu(R.concat([item(s, k) for k in range(n)], axis=2))), rules.split_concat_variadic(),
            {"nn.relu": 1})


def test_split_concat_variadic_needs_the_items_in_order(rejects):
    x = x_4d()
    s = R.split(x, 3, axis=2)
    rejects(workload(R.concat([item(s, 1), item(s, 0), item(s, 2)], axis=2)), rules.split_concat_variadic())


def test_split_concat_variadic_needs_every_item(rejects):
    x = x_4d()
    s = R.split(x, 3, axis=2)
    rejects(workload(R.concat([item(s, 0), item(s, 1)], axis=2)), rules.split_concat_variadic())


# --- transpose transpose ----------------------------------------------------------------


@pytest.mark.parametrize("a1, a2, left", [
    ([0, 2, 3, 1], [0, 3, 1, 2], {}),
    ([0, 2, 3, 1], None, {"permute_dims": 1}),
    (None, None, {}),
    ([1, 0, 2, 3], [0, 1, 3, 2], {"permute_dims": 1}),
    ([0, -1, 1, 2], [0, 2, 3, -3], {}),
])
def test_transpose_transpose(applies, a1, a2, left):
    x = x_4d()
    y = R.nn.relu(R.permute_dims(R.permute_dims(x, a1), a2))
    applies(workload(y), rules.transpose_transpose(), {**left, "nn.relu": 1})


def test_transpose_transpose_leaves_a_transpose_read_elsewhere(rejects):
    x = x_4d()
    t = R.permute_dims(x, [0, 2, 3, 1])
    rejects(workload(outputs(R.permute_dims(t, [0, 3, 1, 2]), t)), rules.transpose_transpose())


# --- reshapes ---------------------------------------------------------------------------


def test_reshape_reshape(applies):
    x = x_4d()
    wl = bound([x], lambda emit: R.reshape(emit(R.reshape(emit(R.reshape(x, (4, 36))), (-1, 72))), (0, 8, 9)))
    applies(wl, rules.reshape_reshape(), {"reshape": 1}, fired=2)


def test_reshape_reshape_leaves_a_reshape_read_elsewhere(rejects):
    x = x_4d()
    r = R.reshape(x, (4, 36))
    rejects(workload(outputs(R.reshape(r, (2, 72)), r)), rules.reshape_reshape())


def test_identity_reshape(applies):
    x = x_4d()
    applies(workload(R.nn.relu(R.reshape(x, (1, 4, -1, 6)))), rules.identity_reshape(), {"nn.relu": 1})


def test_identity_reshape_needs_the_same_shape(rejects):
    rejects(workload(R.nn.relu(R.reshape(x_4d(), (4, 6, 6)))), rules.identity_reshape())


# --- dispatch tuple ---------------------------------------------------------------------


def test_dispatch_tuple(applies):
    a, b = var("a", 2, 3), var("b", 2, 3)

    def body(emit):
        tup = emit(relax.Tuple([emit(R.exp(a)), emit(R.sigmoid(b)), a]))
        return R.add(emit(R.multiply(item(tup, 0), item(tup, 2))), item(tup, 1))

    new, _ = applies(bound([a, b], body, {"a", "b"}), rules.dispatch_tuple(),
                     {"exp": 1, "sigmoid": 1, "multiply": 1, "add": 1})
    assert not any(n.kind.value in ("tuple", "getitem") for n in new.graph)


def test_dispatch_tuple_after_decomposing_batch_norm(applies):
    # TVM's DecomposeOpsForInference leaves (y, mean, var)[0] behind each batch norm.
    x = var("x", 2, 4, 3, 3)
    stats = [var(n, 4) for n in ("gamma", "beta", "mean", "var")]
    wl = workload(item(R.nn.batch_norm(x, *stats, axis=1, training=False), 0))
    decomposed = Workload(relax.transform.DecomposeOpsForInference()(wl.mod), wl.params)
    assert any(n.kind.value == "tuple" for n in decomposed.graph)
    new, _ = applies(decomposed, rules.dispatch_tuple(), {"subtract": 1, "divide": 1, "multiply": 1, "add": 1},
                     ops(decomposed))
    assert not any(n.kind.value in ("tuple", "getitem") for n in new.graph)


def test_dispatch_tuple_leaves_a_tuple_read_whole(rejects):
    a, b = var("a", 2, 3), var("b", 2, 3)

    def body(emit):
        tup = emit(relax.Tuple([emit(R.exp(a)), emit(R.sigmoid(b))]))
        return R.add(item(tup, 0), emit(R.sum(emit(R.concat(tup, axis=0)), axis=0)))

    rejects(bound([a, b], body, {"a", "b"}), rules.dispatch_tuple())
