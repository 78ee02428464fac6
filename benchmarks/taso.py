"""TASO's substitutions (rules.tensat()) against the library's own rules, on TENSAT's seven models
and ResNet-50 (the rest of the zoo).

For each model and rule set, saturate mode with node_limit=50_000 and iter_limit=15 (and the
suite's time limit); TASO's rule sets also under TENSAT's two other settings (merges searched in
the first iteration only, iter_multi=1, and its cycle filter): e-nodes, iterations, stop reason, saturation and extraction time, ILP status
and gap, roofline cost before and after (with the measured model's after/before too, with
``--measured``), a numeric check against the original; greedy mode's roofline cost with the
default rules for comparison. TENSAT's own recorded figures close the table.

    python benchmarks/taso.py [--full] [--models nasrnn,bert] [--measured]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from report import in_child as run_in_child, machine, table, write_section  # noqa: E402
from run import LIMITS, QUICK, max_diff  # noqa: E402

MODELS = ("bert", "nasrnn", "resnext50", "nasnet_a", "inception_v3", "squeezenet", "vgg19", "resnet50")
#: (rule set, settings): "ours" (every rule every iteration, cycles kept for the extractor to
#: avoid) or "TENSAT" (multi_iterations=1, cycles="filter").
RUNS = (("tensat", "ours"), ("tensat", "TENSAT"), ("tensat+default", "ours"), ("tensat+default", "TENSAT"),
        ("default+algebraic", "ours"))
SETTINGS = {"ours": {}, "TENSAT": {"multi_iterations": 1, "cycles": "filter"}}
#: TENSAT's recorded figures (its repository's with_release/*_stats.txt: e-nodes, iterations,
#: saturation seconds) and the speedups over the original graph its paper reports (TASO's
#: measured cost model, GPU).
TENSAT = {
    "bert": ("1,569", "8", "0.49", "9.2 %"), "nasrnn": ("1,990", "3", "0.07", "68.9 %"),
    "resnext50": ("371", "6", "0.46", "8.8 %"), "nasnet_a": ("7,215", "15", "7.06", "7.3 %"),
    "inception_v3": ("-", "-", "-", "10.0 %"), "squeezenet": ("-", "-", "-", "24.5 %"),
    "vgg19": ("-", "-", "-", "8.9 %"), "resnet50": ("-", "-", "-", "not in TENSAT"),
}


def rules_of(name: str) -> list:
    from gsl_eq import rules

    return {"tensat": rules.tensat, "tensat+default": lambda: [*rules.tensat(), *rules.default()],
            "default+algebraic": lambda: [*rules.default(), *rules.algebraic()]}[name]()


def measure(model: str, rule_set: str, settings: str, full: bool, measured: bool) -> dict:
    from gsl_eq import models, optimize, rules
    from gsl_eq.cost import get_cost_model, graph_cost

    wl = models.zoo_model(model, **({} if full else QUICK[model]))
    roofline = get_cost_model("roofline")
    start = time.perf_counter()
    result = optimize(wl, rules_of(rule_set), mode="saturate", cost=roofline, extractor="ilp", **LIMITS,
                      **SETTINGS[settings])
    r = result.report
    row = {"model": model, "rules": rule_set, "settings": settings, "enodes": r.enodes, "left_out": r.left_out, "iterations": len(r.iterations),
           "stop": r.stop_reason, "saturate_s": r.timings["saturate"], "extract_s": r.timings["extract"],
           "total_s": time.perf_counter() - start, "ilp": r.extraction_status, "gap": r.gap, "solver": r.solver,
           "before": r.cost_before, "after": r.cost_after}
    inputs = wl.random_inputs(0)
    row["diff"] = max_diff(wl(**inputs), result.workload(**inputs))
    if rule_set == "default+algebraic":
        row["greedy"] = optimize(wl, rules.default(), mode="greedy", cost=roofline).report.cost_after
    if measured:
        timed = get_cost_model("measured")
        row["measured_ratio"] = graph_cost(wl.fold_params().graph, timed) / graph_cost(result.workload.graph, timed)
    return row


def in_child(*args) -> dict:
    """:func:`measure` in a fresh process; an error row names the run."""
    row = run_in_child(measure, *args)
    return row if "error" not in row else {"model": args[0], "rules": args[1], "settings": args[2], **row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the published sizes (default: the suite's quick sizes)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--measured", action="store_true", help="also price before and after with the measured model")
    args = parser.parse_args()
    rows = []
    for model in args.models.split(","):
        for rule_set, settings in RUNS:
            rows.append(in_child(model, rule_set, settings, args.full, args.measured))
            print(rows[-1], flush=True)
    body = []
    for row in rows:
        if "error" in row:
            body.append([row["model"], row["rules"], row["settings"], "error: " + row["error"], *[""] * 10])
            continue
        speedup = row["before"] / row["after"] if row["after"] else float("nan")
        gap = "-" if row["gap"] is None else f"{row['gap']:.1%}"
        body.append([row["model"], row["rules"], row["settings"], row["enodes"], row["left_out"], row["iterations"],
                     row["stop"], f"{row['saturate_s']:.2f}", f"{row['extract_s']:.2f}",
                     f"{row['ilp']} ({gap}, {row['solver'] or '-'})",
                     f"{row['before'] * 1e6:.1f}", f"{row['after'] * 1e6:.1f}", f"{speedup:.3f}x",
                     f"{row['greedy'] * 1e6:.1f}" if "greedy" in row else "",
                     f"{row['measured_ratio']:.3f}x" if "measured_ratio" in row else "-",
                     f"{row['diff']:.1e}"])
    size = "published sizes" if args.full else "quick sizes (benchmarks/run.py's QUICK)"
    lines = [
        f"`python benchmarks/taso.py{' --full' if args.full else ''}{' --measured' if args.measured else ''}` "
        f"on {machine()}; {size}; saturate mode with node_limit={LIMITS['node_limit']}, "
        f"iter_limit={LIMITS['iter_limit']}, time_limit={LIMITS['time_limit']:g} s, ILP extraction. settings: ours = "
        "every rule searched in every iteration, the e-graph's cycles kept for the extractor to avoid; TENSAT = "
        "TENSAT's published runs' iter_multi=1 (`multi_iterations=1`: rules with several source outputs searched "
        "in the first iteration only) and its cycle filter (`cycles=\"filter\"`: the e-nodes that would close a "
        "cycle left out, latest made first; left out = how many). ILP (gap, solver). Costs in us "
        "under the roofline model; speedup = before / after; greedy = greedy mode with rules.default(). "
        "measured = before / after under the measured model. diff = largest relative difference of the outputs.",
        "",
        table(["model", "rules", "settings", "e-nodes", "left out", "iterations", "stop", "saturate (s)",
               "extract (s)", "ILP (gap, solver)",
               "before (us)", "after (us)", "speedup", "greedy (us)", "measured", "diff"], body),
        "",
        "TENSAT's own figures (its repository's with_release/*_stats.txt; speedups from its paper, TASO's "
        "measured cost model on a GPU; published sizes):",
        "",
        table(["model", "e-nodes", "iterations", "saturation (s)", "reported speedup"],
              [[m, *TENSAT[m]] for m in args.models.split(",")]),
    ]
    write_section("taso-full" if args.full else "taso-quick", "\n".join(lines))


if __name__ == "__main__":
    main()
