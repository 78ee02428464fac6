"""The GSL rules mirroring TVM passes, against the passes themselves on the same modules.

For each pass: the rules (applied greedily, parameters folded) give a module
computing what the pass's module computes, with no more ops. Each test prints
the rules' lines of code next to the pass's (GSL's claim of conciseness): code
lines only, blank lines, comments and docstrings left out.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import tokenize
from pathlib import Path

import pytest
import tvm
from tvm import relax

from gsl_eq import Workload, rules
from gsl_eq.greedy import greedy

from .support import R, bound, item, ops, outputs, var, workload

# Where each pass is implemented: a Python module of TVM, or a C++ file of TVM's source tree.
PASS_SOURCES = {
    "CombineParallelMatmul": "src/relax/transform/combine_parallel_matmul.cc",
    "FoldBatchnormToConv2D": "tvm.relax.transform.fold_batch_norm_to_conv2d_for_inference",
    "DecomposeOpsForInference": "src/relax/transform/decompose_ops.cc",
    "RemoveRedundantReshape": "tvm.relax.transform.remove_redundant_reshape",
}


def code_lines(source: str) -> int:
    """Lines holding code: not blank, not only a comment, not part of a docstring."""
    docstrings: set[int] = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENDMARKER):
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - docstrings)


def cpp_code_lines(text: str) -> int:
    """Non-blank C++ lines that are not only a comment (``//`` lines and ``/* */`` blocks)."""
    count, in_block = 0, False
    for line in text.splitlines():
        s = line.strip()
        if in_block:
            in_block = "*/" not in s
            continue
        if s.startswith("/*"):
            in_block = "*/" not in s
            continue
        if s and not s.startswith("//"):
            count += 1
    return count


def pass_lines(name: str) -> str:
    """How many lines the pass takes in TVM, and what was counted."""
    where = PASS_SOURCES[name]
    if where.startswith("tvm."):
        module = importlib.import_module(where)
        return f"{code_lines(inspect.getsource(module))} lines of Python ({module.__name__})"
    cpp = Path(tvm.__file__).parent / where
    if cpp.exists():
        return f"{cpp_code_lines(cpp.read_text())} lines of C++ ({where})"
    wrapper = getattr(relax.transform, name)
    return (f"C++ source not in the wheel ({where} absent); its Python wrapper "
            f"relax.transform.{name} has {code_lines(inspect.getsource(wrapper))} lines")


def rule_lines(name: str) -> str:
    makers = rules.TVM_PASSES[name]
    counts = {make.__name__: code_lines(inspect.getsource(make)) for make in makers}
    parts = ", ".join(f"{n} {c}" for n, c in counts.items())
    return f"{sum(counts.values())} lines ({parts})"


# --- the modules ---------------------------------------------------------------------------


def matmuls_with_bias():
    x = var("x", 2, 8)
    return workload(outputs(*(R.add(R.matmul(x, var(f"w{k}", 8, 3 + k)), var(f"b{k}", 3 + k)) for k in range(3))))


def matmuls():
    x = var("x", 2, 8)
    return workload(outputs(*(R.matmul(x, var(f"w{k}", 8, 3 + k)) for k in range(3))))


def conv_bn():
    x = var("x", 1, 3, 6, 6)
    stats = [var(n, 4) for n in ("gamma", "beta", "mean", "var")]
    bn = R.nn.batch_norm(R.nn.conv2d(x, var("w", 4, 3, 3, 3), padding=1), *stats, axis=1, epsilon=1e-3, training=False)
    return workload(R.nn.relu(item(bn, 0)))


def bn():
    x = var("x", 2, 4, 3, 3)
    stats = [var(n, 4) for n in ("gamma", "beta", "mean", "var")]
    return workload(R.nn.relu(item(R.nn.batch_norm(x, *stats, axis=1, epsilon=1e-3, training=False), 0)))


def reshapes():
    x = var("x", 1, 4, 6, 6)

    def body(emit):
        chain = emit(R.reshape(emit(R.reshape(emit(R.reshape(x, (4, 36))), (2, 72))), (1, 4, 6, 6)))
        return R.add(emit(R.nn.relu(chain)), emit(R.reshape(x, (1, 4, 6, 6))))

    return bound([x], body)


# (pass, module, bind the parameters as constants first and fold constants after the pass).
# CombineParallelMatmul leaves matmuls of constant weights alone, so it runs on parameters only.
CASES = [
    ("CombineParallelMatmul", matmuls_with_bias, False),
    ("CombineParallelMatmul", matmuls, False),
    ("FoldBatchnormToConv2D", conv_bn, True),  # the pass matches constants only
    ("DecomposeOpsForInference", bn, False),
    ("DecomposeOpsForInference", bn, True),
    ("RemoveRedundantReshape", reshapes, False),
]


def run_pass(wl: Workload, name: str, bind: bool) -> Workload:
    mod = wl.mod
    passes = [getattr(relax.transform, name)()]
    if bind:
        mod = relax.transform.BindParams("main", {k: tvm.runtime.tensor(v) for k, v in wl.params.items()})(mod)
        passes.append(relax.transform.FoldConstant())
    mod = tvm.transform.Sequential(passes)(mod)
    names = {p.name for p in mod["main"].params}
    return Workload(mod, {} if bind else {k: v for k, v in wl.params.items() if k in names})


@pytest.mark.slow
@pytest.mark.parametrize("name, model, bind", CASES, ids=[f"{n}-{m.__name__}{'-bound' if b else ''}" for n, m, b in CASES])
def test_rules_match_the_pass(same_outputs, name, model, bind):
    wl = model()
    by_pass = run_pass(wl, name, bind)
    assert by_pass.graph.op_counts() != wl.graph.op_counts(), "the pass should change this module"

    mirror = [make() for make in rules.TVM_PASSES[name]]
    result = greedy(wl, mirror)
    unfolded = greedy(wl, mirror, fold_params=False).workload
    by_gsl = result.workload
    assert result.converged and sum(result.fired.values()) > 0
    assert tvm.relax.analysis.check_well_formed(by_gsl.mod)

    same_outputs(wl, by_gsl)
    same_outputs(by_pass, by_gsl)  # numerically the pass's module
    same_outputs(wl, unfolded)
    n_gsl, n_pass = sum(ops(by_gsl).values()), sum(ops(by_pass).values())
    print(f"\n{name} on {model.__name__}{' (params bound, constants folded)' if bind else ''}:")
    print(f"  ops: input {sum(ops(wl).values())}, pass {n_pass} {ops(by_pass)}, "
          f"GSL {n_gsl} {ops(by_gsl)} (without folding {sum(ops(unfolded).values())})")
    print(f"  lines: GSL rules {rule_lines(name)}; TVM pass: {pass_lines(name)}")
    assert n_gsl <= n_pass


def test_line_counting():
    source = 'def f(x):\n    """Doc\n    string."""\n    # a comment\n\n    return (x +\n            1)\n'
    assert code_lines(source) == 3
    assert cpp_code_lines("// c\n/* a\n b */\nint f() {\n\n  return 1;  // one\n}\n") == 3
