"""Element-wise rules: bias adds merged, repeated element-wise calls on one value merged."""

import pytest

from gsl_eq import rules
from gsl_eq.greedy import rewrite

from .support import R, outputs, var, workload


def test_bias_add_add(applies):
    x = var("x", 2, 3)
    y = R.add(R.add(R.matmul(x, var("w", 3, 5)), var("b1", 5)), var("b2", 5))
    applies(workload(y), rules.bias_add_add(), {"matmul": 1, "add": 1}, {"matmul": 1, "add": 2})


def test_bias_add_add_on_a_conv(applies):
    x = var("x", 1, 2, 4, 4)
    y = R.add(R.add(R.nn.conv2d(x, var("w", 3, 2, 1, 1)), var("b1", 4)), var("b2", 4))
    applies(workload(y), rules.bias_add_add(), {"nn.conv2d": 1, "add": 1}, {"nn.conv2d": 1, "add": 2})


def test_bias_add_add_needs_two_vectors_of_one_shape(rejects):
    x = var("x", 2, 3)
    y = R.add(R.add(R.matmul(x, var("w", 3, 5)), var("b1", 5)), var("b2", 2, 5))
    rejects(workload(y), rules.bias_add_add())


def test_bias_add_right_moves_a_bias_added_first(applies, rejects):
    x = var("x", 2, 3)
    y = R.add(var("b", 5), R.matmul(x, var("w", 3, 5)))  # as PyTorch's addmm is imported
    [new, _] = applies(workload(y), rules.bias_add_right(), {"matmul": 1, "add": 1})
    add = next(n for n in new.graph if n.op == "relax.add")
    assert add.inputs[0].op == "relax.matmul" and add.inputs[1].name == "b"
    rejects(new, rules.bias_add_right())  # it never matches what it made
    two_vectors = R.add(var("b", 5), R.exp(var("x", 5)))  # no side has two axes: no side is the bias's operand
    rejects(workload(two_vectors), rules.bias_add_right())


@pytest.mark.slow
def test_linear_layers_imported_from_pytorch_merge(same_outputs):
    """q, k and v projections as TVM imports nn.Linear from PyTorch (bias first, each reading its own
    reshape of x): both modes merge them into one matmul and one bias add under default() (greedy
    mode once it has merged the reshapes, as the e-graph does)."""
    from gsl_eq import optimize

    torch = pytest.importorskip("torch")
    from gsl_eq import Workload

    class QKV(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v = (torch.nn.Linear(16, 16) for _ in range(3))

        def forward(self, x):
            return self.q(x) * self.k(x) + self.v(x)

    wl = Workload.from_torch(QKV().eval(), (torch.randn(2, 5, 16),))
    assert any(n.op == "relax.add" and n.inputs[0].kind.value == "var" for n in wl.graph)
    for cost, mode in (("gpu", "saturate"), ("roofline", "saturate"), ("gpu", "greedy")):
        result = optimize(wl, rules.default(), cost=cost, mode=mode)
        assert "parallel_matmul_bias_variadic" in result.report.rules_used
        assert result.workload.graph.op_counts()["relax.matmul"] == 1
        assert result.report.cost_after < result.report.cost_before
        same_outputs(wl, result.workload)
    # TASO's bias-less merge comes first in tensat()+default(): the (16,) biases then meet the
    # split parts, and are added as one
    connected = [r for r in rules.tensat() + rules.default() if r.connected]
    result = optimize(wl, connected, cost="gpu", mode="greedy")
    assert "split_of_broadcast_variadic" in result.report.rules_used
    assert result.workload.graph.op_counts()["relax.add"] == 2  # the merged bias add and q * k + v
    same_outputs(wl, result.workload)


@pytest.mark.parametrize("ew, name", [(R.exp, "exp"), (R.nn.relu, "nn.relu"), (R.sigmoid, "sigmoid")])
def test_merge_element_wise(applies, ew, name):
    x = var("x", 2, 3)
    y = R.add(ew(x), R.multiply(ew(x), x))
    applies(workload(y), rules.merge_element_wise(), {name: 1, "add": 1, "multiply": 1})


def test_merge_element_wise_needs_one_op(rejects):
    x = var("x", 2, 3)
    rejects(workload(outputs(R.exp(x), R.sigmoid(x))), rules.merge_element_wise())


def test_merge_element_wise_needs_one_input(rejects):
    x, z = var("x", 2, 3), var("z", 2, 3)
    rejects(workload(outputs(R.exp(x), R.exp(z)), {"x", "z"}), rules.merge_element_wise())


def test_merge_element_wise_keeps_attributes(applies):
    x = var("x", 2, 3)
    y = outputs(R.nn.leakyrelu(x, 0.2), R.nn.leakyrelu(x, 0.2))
    applies(workload(y), rules.merge_element_wise(), {"nn.leakyrelu": 1})


def test_merge_element_wise_does_not_merge_different_attributes(same_outputs):
    x = var("x", 2, 3)
    wl = workload(outputs(R.nn.leakyrelu(x, 0.2), R.nn.leakyrelu(x, 0.3)))
    new, count = rewrite(wl, rules.merge_element_wise(), fold_params=False)
    assert count == 0
    same_outputs(wl, new)


def test_merge_element_wise_variadic(applies):
    x = var("x", 2, 3)
    y = outputs(R.exp(x), R.exp(x), R.sigmoid(x), R.exp(x))
    applies(workload(y), rules.merge_element_wise_variadic(), {"exp": 1, "sigmoid": 1})


def test_merge_element_wise_variadic_needs_two_calls(rejects):
    x = var("x", 2, 3)
    rejects(workload(outputs(R.exp(x), R.sigmoid(x), R.nn.relu(x))), rules.merge_element_wise_variadic())
