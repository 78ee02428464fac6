"""Cost fidelity: does each cost model predict what TVM runs?

Two parts, every graph built through one schedule database (MetaSchedule design-space samples per
kernel) and timed in alternating rounds:

- pairs of equivalent subgraphs (a rewrite's two sides): each cost model's predicted ratio
  (rewritten / original) beside the measured one, whether it points the same way where the
  measured ratio is outside the noise band (the original against a second build of itself), and
  Kendall's tau between predicted and measured ratios per cost model, over the pairs and the
  zoo's variants;
  (the gpu model is there too: what a V100 would rank, beside this CPU's measurements);
- the zoo models at quick size (the input and the saturate result under roofline): the tvm
  model's predicted latency, by fused kernels and by the per-call approximation extraction
  uses, over the measured one.

    python benchmarks/cost_fidelity.py [--samples 4] [--models resnet50,bert] [--rounds 7]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from report import machine, table, write_section  # noqa: E402
from run import QUICK  # noqa: E402

MODELS = ("bert", "nasrnn", "resnext50", "nasnet_a", "inception_v3", "squeezenet", "vgg19", "resnet50")
ROUND_SECONDS = 0.05
#: Builds of the original besides the first, timed beside it: what builds of one graph differ by is noise.
AA_BUILDS = 3
COSTS = ("opcount", "roofline", "measured", "tvm", "tvm per call", "gpu")


# --- the pairs: (original, rewritten) as Relax expressions over the input "x" ----------------------

def _pairs() -> dict[str, Callable[[], tuple]]:
    from tvm import relax

    from gsl_eq.models.blocks import var

    op = relax.op

    def conv(x, w, pad=1):
        return op.nn.conv2d(x, w, padding=(pad, pad))

    def conv_bn():
        x, w = var("x", 1, 64, 32, 32), var("w", 64, 64, 3, 3)
        stats = [var(n, 64) for n in ("gamma", "beta", "mean", "var")]
        bn = relax.TupleGetItem(op.nn.batch_norm(conv(x, w), *stats, axis=1), 0)
        folded = op.add(conv(x, var("w_folded", 64, 64, 3, 3)), var("b_folded", 1, 64, 1, 1))
        return op.nn.relu(bn), op.nn.relu(folded)

    def conv_scale_shift():  # batch norm as the zoo decomposes it: scale and shift after the conv
        x, w = var("x", 1, 64, 32, 32), var("w", 64, 64, 3, 3)
        shifted = op.add(op.multiply(conv(x, w), var("scale", 1, 64, 1, 1)), var("shift", 1, 64, 1, 1))
        folded = op.add(conv(x, var("w_folded", 64, 64, 3, 3)), var("b_folded", 1, 64, 1, 1))
        return op.nn.relu(shifted), op.nn.relu(folded)

    def qkv():
        x = var("x", 1, 32, 256)
        three = [op.add(op.matmul(x, var(f"w{k}", 256, 256)), var(f"b{k}", 256)) for k in "qkv"]
        merged = op.add(op.matmul(x, var("w_qkv", 256, 768)), var("b_qkv", 768))
        split = op.split(merged, 3, axis=-1)
        return relax.Tuple(three), relax.Tuple([relax.TupleGetItem(split, k) for k in range(3)])

    def relu_concat():
        x, y = var("x", 1, 64, 32, 32), var("y", 1, 64, 32, 32)
        return op.nn.relu(op.concat([x, y], axis=1)), op.concat([op.nn.relu(x), op.nn.relu(y)], axis=1)

    def two_1x1_convs():
        x = var("x", 1, 64, 32, 32)
        two = [conv(x, var(f"w{k}", 64, 64, 1, 1), pad=0) for k in range(2)]
        split = op.split(conv(x, var("w_merged", 128, 64, 1, 1), pad=0), 2, axis=1)
        return relax.Tuple(two), relax.Tuple([relax.TupleGetItem(split, k) for k in range(2)])

    def matmul_transposed_weight():  # a transposed weight folded into the parameter
        x = var("x", 64, 256)
        return op.matmul(x, op.permute_dims(var("w", 512, 256))), op.matmul(x, var("w_t", 256, 512))

    def conv1x1_as_matmul(c: int, o: int):  # rules.cpu()'s rewrite
        def pair():
            x, w = var("x", 1, c, 32, 32), var("w", o, c, 1, 1)
            product = op.matmul(op.reshape(w, (o, c)), op.reshape(x, (1, c, 32 * 32)))
            return conv(x, w, pad=0), op.reshape(product, (1, o, 32, 32))

        return pair

    def channels_last(depthwise: bool = False, residual: bool = False, c: int = 64, size: int = 28):
        """A chain of two 3x3 convs (+ bias, relu; a shortcut add) in NCHW, and in NHWC between two transposes,
        the kernels and biases transposed as folding leaves them: rules.layouts()' rewrite."""
        def chain(nhwc: bool):
            x = var("x", 1, c, size, size)
            h = start = op.permute_dims(x, [0, 2, 3, 1]) if nhwc else x
            groups = c if depthwise else 1
            for k in range(2):
                shape = (3, 3, c // groups, c) if nhwc else (c, c // groups, 3, 3)
                layout = dict(data_layout="NHWC", kernel_layout="HWIO") if nhwc else {}
                h = op.add(op.nn.conv2d(h, var(f"w{k}", *shape), padding=(1, 1), groups=groups, **layout),
                           var(f"b{k}", *((1, 1, 1, c) if nhwc else (1, c, 1, 1))))
                if k == 0 or not residual:
                    h = op.nn.relu(h)
            if residual:
                h = op.nn.relu(op.add(h, start))
            return op.permute_dims(h, [0, 3, 1, 2]) if nhwc else h

        return lambda: (chain(False), chain(True))

    return {"conv+bn+relu vs folded": conv_bn, "conv*scale+shift+relu vs folded": conv_scale_shift,
            "3 matmul+bias vs merged+split": qkv, "relu(concat) vs concat(relu)": relu_concat,
            "two 1x1 convs vs merged+split": two_1x1_convs, "matmul(x, w^T) vs folded w^T": matmul_transposed_weight,
            "1x1 conv 256->64 vs matmul": conv1x1_as_matmul(256, 64),
            "1x1 conv 64->256 vs matmul": conv1x1_as_matmul(64, 256),
            "3x3 conv chain vs NHWC": channels_last(), "3x3 depthwise chain vs NHWC": channels_last(depthwise=True, c=144),
            "residual block vs NHWC": channels_last(residual=True)}


def main() -> None:
    from scipy.stats import kendalltau

    from gsl_eq import Workload, models, optimize, rules
    from gsl_eq.cost import get_cost_model, graph_cost
    from gsl_eq.cost.tvm_cost import TVMCost
    from gsl_eq.graph import Kind
    from gsl_eq.measure.schedule_db import ScheduleDatabase
    from gsl_eq.optimizer.selection import time_candidates

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--samples", type=int, default=4, help="design-space draws per kernel")
    parser.add_argument("--rounds", type=int, default=7, help="alternating timing rounds")
    args = parser.parse_args()
    schedules = ScheduleDatabase(samples=args.samples)
    tvm_model = TVMCost(schedules)
    models_by_name = {"opcount": get_cost_model("opcount"), "roofline": get_cost_model("roofline"),
                      "measured": get_cost_model("measured"), "tvm": tvm_model, "gpu": get_cost_model("gpu")}

    def per_call(graph) -> float:  # the sum extraction optimizes under the tvm model
        return sum(tvm_model(n.op, n.attrs, [i.type for i in n.inputs], n.type)
                   for n in graph.rpo() if n.kind is Kind.CALL)

    def predict(graph) -> dict[str, float]:
        costs = {name: graph_cost(graph, model) for name, model in models_by_name.items()}
        costs["tvm per call"] = per_call(graph)
        return costs

    def measure(original: Workload, rewritten: Workload) -> tuple[float, float, float, float]:
        """(original's seconds, rewritten's seconds, rewritten / original, noise band)."""
        # enough runs per round that a round lasts ROUND_SECONDS: a small graph runs in microseconds
        once = original.build(schedules=schedules).seconds(original.random_inputs(0), 10)
        timed = time_candidates([("a", original), *[("a again", original)] * AA_BUILDS, ("b", rewritten)],
                                schedules, rounds=args.rounds, number=max(10, round(ROUND_SECONDS / once)))
        a, copies, b = timed[0], timed[1:-1], timed[-1]
        noise = max([abs(c.seconds / a.seconds - 1) for c in copies] + [(max(a.rounds) - min(a.rounds)) / a.seconds / 2])
        return a.seconds, b.seconds, b.seconds / a.seconds, noise

    predicted: dict[str, list[float]] = {c: [] for c in COSTS}
    measured_ratios: list[float] = []
    agree: dict[str, list[bool]] = {c: [] for c in COSTS}
    pair_rows = []
    for label, make in _pairs().items():
        original_expr, rewritten_expr = make()
        # parameters stay inputs of the module (not folded), so both sides compute what they say
        original, rewritten = (Workload.from_expr(e, [v for v in ("x", "y") if _has(e, v)])
                               for e in (original_expr, rewritten_expr))
        assert len(original.graph.outputs) == len(rewritten.graph.outputs)
        _, _, ratio, noise = measure(original, rewritten)
        before, after = predict(original.graph), predict(rewritten.graph)
        row = [label, f"{ratio:.3f}", f"±{noise:.1%}"]
        for cost in COSTS:
            p = after[cost] / before[cost]
            predicted[cost].append(p)
            clear = abs(ratio - 1) > noise
            if clear:
                agree[cost].append((p < 1) == (ratio < 1) and p != 1)
            row.append(f"{p:.3f}" + ("" if not clear else " ok" if agree[cost][-1] else " WRONG"))
        measured_ratios.append(ratio)
        pair_rows.append(row)
        print(*row, sep="\t", flush=True)

    zoo_rows = []
    for name in filter(None, args.models.split(",")):
        wl = models.zoo_model(name, **QUICK[name]).fold_params()
        start = time.perf_counter()
        result = optimize(wl, rules.default(), mode="saturate", cost="roofline", node_limit=50_000, iter_limit=15,
                          time_limit=120)
        before, after = predict(wl.graph), predict(result.workload.graph)
        seconds_in, seconds_out, ratio, noise = measure(wl, result.workload)
        for cost in COSTS:
            predicted[cost].append(after[cost] / before[cost])
            clear = abs(ratio - 1) > noise
            if clear:
                p = predicted[cost][-1]
                agree[cost].append((p < 1) == (ratio < 1) and p != 1)
        measured_ratios.append(ratio)
        zoo_rows.append([name, f"{seconds_in * 1e3:.3f}", f"{before['tvm'] / seconds_in:.2f}",
                         f"{before['tvm per call'] / seconds_in:.2f}", f"{seconds_out * 1e3:.3f}",
                         f"{after['tvm'] / seconds_out:.2f}", f"{after['tvm per call'] / seconds_out:.2f}",
                         f"{ratio:.3f} ±{noise:.1%}", f"{after['tvm'] / before['tvm']:.3f}",
                         f"{after['roofline'] / before['roofline']:.3f}", f"{time.perf_counter() - start:.0f}"])
        print(*zoo_rows[-1], sep="\t", flush=True)

    taus = []
    for cost in COSTS:
        tau = kendalltau(predicted[cost], measured_ratios).statistic
        right = sum(agree[cost])
        taus.append([cost, f"{tau:.2f}", f"{right} of {len(agree[cost])}"])
    n_pairs = len(pair_rows)
    lines = [
        f"`python benchmarks/cost_fidelity.py --samples {args.samples} --rounds {args.rounds}` on {machine()}. "
        f"Every graph is built through one schedule database ({args.samples} design-space draws per kernel) and "
        f"timed in {args.rounds} alternating rounds of at least 10 runs and {ROUND_SECONDS * 1e3:.0f} ms (median round), beside {AA_BUILDS} more builds "
        "of the original: the noise band is the largest difference of such a build from the first, or half the "
        "spread of the original's rounds if larger. The pairs' parameters are random: both sides run the kernels "
        "the rewrite gives, and kernel times do not depend on the values. Ratios are rewritten / original (below 1: the rewrite is faster). A prediction is ok when it "
        "points the way of a measured ratio outside the noise band (a predicted tie is not), WRONG when it does "
        "not; no mark: the measurement is a tie. tvm prices a graph by its fused kernels; tvm per call is the "
        "per-call approximation extraction sums (`TVMCost.__call__`); measured times single ops with the default, "
        "unscheduled build. gpu prices a V100 (kernels by roofline at the share of the device their threads fill, plus a launch, epilogues fused): its column is what "
        "a GPU would rank, shown beside this CPU's measurements, not a prediction of them.",
        "",
        "### Pairs of equivalent subgraphs",
        "",
        table(["pair", "measured", "noise", *COSTS], pair_rows),
        "",
        "### Zoo models at quick size: the input and the saturate result (rules.default(), roofline)",
        "",
        "predicted / measured: the tvm model's latency over the measured one (1.00: exact); by fused kernels "
        "(tvm) and by the per-call sum (per call). result / input: measured, tvm's and roofline's ratios.",
        "",
        table(["model", "input (ms)", "tvm / measured", "per call / measured", "result (ms)", "tvm / measured",
               "per call / measured", "result / input, measured", "tvm", "roofline", "seconds"], zoo_rows),
        "",
        f"### Rank agreement over the {n_pairs} pairs and {len(zoo_rows)} zoo results",
        "",
        "Kendall's tau between predicted and measured ratios (1: the same order), and how many measured "
        "differences outside the noise each model points the right way.",
        "",
        table(["cost model", "Kendall tau", "right direction"], taus),
    ]
    write_section("cost-fidelity", "\n".join(lines))


def _has(expr, name: str) -> bool:
    from gsl_eq.workload.workload import _post_order
    from tvm import relax

    return any(isinstance(e, relax.Var) and e.name == name for e in _post_order(expr))


if __name__ == "__main__":
    main()
