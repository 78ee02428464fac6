"""The restart search (``optimize(..., search="restart")``) against plain saturation, like for like.

1. *tensat*: TENSAT's seven graphs under TENSAT's settings and rules (``rules.tensat()``), the gpu model,
   the same time limit; beside the MCTS follow-up's gain over its own TENSAT run (arXiv 2410.05534).
2. *zoo*: the zoo's networks whose e-graphs stop at a limit under ``tensat+default`` with
   multi-pattern rules in every iteration (BENCHMARKS.md's tensat-table), same model and limits.

Each run in its own process, its result checked against the input numerically.

    python benchmarks/guided_search.py [--parts tensat,zoo] [--models bert,nasrnn] [--time-limit 60]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import in_child, machine, table, write_section  # noqa: E402
from run import max_diff  # noqa: E402
from tensat_table import MCTS, MODELS, MULTI_ITERATIONS, SETTINGS, activations_apart, gpu_model, tensat_price  # noqa: E402

SEARCHES = ("saturate", "restart")
#: The zoo's networks whose e-graphs stop at a limit under tensat+default (BENCHMARKS.md, tensat-table).
ZOO_AT_LIMIT = ("nasrnn", "resnext50", "nasnet_a", "inception_v3")


def measure(model: str, search: str, time_limit: float, part: str = "tensat", as_tensat: bool = False) -> dict:
    """One optimize call with ``search``: TENSAT's ``model`` under its settings and rules (``part="tensat"``)
    or the zoo's under tensat+default, merges in every iteration (``"zoo"``); its speedup under the gpu
    model (``as_tensat``: optimized under TASO's fusion and priced as TENSAT's runs price), its rounds,
    seconds and numeric check."""
    from gsl_eq import models, optimize
    from gsl_eq.rules.sets import rule_set

    if part == "tensat":
        wl, rules = models.tensat_model(model), rule_set("tensat")
        settings = {**SETTINGS, "multi_iterations": MULTI_ITERATIONS.get(model, 1), "time_limit": time_limit}
    else:
        wl, rules = models.zoo_model(model), rule_set("tensat+default")
        settings = {**SETTINGS, "multi_iterations": None, "cycles": "keep", "time_limit": time_limit}
    start = time.perf_counter()
    result = optimize(wl, rules, cost=gpu_model("activations" if as_tensat else "epilogues"), search=search, **settings)
    seconds = time.perf_counter() - start
    report = result.report
    if as_tensat:
        apart = activations_apart(model)
        report.cost_before = tensat_price(wl.fold_params().graph, apart, False)
        report.cost_after = tensat_price(result.workload.graph, apart, True)
    inputs = wl.random_inputs(0)
    return {"model": model, "search": search, "speedup": 100 * (report.cost_before / report.cost_after - 1),
            "seconds": seconds, "rounds": len(report.rounds) or 1,
            "enodes": max([r["enodes"] for r in report.rounds] or [report.enodes]),
            "stops": ", ".join(sorted({r["stop_reason"] for r in report.rounds} or {str(report.stop_reason)})),
            "diff": max_diff(wl(**inputs), result.workload(**inputs))}


def section(rows: dict[str, dict[str, dict]], time_limit: float, total: float) -> str:
    """The table: per model, plain saturation's and the restart search's speedups, the gain in points
    beside the MCTS follow-up's, and whether the goal (a gain at least MCTS's, no result worse) holds."""
    lines, met, met_tensat = [], 0, 0
    for model, runs in rows.items():
        plain, guided = runs["saturate"], runs["restart"]
        gain = guided["speedup"] - plain["speedup"]
        tensat_gain = runs["restart as TENSAT prices"]["speedup"] - runs["saturate as TENSAT prices"]["speedup"]
        rerun, best = MCTS[model]
        mcts_gain = best - rerun
        ok = gain >= mcts_gain - 1e-9 and guided["speedup"] >= plain["speedup"] - 1e-9
        ok_tensat = tensat_gain >= mcts_gain - 1e-9 and tensat_gain >= -1e-9
        met, met_tensat = met + ok, met_tensat + ok_tensat
        lines.append([model, f"{plain['speedup']:.1f} %", f"{guided['speedup']:.1f} %", f"{gain:+.1f}",
                      f"{runs['saturate as TENSAT prices']['speedup']:.1f} -> "
                      f"{runs['restart as TENSAT prices']['speedup']:.1f} % ({tensat_gain:+.1f})",
                      f"{rerun:.2f} -> {best:.2f} % ({mcts_gain:+.1f})", guided["rounds"], f"{guided['enodes']:,}",
                      guided["stops"], f"{plain['seconds']:.1f} / {guided['seconds']:.1f}",
                      ("yes" if ok else "no") + " / " + ("yes" if ok_tensat else "no"),
                      f"{max(r['diff'] for r in runs.values()):.1e}"])
    head = (f"Machine: {machine()}. TENSAT's settings (node_limit={SETTINGS['node_limit']:,}, "
            f"iter_limit={SETTINGS['iter_limit']}, multi-pattern rules in the first iteration only, Inception-v3's "
            f"two; the cycle filter; the exact extractor), rules.tensat(), the gpu model (V100), each call within "
            f"{time_limit:g} s; {total:.0f} s in all. Speedup = cost before / after - 1 under the gpu model. "
            "MCTS = the follow-up's re-run of TENSAT and its own best, under TASO's measured costs: its gain is "
            "in points of its own speedups, ours in points of gsl_eq's plain saturation under the same settings. "
            "As TENSAT prices: optimized under TASO's fusion (activations only) and priced as TENSAT's runs price "
            "(benchmarks/tensat_table.py's tensat_price). Goal (gain at least MCTS's, never below plain saturation) "
            f"met on {met} of {len(rows)} under the gpu model, {met_tensat} of {len(rows)} as TENSAT prices.\n\n")
    return head + table(["model", "saturate", "restart", "gain (points)", "as TENSAT prices: saturate -> restart (gain)",
                         "MCTS (gain)", "rounds", "most e-nodes", "rounds stopped by", "seconds (saturate / restart)",
                         "goal (gpu / as TENSAT)", "max |diff|"], lines)


def zoo_section(rows: dict[str, dict[str, dict]], time_limit: float, total: float) -> str:
    """The zoo's table: plain saturation's and the restart search's speedups where the e-graph fills its limit."""
    lines = [[model, f"{runs['saturate']['speedup']:.1f} %", runs["saturate"]["stops"],
              f"{runs['restart']['speedup']:.1f} %", runs["restart"]["rounds"], runs["restart"]["stops"],
              f"{runs['restart']['speedup'] - runs['saturate']['speedup']:+.1f}",
              f"{runs['saturate']['seconds']:.1f} / {runs['restart']['seconds']:.1f}",
              f"{max(runs['saturate']['diff'], runs['restart']['diff']):.1e}"] for model, runs in rows.items()]
    head = (f"Machine: {machine()}. The zoo's networks under tensat+default with multi-pattern rules in every "
            f"iteration, node_limit={SETTINGS['node_limit']:,}, the exact extractor, the gpu model, each call within "
            f"{time_limit:g} s; {total:.0f} s in all.\n\n")
    return head + table(["model", "saturate", "stopped by", "restart", "rounds", "rounds stopped by", "gain (points)",
                         "seconds (saturate / restart)", "max |diff|"], lines)


def run_part(part: str, models: list[str], time_limit: float) -> dict[str, dict[str, dict]]:
    rows: dict[str, dict[str, dict]] = {}
    for model in models:
        rows[model] = {search: in_child(measure, model, search, time_limit, part) for search in SEARCHES}
        if part == "tensat":
            rows[model].update({f"{search} as TENSAT prices": in_child(measure, model, search, time_limit, part, True)
                                for search in SEARCHES})
        print(part, model, {s: f"{r['speedup']:.1f} % in {r['seconds']:.1f} s" for s, r in rows[model].items()},
              flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="tensat,zoo")
    parser.add_argument("--models", default=None, help="comma-separated (default: every model of the part)")
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    for part in args.parts.split(","):
        start = time.perf_counter()
        models = args.models.split(",") if args.models else list(MODELS if part == "tensat" else ZOO_AT_LIMIT)
        rows = run_part(part, models, args.time_limit)
        total = time.perf_counter() - start
        if part == "tensat":
            write_section("guided-search", section(rows, args.time_limit, total))
        else:
            write_section("guided-search-zoo", zoo_section(rows, args.time_limit, total))
        print(f"wrote BENCHMARKS.md (guided-search, {part})")


if __name__ == "__main__":
    main()
