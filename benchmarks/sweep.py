"""A sweep of 16 cells run three ways, in one run: serially (each cell's task in a loop in this
process), on a local Ray instance of 2 CPUs (gsl_eq.sweep), and on a Ray cluster of two nodes of
one CPU each on this machine (ray.cluster_utils). The wall times include starting Ray and its
workers (which import gsl_eq and TVM); the ratio is serial / Ray. Each Ray run's costs are checked
against the serial run's.

    python benchmarks/sweep.py [--cpus 2]

Writes BENCHMARKS.md's "sweep" section.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))  # the gsl_eq of this checkout
from report import machine, table, write_section  # noqa: E402

#: The grid: 2 quick-size zoo models x 2 rule sets x 2 modes x 2 cost models, cells of 1 to 25 s.
#: Every cell ends on its own (saturated or at the iteration limit, the ILP optimal), so its time is
#: work, not a time limit.
GRID = dict(models=["nasnet_a", "inception_v3"], rules=["tensat+default", "default+algebraic"],
            modes=["greedy", "saturate"], costs=["roofline", "opcount"], quick=True)
LIMITS = dict(iter_limit=15, time_limit=120.0)


def serial(cells: list) -> tuple[float, list[dict]]:
    """Every cell's task in a loop in this process (gsl_eq already imported, models built once)."""
    from gsl_eq.sweeps import run_cell

    start = time.perf_counter()
    lines = [run_cell(cell) for cell in cells]
    return time.perf_counter() - start, lines


def on_ray(address: str | None, cpus: int | None, output: Path) -> tuple[float, list[dict]]:
    """The sweep on Ray (a local instance of ``cpus`` CPUs when ``address`` is None), from start to end."""
    from gsl_eq.sweeps import sweep

    start = time.perf_counter()
    result = sweep(**GRID, **LIMITS, output=output, address=address, num_cpus=cpus)
    return time.perf_counter() - start, result.lines


def two_node_cluster():
    """Two Ray nodes of one CPU each on this machine; their workers import this checkout."""
    from ray.cluster_utils import Cluster

    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), *filter(None, [os.environ.get("PYTHONPATH")])])
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    return cluster


def same_costs(a: list[dict], b: list[dict]) -> int:
    """How many cells have the same costs before and after in both runs (matched by key)."""
    by_key = {line["key"]: line for line in b}
    return sum(1 for line in a if line["key"] in by_key and not line.get("error")
               and (line["cost_before"], line["cost_after"]) == (by_key[line["key"]]["cost_before"],
                                                                 by_key[line["key"]]["cost_after"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance (default: 2)")
    args = parser.parse_args()
    from gsl_eq.sweeps import grid

    cells = grid(**GRID, **LIMITS)
    work = Path(tempfile.mkdtemp(prefix="gsl_eq_sweep_bench_"))
    serial_s, serial_lines = serial(cells)
    print(f"serial: {serial_s:.1f} s", flush=True)
    local_s, local_lines = on_ray(None, args.cpus, work / "local.jsonl")
    print(f"Ray, {args.cpus} CPUs: {local_s:.1f} s ({serial_s / local_s:.2f}x)", flush=True)
    cluster = two_node_cluster()
    try:
        nodes_s, nodes_lines = on_ray(cluster.address, None, work / "nodes.jsonl")
    finally:
        cluster.shutdown()
    print(f"Ray, 2 nodes: {nodes_s:.1f} s ({serial_s / nodes_s:.2f}x)", flush=True)

    runs = [("serial, this process", "-", serial_s, serial_lines),
            (f"local Ray instance, {args.cpus} CPUs", "1", local_s, local_lines),
            ("Ray cluster of 2 nodes x 1 CPU (ray.cluster_utils, one machine)", "2", nodes_s, nodes_lines)]
    cell_s = sum(line.get("cell_seconds") or 0 for line in serial_lines)
    lines = [
        "## Sweeps on Ray (benchmarks/sweep.py)",
        f"`python benchmarks/sweep.py --cpus {args.cpus}` on {machine()}; Ray "
        f"{__import__('ray').__version__}. One sweep of {len(cells)} cells: models "
        f"{', '.join(GRID['models'])} (quick sizes) x rule sets {', '.join(GRID['rules'])} x modes "
        f"{', '.join(GRID['modes'])} x cost models {', '.join(GRID['costs'])}, ILP extraction, "
        f"iter_limit={LIMITS['iter_limit']}, time_limit={LIMITS['time_limit']:.0f} s (no cell reaches it). "
        "Serial: each cell's task (gsl_eq.sweeps.run_cell: the model built once per process, optimize(), "
        "the check of the result with TVM) in a loop in this process, gsl_eq already imported. Ray: "
        "gsl_eq.sweep() from its call to its return: starting Ray (the local instance; the cluster was "
        "started before), its worker processes (one Ray actor per CPU; each imports gsl_eq and TVM and builds "
        "the models it needs), the cells as Ray tasks of 1 CPU each, cells that share work (a model, then "
        "its rule set and mode) kept to one worker where the others are busy, each line written to the "
        "JSON Lines file as it finishes, and shutting Ray down. Ratio: serial wall time / this run's; the "
        "three measured in one run, one after another. Cell seconds per worker: the cells' own times added "
        "up per worker process (the rest of the wall time is Ray's start, the workers' imports, waiting on "
        "the last cell and Ray's shutdown).",
        table(["run", "nodes used", "wall (s)", "ratio (serial / run)", "cell seconds per worker",
               "cells with the serial costs"],
              [[name, nodes if nodes == "-" else str(len({line.get('node') for line in run_lines})),
                f"{seconds:.1f}", f"{serial_s / seconds:.2f}x", _per_worker(run_lines) if nodes != "-" else "-",
                f"{same_costs(serial_lines, run_lines)} of {len(cells)}"]
               for name, nodes, seconds, run_lines in runs]),
        f"The serial cells' own times add up to {cell_s:.1f} s. Each cell (serial run):",
        table(["model", "rules", "mode", "cost model", "before", "after", "speedup", "e-nodes", "stop", "seconds"],
              [[line["model"], line["rules"], line["mode"], line["cost_model"],
                _cost(line, "cost_before"), _cost(line, "cost_after"),
                "-" if line.get("speedup") is None else f"{line['speedup']:.3f}x",
                line.get("enodes") if line.get("enodes") is not None else "-", line.get("stop_reason") or "-",
                f"{line['cell_seconds']:.2f}"] for line in serial_lines]),
        "Costs in µs (roofline) or op calls (opcount); speedup = before / after.",
    ]
    write_section("sweep", "\n\n".join(lines))
    print("wrote BENCHMARKS.md (sweep)")


def _per_worker(lines: list[dict]) -> str:
    """The cells' seconds added up per worker process, largest first."""
    per: dict = {}
    for line in lines:
        per[(line.get("node"), line.get("pid"))] = per.get((line.get("node"), line.get("pid")), 0.0) + \
            (line.get("cell_seconds") or 0.0)
    return ", ".join(f"{v:.1f}" for v in sorted(per.values(), reverse=True))


def _cost(line: dict, key: str) -> str:
    if line.get(key) is None:
        return "-"
    return f"{line[key] * 1e6:.1f}" if line.get("cost_unit") == "s" else f"{line[key]:.0f}"


if __name__ == "__main__":
    main()
