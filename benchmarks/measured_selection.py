"""Measured selection on the zoo: is the result of optimize(select="measured") ever slower than its input?

For each zoo model at the suite's quick size, and the issue's ResNet bottleneck (256 -> 64 -> 256
channels at 56 x 56): saturate mode with rules.default() under a cost model (``tvm`` by default:
fused kernels as the schedule database schedules them), then select="measured" among 4 distinct
candidates (the input, the result, the ILP's next cheapest extractions, the greedy ones under the
cheap cost models) and TVM's own passes' result, every one built through one schedule database
(MetaSchedule design-space samples per kernel); a candidate wins over the baseline (the input, or
TVM's passes' result where it wins over the input) only if it is faster beyond the noise there,
again under a second, independently seeded draw, and again under TVM's default build. The returned graph is then timed again against the
input under two schedule tables: the selection's, and a third one drawn independently of both
draws the selection used (the check that a win is not a lucky draw), each beside more builds of the
input (their differences are the noise band); and against TVM's own passes on the same module.

    python benchmarks/measured_selection.py [--models resnet50,bert] [--samples 4] [--cost tvm]
    python benchmarks/measured_selection.py --models resnet_bottleneck --rules default+algebraic

Rules other than ``default`` write a section of their own (``select-measured-<rules>``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from report import machine, table, write_section  # noqa: E402
from run import QUICK, tvm_pipeline  # noqa: E402

#: Builds of the input besides the first, timed beside it: what builds of one graph differ by is noise.
AA_BUILDS = 3
ROUNDS = 7
#: The seed of the schedule table the result is judged under, apart from the selection's two draws
#: (the selection's database's seed and that seed + 1).
JUDGE_SEED = 7

MODELS = ("bert", "nasrnn", "resnext50", "nasnet_a", "inception_v3", "squeezenet", "vgg19", "resnet50",
          "resnet_bottleneck")


def model(name: str):
    from gsl_eq import models

    if name == "resnet_bottleneck":
        return models.resnet_bottleneck(ch=256, mid=64, size=56)
    return models.zoo_model(name, **QUICK[name])


def versus_input(wl, result, passes, schedules) -> tuple[float, float, float]:
    """result / input, its noise band and result / TVM passes, timed under ``schedules``."""
    from gsl_eq.optimizer.selection import time_candidates

    again = time_candidates([("input", wl), *[("input again", wl)] * AA_BUILDS, ("result", result),
                             ("TVM passes", passes)], schedules, rounds=ROUNDS, seed=1)
    first, copies, out, tvm_passes = again[0], again[1:-2], again[-2], again[-1]
    noise = max([abs(c.seconds / first.seconds - 1) for c in copies]
                + [(max(first.rounds) - min(first.rounds)) / first.seconds / 2])
    return out.seconds / first.seconds, noise, out.seconds / tvm_passes.seconds


def main() -> None:
    from gsl_eq import optimize
    from gsl_eq.measure.schedule_db import ScheduleDatabase
    from gsl_eq.rules.sets import rule_set

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--samples", type=int, default=4, help="design-space draws per kernel")
    parser.add_argument("--cost", default="tvm", help="the cost model saturate mode extracts with")
    parser.add_argument("--rules", default="default", help="a rule set or a sum of them (default+algebraic)")
    args = parser.parse_args()
    schedules = ScheduleDatabase(samples=args.samples)
    judge = schedules.reseeded(JUDGE_SEED)
    rows = []
    for name in args.models.split(","):
        wl = model(name)
        start = time.perf_counter()
        result = optimize(wl, rule_set(args.rules), mode="saturate", cost=args.cost, node_limit=50_000, iter_limit=15,
                          time_limit=120, select="measured", candidates=4, schedules=schedules)
        total = time.perf_counter() - start
        timed = result.report.candidates
        picked = next(c for c in timed if c["returned"])
        second = [f"{c['label']} {check['second draw']['candidate'] * 1e3:.3f} against {check['against']} "
                  f"{check['second draw']['baseline'] * 1e3:.3f}" for c in timed for check in c.get("confirmed", [])
                  if "second draw" in check]
        passes = tvm_pipeline(wl)
        ratios = [versus_input(wl, result.workload, passes, db) for db in (schedules, judge)]
        inputs = wl.random_inputs(0)
        got, want = result.workload(**inputs), wl(**inputs)
        pairs = zip(got, want) if isinstance(got, tuple) else [(got, want)]
        diff = max(float(abs(a - b).max() / max(1.0, abs(b).max())) for a, b in pairs)
        within = all(ratio <= 1 + noise for ratio, noise, _ in ratios)
        faster = all(ratio < 1 - noise and passes_ratio < 1 - noise for ratio, noise, passes_ratio in ratios)
        rows.append([name, "; ".join(f"{c['label']}: {c['seconds'] * 1e3:.3f}" for c in timed),
                     "; ".join(second) or "-", picked["label"],
                     *(f"{ratio:.3f} ±{noise:.1%}" for ratio, noise, _ in ratios), "yes" if within else "NO",
                     *(f"{passes_ratio:.3f}" for _, _, passes_ratio in ratios), "yes" if faster else "no",
                     f"{total:.0f}", f"{diff:.1e}"])
        print(*rows[-1], sep="\t", flush=True)
    chosen = "" if args.models == ",".join(MODELS) else f" --models {args.models}"
    named = "" if args.rules == "default" else f" --rules {args.rules}"
    lines = [
        f"`python benchmarks/measured_selection.py{chosen} --samples {args.samples} --cost {args.cost}{named}` on "
        f"{machine()}; "
        "quick sizes (benchmarks/run.py's QUICK) and the ResNet bottleneck 256 -> 64 -> 256 at 56 x 56; saturate "
        f"mode, the rules {args.rules}, {args.cost} cost, then `select=\"measured\"` with 4 candidates and TVM's "
        f"passes' result, all built through one schedule database (draw A: {args.samples} design-space draws per "
        f"kernel, seed {schedules.seed}) and timed in 5 alternating rounds of 10 runs; a candidate wins only if "
        "faster than the baseline (the input, or TVM's passes' result where that wins over it) beyond the noise "
        f"under draw A, again under draw B (seed {schedules.seed + 1}) and under TVM's default build, both "
        "rebuilt and timed anew. Times in ms (median round). result / input: the "
        f"returned graph against the input, timed again after the selection ({ROUNDS} fresh alternating rounds, "
        f"other inputs) beside {AA_BUILDS} more builds of the input, under draw A and under draw C (seed "
        f"{JUDGE_SEED}, independent of both draws the selection saw); ± the noise: the largest difference of a "
        "further build of the input from the first, or half the spread of the input's rounds if larger. within "
        "noise: result / input <= 1 + noise under both A and C. result / TVM passes: against TVM's passes on the "
        "same module (benchmarks/run.py's tvm_pipeline); faster than both: result / input and result / TVM "
        "passes below 1 - noise under both tables. total: seconds of the optimize() call, pricing and "
        "scheduling new kernels included. diff: largest relative difference of the outputs.",
        "",
        table(["model", "candidates, draw A (ms)", "draw B (ms)", "returned", "result / input (A)",
               "result / input (C)", "within noise", "result / TVM passes (A)", "result / TVM passes (C)",
               "faster than both", "total (s)", "diff"], rows),
    ]
    write_section("select-measured" if args.rules == "default" else f"select-measured-{args.rules}", "\n".join(lines))


if __name__ == "__main__":
    main()
