"""TASO's rules under a short time limit: ``optimize(wl, rules.tensat() + rules.default())`` at a
20 s limit on the zoo's networks at small sizes, with the exact extractor's early start and without
it, beside ``default() + algebraic()`` alone.

TASO's multi-pattern rules grow these e-graphs to the node limit with forms that seldom pay, and
the exact extractor may find nothing past its warm start in the time left. Past
``EARLY_GROWTH * EARLY_ENODES`` e-nodes it first solves the e-graph as an early iteration left it
(``gsl_eq.optimizer.saturate.EARLY_ENODES``) and starts from that optimum; "without" sets the threshold past
any e-graph. Each run is a fresh process; outputs are compared with the input's on random inputs.

    python benchmarks/short_limits.py [--limit 20] [--models nasrnn,inception_v3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from report import in_child, machine, table, write_section  # noqa: E402

#: Small versions of the zoo's networks, at sizes the tests do not use.
MODELS = {
    "nasrnn": dict(steps=3, hidden=24),
    "resnext50": dict(image_size=40, layers=(1, 1, 1, 1), groups=4, group_width=4),
    "nasnet_a": dict(image_size=40, cells=1, filters=12),
    "inception_v3": dict(image_size=91, modules=(1, 1, 1)),
    "squeezenet": dict(image_size=48),
    "mobilenet_v2": dict(image_size=40, blocks=(1, 1, 1, 1, 1, 1, 1)),
}
#: The wall time not bounded by ``time_limit``, as documented: releasing the e-graph.
AFTER_LIMIT = ("release",)


def measure(name: str, rules: str, cost: str, limit: float, early: bool) -> dict:
    """One optimize call in this (fresh) process: gain, e-graph, extraction, seconds, output difference."""
    import importlib

    import numpy as np

    from gsl_eq import optimize
    from gsl_eq.models import zoo_model
    from gsl_eq.rules.sets import rule_set

    if not early:
        importlib.import_module("gsl_eq.optimizer.saturate").EARLY_GROWTH = float("inf")
    wl = zoo_model(name, **MODELS[name])
    start = time.perf_counter()
    result = optimize(wl, rule_set(rules), cost=cost, time_limit=limit)
    wall = time.perf_counter() - start
    report = result.report
    inputs = wl.random_inputs(1)
    expected, got = wl(**inputs), result.workload(**inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    diff = max(float(np.max(np.abs(e - g)) / (np.max(np.abs(e)) or 1.0)) for e, g in zip(expected, got))
    return dict(gain=1 - report.cost_after / report.cost_before, enodes=report.enodes, status=report.extraction_status,
                seconds=wall - sum(report.timings.get(k, 0.0) for k in AFTER_LIMIT), diff=diff,
                early=any(note.startswith("the ILP started from") for note in report.notes),
                returned=report.input_returned)


def _pct(row: dict) -> str:
    if "error" in row:
        return "error"
    return f"{100 * row['gain']:.1f} %" + (" (input)" if row.get("returned") else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=20.0)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--costs", default="gpu,roofline")
    args = parser.parse_args()
    rows = []
    for name in args.models.split(","):
        for cost in args.costs.split(","):
            alone = in_child(measure, name, "default+algebraic", cost, args.limit, True)
            without = in_child(measure, name, "tensat+default", cost, args.limit, False)
            early = in_child(measure, name, "tensat+default", cost, args.limit, True)
            print(name, cost, alone, without, early, flush=True)
            runs = (alone, without, early)
            rows.append([name, cost, _pct(alone), f"{without.get('enodes', 0):,}", _pct(without), _pct(early),
                         "yes" if early.get("early") else "no", early.get("status", early.get("error")),
                         " / ".join(f"{r['seconds']:.1f}" if "seconds" in r else "-" for r in runs),
                         f"{max(r.get('diff', 0.0) for r in runs):.1e}"])
    header = ["model", "cost", "default+algebraic", "e-nodes (tensat+default)", "tensat+default without",
              "tensat+default with", "early start taken", "extraction (with)", "seconds (alone / without / with)",
              "diff"]
    sizes = "; ".join(f"{name} {', '.join(f'{k}={v}' for k, v in kwargs.items())}" for name, kwargs in MODELS.items()
                      if name in args.models.split(","))
    text = (f"`python benchmarks/short_limits.py --limit {args.limit:g}` on {machine()}. The zoo's networks at small "
            f"sizes ({sizes}); optimize() in saturate mode with its defaults (node limit 50,000) and a "
            f"{args.limit:g} s time limit; gains are 1 - after / before under the cost model. without / with: the "
            "exact extractor's early start (past 20,000 e-nodes, the ILP first solves the e-graph as the last "
            "iteration of at most 5,000 e-nodes left it and starts from that optimum; without: never). seconds: "
            "the call's wall time, the final build and the check of the result included, but releasing the e-graph, "
            "which comes after the limit; each run in a fresh process. (input): the input was returned. "
            "diff: the largest relative difference of the outputs on random inputs, over the three runs.\n\n"
            + table(header, rows))
    write_section("short-limits", text)


if __name__ == "__main__":
    main()
