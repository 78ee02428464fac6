"""A long run of the differential fuzzer (tests/fuzz): random Relax graphs (float, integer and
boolean computations) through every rule group and TASO's rules in greedy mode and through
saturation, each result checked for equal outputs, well-formedness, an untouched input and no
fallback inside optimize().

    python benchmarks/fuzz.py [--examples N] [--seed S] [--jobs J] [--taso-saturate]

``--jobs J`` runs J processes, each drawing examples / J graphs from its own seed (S, S + 1, ...).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from report import machine, write_section  # noqa: E402

from tests.fuzz.graphs import workloads  # noqa: E402
from tests.fuzz.test_differential import (  # noqa: E402
    GREEDY_LIMITS, GROUPS, SATURATE_LIMITS, TASO_GREEDY_LIMITS, TASO_LIMITS, TOLERANCE, check_workload, taso_rules)

#: the ops of the integer and boolean steps (tests/fuzz/graphs.py)
INTEGER_OPS = {f"relax.{name}" for name in ("cumsum", "where", "astype", "less", "greater", "less_equal",
                                            "greater_equal", "equal", "not_equal", "logical_not", "logical_and",
                                            "logical_or", "logical_xor")}


def limits(options: dict) -> str:
    return ", ".join(f"{name.replace('_', ' ')} {value:,}" + (" s" if name == "time_limit" else "")
                     for name, value in options.items())


def fuzz(examples: int, seed_: int, saturate_sets: tuple[str, ...]) -> dict:
    """Draw and check ``examples`` graphs from ``seed_``: sizes, graphs with integer ops, the failure."""
    sizes: list[int] = []
    integer = 0  # graphs with an integer or boolean computation
    start = time.perf_counter()

    @seed(seed_)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(workloads())
    def differential(wl):
        nonlocal integer
        ops = [node.op for node in wl.graph.rpo() if node.op]
        sizes.append(len(ops))
        integer += not INTEGER_OPS.isdisjoint(ops)
        check_workload(wl, greedy_sets=("tensat", "taso"), saturate_sets=saturate_sets)
        if len(sizes) % 50 == 0:
            print(f"seed {seed_}: {len(sizes)} examples, {time.perf_counter() - start:.0f} s", file=sys.stderr,
                  flush=True)

    failure = None
    try:
        differential()
    except Exception:  # noqa: BLE001 - hypothesis re-raises the shrunk failure: record it
        failure = traceback.format_exc(limit=3)
    return {"seed": seed_, "sizes": sizes, "integer": integer, "failure": failure}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--jobs", type=int, default=1, help="processes, each with its own seed")
    parser.add_argument("--taso-saturate", action="store_true", help="also saturate with default() + taso()")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    saturate_sets = ("tensat", "taso") if args.taso_saturate else ("tensat",)
    if args.child:
        print(json.dumps(fuzz(args.examples, args.seed, saturate_sets)))
        return
    start = time.perf_counter()
    shares = [args.examples // args.jobs + (k < args.examples % args.jobs) for k in range(args.jobs)]
    children = [subprocess.Popen([sys.executable, __file__, "--child", "--examples", str(n), "--seed",
                                  str(args.seed + k), *(["--taso-saturate"] if args.taso_saturate else [])],
                                 stdout=subprocess.PIPE, text=True) for k, n in enumerate(shares)]
    runs = []
    for k, child in enumerate(children):
        out = child.communicate()[0].strip().splitlines()
        runs.append(json.loads(out[-1]) if child.returncode == 0 and out else
                    {"seed": args.seed + k, "sizes": [], "integer": 0,
                     "failure": f"the process ended with exit code {child.returncode}"})
    elapsed = time.perf_counter() - start
    sizes = [size for run in runs for size in run["sizes"]]
    failures = [run for run in runs if run["failure"]]
    seeds = ", ".join(str(run["seed"]) for run in runs)
    saturated = " and ".join(f"default() + {name}()" for name in saturate_sets)
    lines = [
        "## Differential fuzzing, long run (benchmarks/fuzz.py)",
        "",
        f"Machine: {machine()}.",
        "",
        f"`python benchmarks/fuzz.py --examples {args.examples} --seed {args.seed} --jobs {args.jobs}"
        f"{' --taso-saturate' if args.taso_saturate else ''}`: {len(sizes)} random graphs generated and checked "
        f"(asked for {args.examples}; seeds {seeds}, one process each) in {elapsed:.0f} s, "
        f"{sum(sizes) / max(len(sizes), 1):.1f} op calls per graph on average (at most {max(sizes, default=0)}), "
        f"{sum(run['integer'] for run in runs)} of them with integer or boolean computations (comparisons, "
        "logical ops, where, casts, cumsum). Inputs and tensors are float32 (NCHW images and matrices), float16, "
        "int32, int8 and bool. Each graph went through greedy mode with every group "
        f"({', '.join(GROUPS)}; {limits(GREEDY_LIMITS)}) and with the connected rules of tensat() "
        f"({len(taso_rules('tensat')[0])}) and of taso() ({len(taso_rules('taso')[0])}; "
        f"{limits(TASO_GREEDY_LIMITS)}); and through saturate mode with default() + algebraic() "
        f"({limits(SATURATE_LIMITS)}), extracted by the greedy DAG and by the ILP extractor, and with {saturated} "
        f"(every rule, multi-pattern ones included; {limits(TASO_LIMITS)}; ILP extraction). Every result was "
        "compared with the original on random inputs (relative and absolute tolerance "
        f"{', '.join(f'{t:g} for {d}' for d, t in TOLERANCE.items())}, integers and booleans exactly), checked "
        "well-formed, and the input checked unchanged; a saturate-mode result that failed optimize()'s own "
        "check (a fallback to another candidate) counts as a failure.",
        "",
        f"Failures: {len(failures)}{' (below, each shrunk by hypothesis)' if failures else ''}.",
    ]
    for run in failures:
        lines += ["", f"Seed {run['seed']}:", "", "```", run["failure"].strip(), "```"]
    write_section("fuzz", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
