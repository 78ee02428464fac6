"""Faster on this CPU: each zoo model optimized for TVM's CPU backend and timed beside its input, TVM's
own pass pipeline and PyTorch eager.

gsl_eq runs saturate mode with ``rules.default() + rules.cpu()`` and ``cost="tvm"``, priced through a
schedule database drawn with seed 0; once returning the cheapest extraction, once with measured
selection (``select="measured"``: the input and three more extractions timed under seed 0, a winner
confirmed under seed 1). Every variant is then timed through a database drawn with seed 2, so no
result is judged by the schedules it was chosen under. Each model runs in a fresh process.

    python benchmarks/cpu_speedup.py [--models resnet50,mobilenet_v2] [--full] [--samples 4]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))
from report import in_child, machine, table, write_section  # noqa: E402

from gsl_eq.models import ZOO  # noqa: E402

LIMITS = dict(node_limit=50_000, iter_limit=15, time_limit=120.0)
ROUNDS = 7
ROUND_SECONDS = 0.2
CHOOSE_SEED, TIME_SEED = 0, 2  # measured selection confirms under seed 1


def measure(name: str, full: bool, samples: int) -> dict:
    """One model's row: the three variants timed under the second database, PyTorch eager beside."""
    from run import eager_row, max_diff, tvm_pipeline

    from gsl_eq import optimize, rules
    from gsl_eq.cost.tvm_cost import TVMCost
    from gsl_eq.models.registry import load_model
    from gsl_eq.measure.schedule_db import ScheduleDatabase
    from gsl_eq.optimizer.selection import time_candidates

    wl = load_model(name, quick=not full)
    start = time.perf_counter()
    chosen_under = ScheduleDatabase(samples=samples, seed=CHOOSE_SEED)
    result = optimize(wl, [*rules.default(), *rules.cpu()], mode="saturate", cost=TVMCost(chosen_under), **LIMITS)
    optimize_s = time.perf_counter() - start
    selected = optimize(wl, [*rules.default(), *rules.cpu()], mode="saturate", cost=TVMCost(chosen_under),
                        select="measured", schedules=chosen_under, **LIMITS)
    variants = [("input", wl), ("tvm", tvm_pipeline(wl)), ("gsl_eq", result.workload),
                ("selected", selected.workload)]
    schedules = ScheduleDatabase(samples=samples, seed=TIME_SEED)
    once = wl.build(schedules=schedules).seconds(wl.random_inputs(0), 3)
    timed = {c.label: c for c in time_candidates(variants, schedules, rounds=ROUNDS,
                                                 number=max(3, round(ROUND_SECONDS / once)))}
    inputs = wl.random_inputs(0)
    expected = timed["input"].workload(**inputs)
    before, after = wl.graph.op_counts(), result.workload.graph.op_counts()
    row = {"model": name, "optimize_s": optimize_s, "rewrites": dict(result.report.applications),
           "convs": before.get("relax.nn.conv2d", 0), "convs_after": after.get("relax.nn.conv2d", 0),
           "diff_tvm": max_diff(expected, timed["tvm"].workload(**inputs)),
           "diff_gsl_eq": max_diff(expected, timed["gsl_eq"].workload(**inputs)),
           "diff_selected": max_diff(expected, timed["selected"].workload(**inputs)),
           "selected_input": selected.report.input_returned,
           "selection": next((n for n in selected.report.notes if n.startswith("measured selection")), "")}
    row.update({f"{label}_ms": c.seconds * 1e3 for label, c in timed.items()})
    row.update(eager_row(wl, expected))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(ZOO))
    parser.add_argument("--full", action="store_true", help="published sizes (default: the suite's quick sizes)")
    parser.add_argument("--samples", type=int, default=4, help="design-space draws per kernel")
    args = parser.parse_args()
    rows = []
    for name in args.models.split(","):
        row = in_child(measure, name, args.full, args.samples)
        row.setdefault("model", name)
        print(row, flush=True)
        rows.append(row)
    lines = [
        f"`python benchmarks/cpu_speedup.py{' --full' if args.full else ''} --samples {args.samples}` on "
        f"{machine()}. Models at {'published sizes' if args.full else 'the suite quick sizes'}, batch 1. gsl_eq: "
        "saturate mode, rules.default() + rules.cpu(), cost=\"tvm\" priced through a schedule database of "
        f"{args.samples} MetaSchedule design-space draws per kernel (seed {CHOOSE_SEED}), limits 50000 e-nodes, "
        "15 iterations, 120 s; its cheapest extraction (gsl_eq), and the one measured selection returns "
        f"(selected: the input and three more extractions timed under seed {CHOOSE_SEED}, a winner confirmed "
        "under seed 1; the input, marked so, unless one is faster under both: optimize's input with its "
        "parameters folded into constants, its ratios to the input that and the timing noise). TVM passes: the suite's pipeline (BENCHMARKS.md, suite). All three variants timed "
        f"through an independently drawn database (seed {TIME_SEED}, {args.samples} draws per kernel), "
        f"{ROUNDS} alternating rounds of at least {ROUND_SECONDS * 1e3:.0f} ms, median. Speedups above 1: gsl_eq "
        "runs faster. PyTorch eager: the input model op by op (benchmarks/torch_eager.py), as many threads as "
        "cores; eager / selected above 1: gsl_eq + TVM runs faster than PyTorch. Check: the largest output "
        "difference from the input's, relative to its largest output value.",
        "",
        table(["model", "input (ms)", "TVM passes (ms)", "gsl_eq (ms)", "vs input", "vs TVM passes", "selected (ms)",
               "vs input", "vs TVM passes", "PyTorch eager (ms)", "eager / selected", "convs left", "optimize (s)",
               "check"],
              [_cells(r) for r in rows]),
    ]
    lines += ["", "What measured selection decided:", ""]
    lines += [f"- {r['model']}: {r['selection'].removeprefix('measured selection: ')}" for r in rows if "error" not in r]
    notes = [f"{r['model']}: {r['error']}" for r in rows if "error" in r]
    notes += [f"{r['model']}: no PyTorch eager time ({r['eager_note']})" for r in rows if r.get("eager_note")]
    if notes:
        lines += ["", "Not measured: " + "; ".join(notes) + "."]
    write_section("cpu-speedup-full" if args.full else "cpu-speedup", "\n".join(lines))


def _cells(r: dict) -> list[str]:
    if "error" in r:
        return [r["model"], *["-"] * 13]
    eager = r.get("latency_eager_ms")
    check = max(r["diff_tvm"], r["diff_gsl_eq"], r["diff_selected"])
    return [r["model"], f"{r['input_ms']:.3f}", f"{r['tvm_ms']:.3f}", f"{r['gsl_eq_ms']:.3f}",
            f"{r['input_ms'] / r['gsl_eq_ms']:.2f}x", f"{r['tvm_ms'] / r['gsl_eq_ms']:.2f}x",
            f"{r['selected_ms']:.3f}{' (input)' if r['selected_input'] else ''}", f"{r['input_ms'] / r['selected_ms']:.2f}x",
            f"{r['tvm_ms'] / r['selected_ms']:.2f}x",
            f"{eager:.3f}" if eager else "n/a", f"{eager / r['selected_ms']:.2f}x" if eager else "n/a",
            f"{r['convs_after']} of {r['convs']}", f"{r['optimize_s']:.0f}",
            f"{check:.1e} {'pass' if check < 1e-3 else 'FAIL'}"]


if __name__ == "__main__":
    main()
