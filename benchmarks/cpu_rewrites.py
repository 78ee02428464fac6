"""Rewrites on TVM's CPU backend: both sides of a rewrite timed through one schedule database, under
two independently seeded draws of schedules, beside PyTorch eager on the same op.

Each case is a computation and its equal forms (a rewrite's sides). Every form is built through a
:class:`~gsl_eq.measure.schedule_db.ScheduleDatabase` (each kernel the best of ``--samples`` MetaSchedule
design-space draws, or tuned by MetaSchedule's search for ``--trials``) and the forms are timed in alternating rounds; then again under a database seeded
otherwise. The spread between the two draws says whether a ranking holds or is the luck of a draw.
PyTorch eager runs the first form with as many threads as TVM uses.

    python benchmarks/cpu_rewrites.py [--samples 8 | --trials 64] [--rounds 7] [--cases 1x1,qkv]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from report import machine, table, write_section  # noqa: E402

ROUND_SECONDS = 0.1


def _cases() -> dict[str, tuple[str, Callable[[], list[tuple[str, object]]], Callable[[], tuple]]]:
    """name -> (description, the forms as (label, Relax expression over input "x"), PyTorch eager's
    (function, arguments) for the first form)."""
    import torch
    from tvm import relax

    from gsl_eq.models.blocks import var

    op = relax.op

    def pointwise(n: int, c: int, o: int, size: int, stride: int = 1):
        def forms():
            x, w = var("x", n, c, size, size), var("w", o, c, 1, 1)
            conv = op.nn.conv2d(x, w, strides=stride)
            out = (size - 1) // stride + 1
            image = x if stride == 1 else op.strided_slice(x, axes=[2, 3], begin=[0, 0], end=[size, size],
                                                         strides=[stride, stride])
            product = op.matmul(op.reshape(w, (o, c)), op.reshape(image, (n, c, out * out)))
            form = "reshape + matmul" if stride == 1 else "strided slice + reshape + matmul"
            return [("conv2d", conv), (form, op.reshape(product, (n, o, out, out)))]

        def torch_call():
            x, w = torch.rand(n, c, size, size), torch.rand(o, c, 1, 1)
            return (lambda: torch.nn.functional.conv2d(x, w, stride=stride)), ()

        return forms, torch_call

    def conv3x3(n: int, c: int, size: int, groups: int = 1):
        def forms():
            x = var("x", n, c, size, size)
            nchw = op.nn.conv2d(x, var("w", c, c // groups, 3, 3), padding=1, groups=groups)
            x_nhwc = op.permute_dims(x, [0, 2, 3, 1])
            nhwc = op.nn.conv2d(x_nhwc, var("w_hwio", 3, 3, c // groups, c), padding=1, groups=groups,
                                data_layout="NHWC", kernel_layout="HWIO")
            return [("NCHW/OIHW", nchw), ("NHWC/HWIO", op.permute_dims(nhwc, [0, 3, 1, 2]))]

        def torch_call():
            x, w = torch.rand(n, c, size, size), torch.rand(c, c // groups, 3, 3)
            return (lambda: torch.nn.functional.conv2d(x, w, padding=1, groups=groups)), ()

        return forms, torch_call

    def qkv(tokens: int, dim: int):
        def forms():
            x = var("x", tokens, dim)
            ws = [var(f"w{k}", dim, dim) for k in "qkv"]
            merged = op.split(op.matmul(x, op.concat(ws, axis=1)), 3, axis=-1)
            return [("three matmuls", relax.Tuple([op.matmul(x, w) for w in ws])),
                    ("merged + split", relax.Tuple([relax.TupleGetItem(merged, k) for k in range(3)]))]

        def torch_call():
            x, ws = torch.rand(tokens, dim), [torch.rand(dim, dim) for _ in range(3)]
            return (lambda: [x @ w for w in ws]), ()

        return forms, torch_call

    return {
        "1x1": ("1x1 conv 256->64, 56x56", *pointwise(1, 256, 64, 56)),
        "1x1-expand": ("1x1 conv 64->256, 56x56", *pointwise(1, 64, 256, 56)),
        "1x1-stride2": ("1x1 conv 512->1024, stride 2, 28x28", *pointwise(1, 512, 1024, 28, stride=2)),
        "1x1-batch4": ("1x1 conv 256->64, 56x56, batch 4", *pointwise(4, 256, 64, 56)),
        "3x3": ("3x3 conv 64 ch, 56x56", *conv3x3(1, 64, 56)),
        "depthwise": ("3x3 depthwise conv 144 ch, 56x56", *conv3x3(1, 144, 56, groups=144)),
        "qkv": ("BERT-base Q/K/V: three 128x768x768 matmuls", *qkv(128, 768)),
    }


def _torch_ms(make: Callable[[], tuple], threads: int, rounds: int) -> float:
    from torch_eager import median_seconds

    fn, args = make()
    return median_seconds(lambda: fn(*args), threads, rounds, ROUND_SECONDS) * 1e3


def main() -> None:
    from gsl_eq import Workload
    from gsl_eq.measure.schedule_db import ScheduleDatabase
    from gsl_eq.optimizer.selection import time_candidates

    cases = _cases()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(cases))
    parser.add_argument("--samples", type=int, default=8, help="design-space draws per kernel")
    parser.add_argument("--trials", type=int, default=0,
                        help="tune each kernel with MetaSchedule's search for this many trials (0: draws)")
    parser.add_argument("--rounds", type=int, default=7, help="alternating timing rounds")
    args = parser.parse_args()
    databases = [ScheduleDatabase(samples=args.samples, seed=seed, trials=args.trials) for seed in (0, 1)]
    threads = databases[0].target.attrs["num-cores"]
    rows, verdicts = [], []
    for name in args.cases.split(","):
        description, forms, torch_call = cases[name]
        workloads = [(label, Workload.from_expr(expr, ["x"])) for label, expr in forms()]
        once = workloads[0][1].build(schedules=databases[0]).seconds(workloads[0][1].random_inputs(0), 3)
        number = max(3, round(ROUND_SECONDS / once))
        timed = [time_candidates(workloads, db, rounds=args.rounds, number=number) for db in databases]
        eager = _torch_ms(torch_call, int(threads), args.rounds)
        first = [t[0].seconds for t in timed]
        for k, (label, _) in enumerate(workloads):
            ms = [t[k].seconds * 1e3 for t in timed]
            ratios = [t[k].seconds / f for t, f in zip(timed, first)]
            verdict = [_verdict(t[k], t[0]) for t in timed] if k > 0 else ["", ""]
            if k > 0:
                verdicts.append(verdict)
            rows.append([description if k == 0 else "", label, f"{ms[0]:.2f}", f"{ratios[0]:.2f} {verdict[0]}".rstrip(),
                         f"{ms[1]:.2f}", f"{ratios[1]:.2f} {verdict[1]}".rstrip(), f"{abs(ms[1] - ms[0]) / min(ms):.0%}",
                         f"{eager:.2f}" if k == 0 else ""])
            print(*rows[-1], sep="\t", flush=True)
    schedules = (f"each kernel tuned by MetaSchedule's evolutionary search, {args.trials} measured trials"
                 if args.trials else f"each kernel the best of {args.samples} MetaSchedule design-space draws of the "
                 "llvm rules")
    lines = [
        f"`python benchmarks/cpu_rewrites.py --samples {args.samples} --trials {args.trials} --rounds {args.rounds}` "
        f"on {machine()}; target: {databases[0].target}. "
        f"Each form built through a schedule database ({schedules}), the forms of a case timed in {args.rounds} alternating rounds "
        f"of at least {ROUND_SECONDS * 1e3:.0f} ms (median); then all again under a database seeded otherwise "
        "(seed 1 against seed 0). Spread: the difference between the two draws' times of one form, relative to "
        "the faster. faster / slower / tie: against the first form, beyond the timing noise of both (the "
        "rounds' spread, at least 2%) or not. PyTorch eager: the first form, torch.nn.functional / matmul under no_grad, "
        f"{threads} threads (TVM's target uses as many cores), median round.",
        "",
        table(["case", "form", "TVM seed 0 (ms)", "vs first", "TVM seed 1 (ms)", "vs first", "spread",
               "PyTorch eager (ms)"], rows),
        "",
        _ranking_summary(verdicts),
    ]
    write_section("cpu-rewrites", "\n".join(lines))


def _verdict(form, first) -> str:
    """Whether ``form`` ran faster or slower than the case's first form beyond the timing noise of both
    (measured selection's test), or neither."""
    from gsl_eq.optimizer.selection import faster

    return "faster" if faster(form, first) else "slower" if faster(first, form) else "tie"


def _ranking_summary(verdicts: list[list[str]]) -> str:
    """How the forms' rankings against the first form fared between the two draws."""
    flipped = sum({"faster", "slower"} == set(v) for v in verdicts)
    held = sum(v[0] == v[1] != "tie" for v in verdicts)
    return (f"Rankings against the first form, beyond the timing noise (measured selection's test): "
            f"{held} of {len(verdicts)} held under both draws, {flipped} flipped (faster under one draw, slower "
            f"under the other), {len(verdicts) - held - flipped} were a tie under at least one draw.")


if __name__ == "__main__":
    main()
