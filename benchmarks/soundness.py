"""The full soundness check of the rule library, the planted unsound rules, and the CLI's help time.

Every rule of the library (``all``, ``algebraic``, ``ring``, ``tvm_equivalents``) goes through
``gsl_eq.check_rule`` with many instances; the planted unsound rules of tests/soundness must each
give a counterexample; ``gsl-eq --help`` is timed in fresh processes (it must answer in under 1 s).

    python benchmarks/soundness.py [--trials N] [--seed S]
    python benchmarks/soundness.py --taso [--trials N]     TASO's rules (rules.taso(), rules.tensat())
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import machine, table, write_section  # noqa: E402

from gsl_eq import rules  # noqa: E402
from gsl_eq.soundness import Verdict, check_rule  # noqa: E402
from tests.soundness.test_checker import PLANTED  # noqa: E402


def help_seconds(runs: int = 7) -> tuple[float, float]:
    """Median and worst wall time of ``gsl-eq --help`` in a fresh interpreter."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gsl_eq.cli", "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times), max(times)


def taso(trials: int, seed: int) -> None:
    """Every distinct TASO rule (one per equation, two where it enlarges a kernel) through the checker;
    verdicts per file."""
    from gsl_eq.rules.taso_equations import HAND_WRITTEN, translation

    rows, unsound, seen = [], [], set()
    start = time.perf_counter()
    for file in ("single_rules.txt", "multi_rules.txt", "converted.txt", "converted_multi.txt", *HAND_WRITTEN):
        t = translation(file)
        counts = {v: 0 for v in Verdict}
        untyped = 0
        for rule in t.rules:
            if t.key(rule) in seen:
                continue
            seen.add(t.key(rule))
            result = check_rule(rule, trials=trials, seed=seed, tries=max(40 * trials, 150))
            counts[result.verdict] += 1
            untyped += bool(result.untyped)
            if result.verdict is not Verdict.SOUND:
                unsound.append(f"{rule.name}: {result.summary()}")
        rows.append([file, t.parsed, len(t.rules), sum(counts.values()), *counts.values(), untyped])
        print(rows[-1], flush=True)
    lines = [
        f"`python benchmarks/soundness.py --taso --trials {trials} --seed {seed}` on {machine()}: "
        f"{time.perf_counter() - start:.0f} s. Each distinct rule once (TASO's list repeats some equations; one that enlarges a kernel is two rules), "
        f"{trials} instances drawn in at most {max(40 * trials, 150)} tries.",
        "",
        table(["file", "parsed", "translated", "distinct checked", *(v.value for v in Verdict),
               "with untyped instances"], rows),
        "",
        "Not sound: " + ("; ".join(unsound) if unsound else "none."),
    ]
    write_section("soundness-taso", "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--taso", action="store_true", help="check TASO's rules instead of the library's")
    args = parser.parse_args()
    if args.taso:
        taso(args.trials, args.seed)
        return
    library = {r.name: r for group in (rules.all(), rules.algebraic(), rules.ring(), rules.tvm_equivalents())
               for r in group}
    rows, verdicts = [], {}
    start = time.perf_counter()
    for name, rule in library.items():
        t = time.perf_counter()
        result = check_rule(rule, trials=args.trials, seed=args.seed)
        verdicts[result.verdict] = verdicts.get(result.verdict, 0) + 1
        rows.append([name, result.verdict.value, result.instances, result.untyped, result.unbuildable,
                     result.variety["shapes"], result.variety["attributes"], result.variety["lengths"],
                     result.tries, f"{time.perf_counter() - t:.1f}"])
        print(name, result.summary(), flush=True)
    library_seconds = time.perf_counter() - start
    planted = []
    for make in PLANTED:
        result = check_rule(make(), trials=args.trials, seed=args.seed)
        ex = result.counterexample
        planted.append([make.__name__, result.verdict.value, f"{result.failures} of {result.failures + result.instances}",
                        ex.problem if ex else "-"])
        print(make.__name__, result.summary(), flush=True)
    median, worst = help_seconds()
    counts = ", ".join(f"{verdict.value} {verdicts.get(verdict, 0)}" for verdict in Verdict)
    lines = [
        f"`python benchmarks/soundness.py --trials {args.trials} --seed {args.seed}` on {machine()}.",
        "",
        f"Library: {len(library)} rules, {args.trials} instances each, {library_seconds:.0f} s; verdicts: {counts}. "
        "An instance is a small graph drawn so that the rule's source matches, rewritten by greedy mode, built and "
        "run with TVM on random inputs next to its source. *unbuildable*: TVM cannot build (or runs wrongly) the "
        "source of every instance, so there is no reference: the legalizing rules, whose sources are what TVM "
        "cannot compile; instances whose source TVM runs wrongly (float16 batch norms come back as float32) are "
        "skipped and counted in that column.",
        "",
        table(["rule", "verdict", "instances", "untyped", "unbuildable", "input shapes", "attribute sets",
               "variadic lengths", "draws", "time (s)"], rows),
        "",
        "Planted unsound rules (tests/soundness/test_checker.py), each must be caught:",
        "",
        table(["rule", "verdict", "failing instances", "counterexample (smallest with wrong values first)"], planted),
        "",
        f"`gsl-eq --help` in a fresh interpreter: median {median:.2f} s, worst {worst:.2f} s of 7 runs.",
    ]
    write_section("soundness", "\n".join(lines))


if __name__ == "__main__":
    main()
