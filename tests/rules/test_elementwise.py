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
