"""Parallel matmul rules (GSL's parallel dense): matmuls sharing their left operand."""

from gsl_eq import rules

from .support import R, outputs, var, workload


def test_parallel_matmul(applies):
    x = var("x", 2, 8)
    y = outputs(R.matmul(x, var("w1", 8, 4)), R.nn.relu(R.matmul(x, var("w2", 8, 5))))
    applies(workload(y), rules.parallel_matmul(),
            {"matmul": 1, "split": 1, "nn.relu": 1}, {"concat": 1, "matmul": 1, "split": 1, "nn.relu": 1})


def test_parallel_matmul_on_a_batch_of_rows(applies):
    x = var("x", 3, 2, 8)
    y = outputs(R.matmul(x, var("w1", 8, 4)), R.matmul(x, var("w2", 8, 4)))
    applies(workload(y), rules.parallel_matmul(), {"matmul": 1, "split": 1}, {"concat": 1, "matmul": 1, "split": 1})


def test_parallel_matmul_needs_2d_weights(rejects):
    x = var("x", 2, 8)
    y = outputs(R.matmul(x, var("w1", 8, 4)), R.matmul(x, var("w2", 3, 8, 4)))
    rejects(workload(y), rules.parallel_matmul())


def test_parallel_matmul_variadic(applies):
    x = var("x", 2, 8)
    y = outputs(*(R.matmul(x, var(f"w{k}", 8, 3 + k)) for k in range(4)))
    applies(workload(y), rules.parallel_matmul_variadic(),
            {"matmul": 1, "split": 1}, {"concat": 1, "matmul": 1, "split": 1})


def test_parallel_matmul_variadic_needs_2d_weights(rejects):
    x = var("x", 2, 8)
    y = outputs(R.matmul(x, var("w1", 2, 8, 4)), R.matmul(x, var("w2", 2, 8, 4)))
    rejects(workload(y), rules.parallel_matmul_variadic())


def test_parallel_matmul_bias_variadic(applies):
    x = var("x", 2, 8)
    y = outputs(*(R.add(R.matmul(x, var(f"w{k}", 8, 3 + k)), var(f"b{k}", 3 + k)) for k in range(3)))
    applies(workload(y), rules.parallel_matmul_bias_variadic(),
            {"matmul": 1, "add": 1, "split": 1}, {"concat": 2, "matmul": 1, "add": 1, "split": 1})


def test_parallel_matmul_bias_variadic_needs_vector_biases(rejects):
    x = var("x", 2, 8)
    y = outputs(*(R.add(R.matmul(x, var(f"w{k}", 8, 4)), var(f"b{k}", 2, 4)) for k in range(2)))
    rejects(workload(y), rules.parallel_matmul_bias_variadic())
