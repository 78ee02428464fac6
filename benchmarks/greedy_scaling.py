"""Greedy mode's match-and-rewrite time against graph size, side by side with TVM's relax.dpl.

The graph repeats a block ``h = relu(conv2d(h, a) + conv2d(h, b))``; both tools
apply the same rewrite (seed 002's diamond rule: conv2d(x, a) + conv2d(x, b) ->
conv2d(x, a + b) when the attributes agree and the kernels have one shape) to
every block. Timed: gsl_eq's rewrite on its graph (``rewrite``), and the whole
Relax -> graph -> rewrite -> Relax trip (``end to end``); for dpl,
``rewrite_call`` on the Relax function. Each figure is the median of several runs.

    python benchmarks/greedy_scaling.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import tvm_ffi
from tvm import relax
from tvm.relax.dpl import is_op, wildcard, rewrite_call

from report import machine, table, write_section

from gsl_eq import rules
from gsl_eq.graph import from_relax, to_relax
from gsl_eq.greedy import rewrite_graph

R = relax.op
SIZES = (1_000, 2_000, 4_000, 8_000, 16_000)
NODES_PER_BLOCK = 6  # two kernels, two convs, an add and a relu


def dpl_diamond():
    """The same rule in TVM's pattern language: a pattern and an imperative rewriter."""
    x, w1, w2 = wildcard(), wildcard(), wildcard()
    conv1, conv2 = is_op("relax.nn.conv2d")(x, w1), is_op("relax.nn.conv2d")(x, w2)
    pattern = is_op("relax.add")(conv1, conv2)
    same = ("strides", "padding", "dilation", "groups", "data_layout", "kernel_layout", "out_layout", "out_dtype")

    def rewriter(expr, matches):
        a, b = matches[conv1], matches[conv2]
        if any(not tvm_ffi.structural_equal(getattr(a.attrs, k), getattr(b.attrs, k)) for k in same):
            return expr
        if not tvm_ffi.structural_equal(matches[w1].ty, matches[w2].ty):
            return expr
        kernel = R.add(matches[w1], matches[w2])
        return relax.Call(a.op, [matches[x], kernel], a.attrs)

    return pattern, rewriter


def model(blocks: int) -> tvm_ffi.Object:
    x = relax.Var("x", relax.TensorType((1, 4, 4, 4), "float32"))
    kernels = [relax.Var(f"{n}{k}", relax.TensorType((4, 4, 1, 1), "float32")) for k in range(blocks) for n in "ab"]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *kernels]):
        with bb.dataflow():
            h = x
            for a, b in zip(kernels[::2], kernels[1::2]):
                h = bb.emit(R.nn.relu(R.add(R.nn.conv2d(h, a), R.nn.conv2d(h, b))))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def timed(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rule, (pattern, rewriter) = rules.diamond_conv_add(), dpl_diamond()
    rows = []
    for size in SIZES:
        mod = model(size // NODES_PER_BLOCK)
        graph = from_relax(mod)
        t_rewrite, (new_graph, fired, _, _) = timed(lambda: rewrite_graph(graph, rule), args.repeat)
        t_e2e, _ = timed(lambda: to_relax(rewrite_graph(from_relax(mod), rule)[0]), args.repeat)
        t_dpl, new_func = timed(lambda: rewrite_call(pattern, rewriter, mod["main"]), args.repeat)
        dpl_convs = sum(1 for b in new_func.body.blocks for x in b.bindings
                        if isinstance(x.value, relax.Call) and getattr(x.value.op, "name", "") == "relax.nn.conv2d")
        assert fired == size // NODES_PER_BLOCK == dpl_convs, (fired, dpl_convs)
        assert new_graph.op_counts()["relax.nn.conv2d"] == fired
        n = len(graph)
        rows.append([n, fired, f"{t_rewrite * 1e3:.1f}", f"{t_rewrite / n * 1e6:.1f}", f"{t_e2e * 1e3:.1f}",
                     f"{t_e2e / n * 1e6:.1f}", f"{t_dpl * 1e3:.1f}", f"{t_dpl / n * 1e6:.1f}",
                     f"{t_rewrite / t_dpl:.2f}", f"{t_e2e / t_dpl:.2f}"])
        print(*rows[-1], sep="\t", flush=True)
    body = "\n\n".join([
        "## Greedy mode scaling (benchmarks/greedy_scaling.py)",
        f"Machine: {machine()}. Median of {args.repeat} runs per figure.",
        "Seed 002's diamond rule applied to every block of a chain of `relu(conv2d(h, a) + conv2d(h, b))` "
        "blocks, by gsl_eq's greedy executor and by TVM's `relax.dpl.rewrite_call` with the same checks. "
        "*rewrite* is gsl_eq's match-and-rewrite on its graph; *end to end* adds loading the Relax module "
        "into the graph and emitting the result back as Relax. Ratios are gsl_eq time / dpl time (below 1: gsl_eq is faster).",
        table(["nodes", "rewrites", "rewrite ms", "rewrite µs/node", "end to end ms", "end to end µs/node",
               "dpl ms", "dpl µs/node", "rewrite / dpl", "end to end / dpl"], rows),
    ])
    write_section("greedy_scaling", body)


if __name__ == "__main__":
    main()
