"""Proofs on the zoo's networks, both modes: how many steps, whether they replay into the result, and
what recording costs.

Per network (the zoo's at the suite's quick sizes under ``rules.default() + rules.algebraic()`` and
roofline; TENSAT's graphs under ``rules.tensat()`` and the gpu model, TENSAT's multi-pattern setting;
a 30 s limit): the result's proof (steps, rewrites), whether replaying it on the input gives the
result node by node with the same parameter values, the seconds making the proof took against
optimize()'s own. Recording: greedy mode's passes, and whole optimize() calls in both modes, timed
with greedy's recording off and on, side by side, best of three, with the peak memory tracemalloc
sees each way (optimize() always records; the benchmark switches it off for the comparison only).

    python benchmarks/proofs.py
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import machine, table, write_section  # noqa: E402

NETWORKS = ("bert", "nasrnn", "resnext50", "nasnet_a", "inception_v3", "squeezenet", "vgg19", "resnet50",
            "mobilenet_v2")
TENSAT_GRAPHS = ("bert", "nasrnn", "resnext50", "nasnet_a", "inception_v3", "squeezenet", "vgg19")


def setting(graphs: str, name: str) -> tuple:
    """The workload, rules and optimize() settings of one network."""
    from gsl_eq import models, rules
    from gsl_eq.models.registry import load_model

    if graphs == "zoo":
        return load_model(name, quick=True), rules.default() + rules.algebraic(), {"time_limit": 30}
    return models.tensat_model(name), rules.tensat(), {"time_limit": 30, "cost": "gpu", "multi_iterations": 1,
                                                       "cycles": "filter"}


def proof_row(graphs: str, name: str, mode: str) -> list[object]:
    from gsl_eq import optimize
    from gsl_eq.proof import same_workload

    wl, rule_list, options = setting(graphs, name)
    t = time.perf_counter()
    result = optimize(wl, rule_list, mode=mode, **options)
    seconds = time.perf_counter() - t
    t = time.perf_counter()
    proof = result.proof
    making = time.perf_counter() - t
    replays = proof.complete and same_workload(proof.replay(wl), result.workload)
    left = "" if proof.complete else f" (stops short: {proof.missing})"
    return [graphs, name, mode, f"{result.report.calls_before} -> {result.report.calls_after}", len(proof.steps),
            len(proof.rule_steps), "yes" if replays else "no" + left, f"{seconds:.2f}", f"{making:.2f}",
            f"{making / seconds:.2f}"]


def recording_row(name: str) -> list[object]:
    from gsl_eq import rules
    from gsl_eq.greedy.rewriter import greedy
    from gsl_eq.models.registry import load_model

    wl = load_model(name, quick=True).fold_params()
    rule_list = [r for r in rules.default() + rules.algebraic() if r.connected]
    seconds, peaks = {}, {}
    for record in (False, True, False, True, False, True):
        t = time.perf_counter()
        greedy(wl, rule_list, record=record)
        seconds[record] = min(seconds.get(record, float("inf")), time.perf_counter() - t)
    for record in (False, True):
        tracemalloc.start()
        greedy(wl, rule_list, record=record)
        peaks[record] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return [name, f"{seconds[False]:.3f}", f"{seconds[True]:.3f}", f"{seconds[True] / seconds[False]:.2f}",
            f"{peaks[False] / 2**20:.1f}", f"{peaks[True] / 2**20:.1f}", f"{peaks[True] / peaks[False]:.2f}"]


def optimize_row(name: str, mode: str) -> list[object]:
    """optimize() with greedy's recording switched off and on (the only recording it does)."""
    from gsl_eq import optimize
    from gsl_eq.greedy import rewriter
    from gsl_eq.optimizer import candidates, pipeline

    wl, rule_list, options = setting("zoo", name)

    def unrecorded(*args, **kwargs):
        return rewriter.greedy(*args, **{**kwargs, "record": False})

    def run(record: bool) -> float:
        candidates.greedy = pipeline.greedy = rewriter.greedy if record else unrecorded
        t = time.perf_counter()
        optimize(wl, rule_list, mode=mode, **options)
        return time.perf_counter() - t

    seconds, peaks = {False: float("inf"), True: float("inf")}, {}
    try:
        for record in (False, True) * 3:
            seconds[record] = min(seconds[record], run(record))
        for record in (False, True):
            tracemalloc.start()
            run(record)
            peaks[record] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    finally:
        candidates.greedy = pipeline.greedy = rewriter.greedy
    return [name, mode, f"{seconds[False]:.2f}", f"{seconds[True]:.2f}", f"{seconds[True] / seconds[False]:.2f}",
            f"{peaks[False] / 2**20:.1f}", f"{peaks[True] / 2**20:.1f}", f"{peaks[True] / peaks[False]:.2f}"]


def main() -> None:
    start = time.perf_counter()
    rows = [proof_row(graphs, name, mode) for graphs, names in (("zoo", NETWORKS), ("tensat", TENSAT_GRAPHS))
            for name in names for mode in ("greedy", "saturate")]
    recording = [recording_row(name) for name in NETWORKS]
    whole = [optimize_row(name, mode) for name in NETWORKS for mode in ("greedy", "saturate")]
    counts = {(g, m): (sum(r[6] == "yes" for r in rows if r[0] == g and r[2] == m), sum(r[0] == g and r[2] == m for r in rows))
              for g in ("zoo", "tensat") for m in ("greedy", "saturate")}
    said = "; ".join(f"{g} {m} {k} of {n}" for (g, m), (k, n) in counts.items())
    worst = max(max(float(r[4]), float(r[7])) for r in whole)
    body = "\n\n".join([
        "## Proofs: steps from input to result, replayed",
        f"Measured on {machine()}; {time.perf_counter() - start:.0f} s in all (`python benchmarks/proofs.py`).",
        "The zoo's networks at the suite's quick size under `rules.default() + rules.algebraic()`, roofline; "
        "TENSAT's graphs under `rules.tensat()` and the gpu model, multi-pattern rules in the first iteration; "
        "a 30 s limit. *Replays*: the proof's steps, applied to the input by greedy mode's rewriter, give the "
        "result node by node with the same parameter values. *Proof s*: making the proof when `result.proof` is "
        "first read (saturate mode finds its steps then, within 60 s), against optimize()'s own seconds.",
        f"Replayed into the result: {said}.",
        table(["graphs", "network", "mode", "calls", "steps", "rewrites", "replays", "optimize s", "proof s", "ratio"],
              rows),
        "Recording: whole optimize() calls with greedy mode's recording off and on, side by side (best of 3), "
        f"and the peak memory tracemalloc traced each way (egglog's own memory is not traced); the largest ratio "
        f"is {worst:.2f}:",
        table(["network", "mode", "off s", "on s", "time ratio", "off MiB", "on MiB", "memory ratio"], whole),
        "Greedy mode's rewriting alone, recording off and on:",
        table(["network", "off s", "on s", "time ratio", "off MiB", "on MiB", "memory ratio"], recording),
    ])
    write_section("proofs", body)
    print(body)


if __name__ == "__main__":
    main()
