"""Measured selection on the zoo: is the result of optimize(select="measured") ever slower than its input?

For each zoo model at the suite's quick size: saturate mode with rules.default() under the roofline
model, then select="measured" among up to 4 distinct candidates (the input, the result, the greedy
DAG extractions under the built-in cost models), every one built through one schedule database
(MetaSchedule design-space samples per kernel). The table gives each candidate's median time, the
pick, its time over the input's, and the noise band: the spread of the input's own rounds.

    python benchmarks/measured_selection.py [--models resnet50,bert] [--samples 4]
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
from run import QUICK  # noqa: E402

MODELS = ("bert", "nasrnn", "resnext50", "nasnet_a", "inception_v3", "squeezenet", "vgg19", "resnet50")


def main() -> None:
    from gsl_eq import models, optimize, rules
    from gsl_eq.schedule_db import ScheduleDatabase
    from gsl_eq.selection import time_candidates

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--samples", type=int, default=4, help="design-space draws per kernel")
    args = parser.parse_args()
    schedules = ScheduleDatabase(samples=args.samples)
    rows = []
    for name in args.models.split(","):
        wl = models.zoo_model(name, **QUICK[name])
        start = time.perf_counter()
        result = optimize(wl, rules.default(), mode="saturate", cost="roofline", node_limit=50_000, iter_limit=15,
                          time_limit=120, select="measured", candidates=4, schedules=schedules)
        total = time.perf_counter() - start
        timed = result.report.candidates
        picked = min(timed, key=lambda c: c["seconds"])
        # timed again, apart from the selection: a pick that was only lucky shows here
        # and the input against a second build of itself: what two builds of one graph differ by is the noise
        again = time_candidates([("input", wl), ("input again", wl), ("result", result.workload)], schedules, seed=1)
        ratio = again[2].seconds / again[0].seconds
        band = 2 * max(abs(again[1].seconds / again[0].seconds - 1),
                       (max(again[0].rounds) - min(again[0].rounds)) / again[0].seconds / 2)
        inputs = wl.random_inputs(0)
        got, want = result.workload(**inputs), wl(**inputs)
        pairs = zip(got, want) if isinstance(got, tuple) else [(got, want)]
        diff = max(float(abs(a - b).max() / max(1.0, abs(b).max())) for a, b in pairs)
        rows.append([name, "; ".join(f"{c['label']}: {c['seconds'] * 1e3:.3f}" for c in timed), picked["label"],
                     f"{ratio:.3f}", f"±{band / 2:.1%}", "yes" if ratio <= 1 + band / 2 else "NO",
                     f"{total:.0f}", f"{diff:.1e}"])
        print(*rows[-1], sep="\t", flush=True)
    lines = [
        f"`python benchmarks/measured_selection.py --samples {args.samples}` on {machine()}; quick sizes (benchmarks/run.py's "
        "QUICK); saturate mode, rules.default(), roofline cost, then `select=\"measured\"` with 4 candidates, all "
        f"built through one schedule database ({args.samples} design-space draws per kernel) and timed in 5 "
        "alternating rounds of 10 runs. Times in ms (median round). result / input: the returned graph against the "
        "input, timed again after the selection (5 fresh alternating rounds, other inputs, beside a second build of "
        "the input); noise: the larger of the second build's difference from the first and half the spread of the "
        "input's rounds; within noise: result / input <= 1 + noise. total: "
        "seconds of the optimize() call, scheduling new kernels included. diff: largest relative difference of the "
        "outputs.",
        "",
        table(["model", "candidates (ms)", "pick", "result / input", "noise", "within noise", "total (s)", "diff"],
              rows),
    ]
    write_section("select-measured", "\n".join(lines))


if __name__ == "__main__":
    main()
