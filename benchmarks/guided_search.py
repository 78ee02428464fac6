"""The restart search (``optimize(..., search="restart")``) against plain saturation, like for like, on
TENSAT's seven graphs: TENSAT's settings and rules (``rules.tensat()``), the gpu model, the same time
limit; beside the MCTS follow-up's gain over its own TENSAT run (arXiv 2410.05534). Each run in its
own process, its result checked against the input numerically.

    python benchmarks/guided_search.py [--models bert,nasrnn] [--time-limit 60]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import in_child, machine, table, write_section  # noqa: E402
from run import max_diff  # noqa: E402
from tensat_table import MCTS, MODELS, MULTI_ITERATIONS, SETTINGS, gpu_model  # noqa: E402

SEARCHES = ("saturate", "restart")


def measure(model: str, search: str, time_limit: float) -> dict:
    """One optimize call on TENSAT's ``model`` with ``search``: its speedup under the gpu model, its
    rounds, seconds and numeric check."""
    from gsl_eq import models, optimize
    from gsl_eq.rules.sets import rule_set

    wl = models.tensat_model(model)
    settings = {**SETTINGS, "multi_iterations": MULTI_ITERATIONS.get(model, 1), "time_limit": time_limit}
    start = time.perf_counter()
    result = optimize(wl, rule_set("tensat"), cost=gpu_model("epilogues"), search=search, **settings)
    seconds = time.perf_counter() - start
    report = result.report
    inputs = wl.random_inputs(0)
    return {"model": model, "search": search, "speedup": 100 * (report.cost_before / report.cost_after - 1),
            "seconds": seconds, "rounds": len(report.rounds) or 1,
            "enodes": max([r["enodes"] for r in report.rounds] or [report.enodes]),
            "stops": ", ".join(sorted({r["stop_reason"] for r in report.rounds} or {str(report.stop_reason)})),
            "diff": max_diff(wl(**inputs), result.workload(**inputs))}


def section(rows: dict[str, dict[str, dict]], time_limit: float, total: float) -> str:
    """The table: per model, plain saturation's and the restart search's speedups, the gain in points
    beside the MCTS follow-up's, and whether the goal (a gain at least MCTS's, no result worse) holds."""
    lines, met = [], 0
    for model, runs in rows.items():
        plain, guided = runs["saturate"], runs["restart"]
        gain = guided["speedup"] - plain["speedup"]
        rerun, best = MCTS[model]
        mcts_gain = best - rerun
        ok = gain >= mcts_gain - 1e-9 and guided["speedup"] >= plain["speedup"] - 1e-9
        met += ok
        lines.append([model, f"{plain['speedup']:.1f} %", f"{guided['speedup']:.1f} %", f"{gain:+.1f}",
                      f"{rerun:.2f} -> {best:.2f} % ({mcts_gain:+.1f})", guided["rounds"], f"{guided['enodes']:,}",
                      guided["stops"], f"{plain['seconds']:.1f} / {guided['seconds']:.1f}",
                      "yes" if ok else "no", f"{max(plain['diff'], guided['diff']):.1e}"])
    head = (f"Machine: {machine()}. TENSAT's settings (node_limit={SETTINGS['node_limit']:,}, "
            f"iter_limit={SETTINGS['iter_limit']}, multi-pattern rules in the first iteration only, Inception-v3's "
            f"two; the cycle filter; the exact extractor), rules.tensat(), the gpu model (V100), each call within "
            f"{time_limit:g} s; {total:.0f} s in all. Speedup = cost before / after - 1 under the gpu model. "
            "MCTS = the follow-up's re-run of TENSAT and its own best, under TASO's measured costs: its gain is "
            "in points of its own speedups, ours in points of gsl_eq's plain saturation under the same settings. "
            f"Goal (gain at least MCTS's, never below plain saturation) met on {met} of {len(rows)}.\n\n")
    return head + table(["model", "saturate", "restart", "gain (points)", "MCTS (gain)", "rounds", "most e-nodes",
                         "rounds stopped by", "seconds (saturate / restart)", "goal", "max |diff|"], lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    start = time.perf_counter()
    rows: dict[str, dict[str, dict]] = {}
    for model in args.models.split(","):
        rows[model] = {search: in_child(measure, model, search, args.time_limit) for search in SEARCHES}
        print(model, {s: f"{r['speedup']:.1f} % in {r['seconds']:.1f} s" for s, r in rows[model].items()}, flush=True)
    write_section("guided-search", section(rows, args.time_limit, time.perf_counter() - start))
    print("wrote BENCHMARKS.md (guided-search)")


if __name__ == "__main__":
    main()
