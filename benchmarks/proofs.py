"""Proofs on the zoo's networks, both modes: how many steps, whether they replay into the result, and
what recording costs.

Per network (the suite's quick sizes, ``rules.default() + rules.algebraic()``, roofline, a 30 s limit):
the result's proof (steps, rewrites), whether replaying it on the input gives the result node by node
with the same parameter values, the seconds making the proof took against optimize()'s own. Greedy
mode records as it rewrites: its passes are timed with recording off and on, side by side, best of
three, with the peak memory tracemalloc sees each way.

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


def proof_row(name: str, mode: str) -> list[object]:
    from gsl_eq import optimize, rules
    from gsl_eq.models.registry import load_model
    from gsl_eq.proof import same_workload

    wl = load_model(name, quick=True)
    t = time.perf_counter()
    result = optimize(wl, rules.default() + rules.algebraic(), mode=mode, time_limit=30)
    seconds = time.perf_counter() - t
    t = time.perf_counter()
    proof = result.proof
    making = time.perf_counter() - t
    replays = same_workload(proof.replay(wl), result.workload)
    left = "" if proof.complete else f" (stops short: {proof.missing})"
    return [name, mode, f"{result.report.calls_before} -> {result.report.calls_after}", len(proof.steps),
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


def main() -> None:
    start = time.perf_counter()
    rows = [proof_row(name, mode) for name in NETWORKS for mode in ("greedy", "saturate")]
    recording = [recording_row(name) for name in NETWORKS]
    replayed = {mode: sum(r[5] == "yes" for r in rows if r[1] == mode) for mode in ("greedy", "saturate")}
    body = "\n\n".join([
        "## Proofs: steps from input to result, replayed",
        f"Measured on {machine()}; {time.perf_counter() - start:.0f} s in all (`python benchmarks/proofs.py`).",
        "Each network at the suite's quick size under `rules.default() + rules.algebraic()`, roofline, a 30 s "
        "limit. *Replays*: the proof's steps, applied to the input by greedy mode's rewriter, give the result "
        "node by node with the same parameter values. *Proof s*: making the proof when `result.proof` is "
        "first read (saturate mode finds its steps then), against optimize()'s own seconds.",
        f"Replayed into the result: greedy mode {replayed['greedy']} of {len(NETWORKS)}, saturate mode "
        f"{replayed['saturate']} of {len(NETWORKS)}.",
        table(["network", "mode", "calls", "steps", "rewrites", "replays", "optimize s", "proof s", "ratio"], rows),
        "Greedy mode records its passes as it rewrites. Its rewriting timed with recording off and on, side "
        "by side (best of 3), and the peak memory tracemalloc traced each way:",
        table(["network", "off s", "on s", "time ratio", "off MiB", "on MiB", "memory ratio"], recording),
    ])
    write_section("proofs", body)
    print(body)


if __name__ == "__main__":
    main()
