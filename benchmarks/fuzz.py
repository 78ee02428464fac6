"""A long run of the differential fuzzer (tests/fuzz): random Relax graphs through every rule
group in greedy mode and through saturation with greedy DAG and ILP extraction, each result
checked for equal outputs, well-formedness and an untouched input.

    python benchmarks/fuzz.py [--examples N] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from report import machine, write_section  # noqa: E402

from tests.fuzz.graphs import workloads  # noqa: E402
from tests.fuzz.test_differential import GROUPS, TOLERANCE, check_workload  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261122)
    args = parser.parse_args()
    sizes: list[int] = []
    start = time.perf_counter()

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(workloads())
    def differential(wl):
        sizes.append(sum(1 for node in wl.graph.rpo() if node.op))
        check_workload(wl)
        if len(sizes) % 50 == 0:
            print(f"{len(sizes)} examples, {time.perf_counter() - start:.0f} s", flush=True)

    failure = None
    try:
        differential()
    except Exception:  # noqa: BLE001 - hypothesis re-raises the shrunk failure: record it
        failure = traceback.format_exc(limit=3)
    elapsed = time.perf_counter() - start
    lines = [
        "## Differential fuzzing, long run (benchmarks/fuzz.py)",
        "",
        f"Machine: {machine()}.",
        "",
        f"Seed {args.seed}: {len(sizes)} random graphs generated and checked (asked for {args.examples}) in "
        f"{elapsed:.0f} s, {sum(sizes) / max(len(sizes), 1):.1f} op calls per graph on average (at most "
        f"{max(sizes, default=0)}). Each went through greedy mode with every group ({', '.join(GROUPS)}) and "
        "through saturate mode with default() + algebraic() and both the greedy DAG and the ILP extractor; "
        "every result was compared with the original on random inputs (relative and absolute tolerance "
        f"{', '.join(f'{t:g} for {d}' for d, t in TOLERANCE.items())}, integers exactly), checked well-formed, "
        "and the input checked unchanged.",
        "",
        f"Failures: {'0' if failure is None else '1 (below, shrunk by hypothesis)'}.",
    ]
    if failure is not None:
        lines += ["", "```", failure.strip(), "```"]
    write_section("fuzz", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
