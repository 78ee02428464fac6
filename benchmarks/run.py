"""The benchmark suite: every zoo model through greedy mode, saturate mode and TVM's own passes.

Per model: graph size; greedy mode's time and cost; saturation's time, e-graph
size and stop reason; extraction time and cost with the greedy DAG and the ILP
extractor (and its gap); TVM CPU latency (median of repeated runs) of the
original, of TVM's pipeline of the passes the library mirrors, of the greedy
result and of the saturate result; the peak memory of model building and
optimization; a numeric check of every optimized module against the original.
Each model runs in its own process (forked once TVM's tensor intrinsics are
loaded), so its peak memory is its own.

    python benchmarks/run.py [--quick] [--models bert,vgg19] [--json results.json] [--address auto]

``--quick`` runs small versions of the models (19 minutes on 2 cores, most of it building and timing with TVM);
the full run takes the published shapes. Both write BENCHMARKS.md's "suite"
section (quick and full runs are kept apart) and the JSON results.
``--address`` runs the models as Ray tasks (gsl_eq.run.cluster), each in a fresh
worker process on a node of its own (a task takes the smallest node's CPUs, so
latencies are timed with no other model beside them): on a cluster, the models
run at once on its nodes; ``local`` starts a Ray instance on this machine.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))  # the gsl_eq of this checkout
from report import machine, table, write_section  # noqa: E402

from gsl_eq.models.registry import QUICK  # noqa: E402  (small versions for --quick: fewer layers, smaller images)
LIMITS = dict(node_limit=50_000, iter_limit=15, time_limit=120.0)  # the whole call: saturation, ILP and the rest
ILP_TIME_LIMIT = 60.0
REPEAT = 10
ROUNDS = 5
SEED = 0


SAMPLES = 4  # design-space draws per kernel in the schedule database


def compile_cpu(wl):
    """``wl`` compiled for this CPU through the schedule database: each kernel scheduled by the best of
    ``SAMPLES`` design-space draws of MetaSchedule's llvm rules (tiling, parallel, vectorize, unroll),
    measured once and cached on disk, so the same kernel gets the same schedule in every variant.

    TVM's default CPU build schedules nothing (a BERT-base layer takes seconds); tuning would take hours.
    """
    import tvm
    from tvm import relax

    from gsl_eq.measure.schedule_db import ScheduleDatabase

    return relax.VirtualMachine(ScheduleDatabase(samples=SAMPLES, seed=SEED).build(wl.mod), tvm.cpu())


def run_and_time(variants: dict, inputs: dict) -> tuple[dict, dict]:
    """Each variant's outputs on ``inputs`` and the median seconds of one run.

    The variants are timed in interleaved rounds (``REPEAT`` runs each in all),
    so a slow patch of the machine does not fall on one variant only.
    """
    import tvm

    dev = tvm.cpu()
    prepared, outputs = {}, {}
    for label, wl in variants.items():
        values = {**inputs, **wl.params}
        args = [tvm.runtime.tensor(np.require(values[p.name], requirements="C"), dev) for p in wl.mod["main"].params]
        prepared[label] = (compile_cpu(wl), args)
        out = prepared[label][0]["main"](*args)
        outputs[label] = out.numpy() if hasattr(out, "numpy") else tuple(o.numpy() for o in out)
    runs: dict[str, list[float]] = {label: [] for label in variants}
    for _ in range(ROUNDS):
        for label, (vm, args) in prepared.items():
            timer = vm.time_evaluator("main", dev, number=1, repeat=REPEAT // ROUNDS, min_repeat_ms=50)
            runs[label] += list(timer(*args).results)
    return outputs, {label: float(np.median(r)) for label, r in runs.items()}


def tvm_pipeline(wl):
    """TVM's own passes for what the rule library does, on the module with its parameters bound."""
    from gsl_eq.optimizer.baseline import tvm_passes

    return tvm_passes(wl)


def eager_row(wl, expected) -> dict:
    """PyTorch eager on the original model, with as many threads as TVM's target has cores: its median
    seconds, once its outputs are checked against TVM's (or why it was not timed)."""
    from torch_eager import eager, eager_seconds

    inputs = wl.random_inputs(SEED)
    try:
        diff = max_diff(expected, eager(wl)(inputs))
    except NotImplementedError as missing:
        return {"latency_eager_ms": None, "eager_note": str(missing)}
    if diff > 1e-3:
        return {"latency_eager_ms": None, "eager_note": f"PyTorch's outputs differ from TVM's by {diff:.1e}"}
    return {"latency_eager_ms": eager_seconds(wl, inputs, threads=os.cpu_count() or 1) * 1e3, "diff_eager": diff}


def max_diff(a, b) -> float:
    a, b = (a,) if isinstance(a, np.ndarray) else a, (b,) if isinstance(b, np.ndarray) else b
    return max(float(np.max(np.abs(u - v)) / (1e-6 + np.max(np.abs(u)))) for u, v in zip(a, b))


def measure_one(name: str, quick: bool) -> dict:
    """Everything about one model (run in a child process)."""
    from gsl_eq import models, optimize, rules
    from gsl_eq.cost import Roofline

    model = Roofline()
    start = time.perf_counter()
    sizes = QUICK[name] if quick else {}
    wl = models.zoo_model(name, **sizes) if name in models.ZOO else getattr(models, name)(**sizes)
    row: dict = {"model": name, "build_s": time.perf_counter() - start, "nodes": len(wl.graph),
                 "calls": sum(wl.graph.op_counts().values())}
    greedy = optimize(wl, rules.default(), mode="greedy", cost=model)
    saturate_rules = [*rules.default(), *rules.algebraic()]
    sat = optimize(wl, saturate_rules, mode="saturate", cost=model, extractor="ilp", ilp_time_limit=ILP_TIME_LIMIT,
                   **LIMITS)
    row.update(cost_before=greedy.report.cost_before, greedy_cost=greedy.report.cost_after,
               greedy_s=greedy.report.timings["rewrite"], saturate_s=sat.report.timings["saturate"],
               enodes=sat.report.enodes, eclasses=sat.report.eclasses, iterations=len(sat.report.iterations),
               stop=sat.report.stop_reason, ilp_cost=sat.report.extracted_cost, result_cost=sat.report.cost_after,
               ilp_status=sat.report.extraction_status, ilp_gap=sat.report.gap, ilp_s=sat.report.timings["extract"],
               dag_cost=sat.report.greedy_dag_cost, dag_s=sat.report.greedy_dag_time)
    row["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before any TVM build
    variants = {"original": wl, "tvm": tvm_pipeline(wl), "greedy": greedy.workload, "saturate": sat.workload}
    outputs, seconds = run_and_time(variants, wl.random_inputs(SEED))
    for label in variants:
        row[f"latency_{label}_ms"] = seconds[label] * 1e3
        if label != "original":
            row[f"diff_{label}"] = max_diff(outputs["original"], outputs[label])
    row.update(eager_row(wl, outputs["original"]))
    row["total_s"] = time.perf_counter() - start
    return row


def measure_in_child(name: str, quick: bool, log: Path) -> dict:
    """:func:`measure_one` in a forked process (its own peak memory); its output goes to ``log``."""
    import multiprocessing
    import traceback

    def child(conn) -> None:
        with open(log, "w") as f:
            os.dup2(f.fileno(), 1)
            os.dup2(f.fileno(), 2)
            try:
                conn.send(measure_one(name, quick))
            except Exception as e:  # the row records the failure; the log keeps the traceback
                traceback.print_exc()
                conn.send({"model": name, "error": f"{type(e).__name__}: {e}"})

    receive, send = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.get_context("fork").Process(target=child, args=(send,))
    process.start()
    send.close()
    try:
        row = receive.recv()
    except EOFError:
        row = {"model": name, "error": "the process died"}
    process.join()
    if process.exitcode:
        row = {"model": name, "error": f"the process exited with code {process.exitcode}"}
    return row


def measure_logged(name: str, quick: bool, log: str) -> dict:
    """:func:`measure_one` in a Ray worker of its own, its output going to ``log``; a failure is its row's error."""
    import traceback

    with open(log, "w") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            return measure_one(name, quick)
        except Exception as e:  # the row records the failure; the log keeps the traceback
            traceback.print_exc()
            return {"model": name, "error": f"{type(e).__name__}: {e}"}


def measure_on_ray(names: list[str], quick: bool, logs: Path, address: str):
    """Each model's row as its Ray task finishes: ``(name, row)``. A task takes a whole node (the
    smallest node's CPUs) and a fresh worker process, as :func:`measure_in_child` takes a process."""
    from gsl_eq.run.cluster import Cluster

    with Cluster(address) as cluster:
        cpus = min(n["cpus"] for n in cluster.nodes())
        for done in cluster.run(measure_logged, [(name, quick, str(logs / f"{name}.log")) for name in names],
                                num_cpus=cpus, max_calls=1):
            name = names[done.index]
            yield name, done.value if done.error is None else {"model": name, "error": done.error}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small versions of the models")
    parser.add_argument("--models", help="comma-separated model names (default: all)")
    parser.add_argument("--json", help="where to write the results (default: benchmarks/results[-quick].json)")
    parser.add_argument("--address", help="run the models as Ray tasks on this cluster (auto, ray://HOST:PORT, "
                                          "HOST:PORT) or on a local Ray instance (local)")
    args = parser.parse_args()
    from rich.console import Console
    from rich.progress import Progress

    names = args.models.split(",") if args.models else list(QUICK)
    unknown = sorted(set(names) - set(QUICK))
    if unknown:
        parser.error(f"unknown models {unknown}; the suite has {list(QUICK)}")
    if args.address is None:
        importlib.import_module("tvm.s_tir.tensor_intrin")  # MetaSchedule loads it (15 s): once, before forking

    rows, console = [], Console()
    logs = Path(tempfile.mkdtemp(prefix="gsl_eq_bench_"))
    with Progress(console=console) as progress:
        task = progress.add_task("benchmarking", total=len(names))
        if args.address is None:
            def measured():
                for name in names:
                    progress.update(task, description=f"benchmarking {name}")
                    yield name, measure_in_child(name, args.quick, logs / f"{name}.log")
        else:
            progress.update(task, description=f"benchmarking {len(names)} models on Ray")
            measured = lambda: measure_on_ray(names, args.quick, logs, args.address)  # noqa: E731
        for name, row in measured():
            rows.append(row)
            if "error" in rows[-1]:
                console.print(f"[red]{name} failed: {rows[-1]['error']}[/] (log: {logs / f'{name}.log'})")
            else:
                console.print(f"{name}: {rows[-1]['total_s']:.1f} s")
            progress.advance(task)
    rows.sort(key=lambda row: names.index(row["model"]))
    kind = "quick" if args.quick else "full"
    out = Path(args.json or HERE / f"results-{kind}.json")
    out.write_text(json.dumps({"machine": machine(), "kind": kind, "rows": rows}, indent=1))
    write_section(f"suite-{kind}", report(rows, kind))
    console.print(f"wrote {out} and BENCHMARKS.md (suite-{kind})")


def _target() -> str:
    from gsl_eq.measure.schedule_db import ScheduleDatabase

    return str(ScheduleDatabase(samples=SAMPLES, seed=SEED).target)


def report(rows: list[dict], kind: str) -> str:
    ok = [r for r in rows if "error" not in r]
    sizes = "small versions of the models (`--quick`)" if kind == "quick" else "the published shapes, batch 1"
    lines = [f"## Benchmark suite, {kind} run (benchmarks/run.py)",
             f"Machine: {machine()}. Models at {sizes}. Costs: roofline model (µs). Greedy mode: rules.default() in "
             f"library order. Saturate mode: rules.default() + rules.algebraic(), limits {LIMITS['node_limit']} "
             f"e-nodes, {LIMITS['iter_limit']} iterations, {LIMITS['time_limit']:.0f} s for the whole call "
             f"(saturation, extraction and the rest share it), of which the ILP takes at most "
             f"{ILP_TIME_LIMIT:.0f} s. Latency: TVM llvm build on the CPU (target {_target()}) through the "
             f"schedule database (gsl_eq.measure.schedule_db: each kernel scheduled by the best of {SAMPLES} design-space draws of "
             f"MetaSchedule's llvm rules, seed {SEED}, no tuning), median of {REPEAT} runs "
             f"taken in {ROUNDS} rounds that alternate the four variants. Peak MB: the process's peak resident "
             "memory through model building and both optimizations, before any TVM build. "
             "TVM pipeline: CombineParallelMatmul, then parameters bound, FoldBatchnormToConv2D, "
             "DecomposeOpsForInference, FoldConstant, EliminateCommonSubexpr, RemoveRedundantReshape, FoldConstant. "
             "Numeric check: largest output difference from the original's (same build), relative to the largest "
             "output value, on random inputs. Greedy-DAG and ILP costs are those of the extracted choice in the "
             "e-graph; the saturate result cost is that of the rebuilt, folded workload. Seconds: greedy mode's "
             "rewriting, saturation, the greedy DAG's and the ILP's extraction, each alone; none counts folding "
             "the input's parameters, pricing, or the build and numeric check that end each optimize call."]
    lines.append(table(
        ["model", "nodes", "calls", "cost before", "greedy cost", "greedy (s)", "saturate (s)", "e-nodes",
         "iterations", "stop", "greedy-DAG cost", "DAG (s)", "ILP cost", "ILP gap", "ILP (s)", "saturate result cost",
         "peak MB"],
        [[r["model"], r["nodes"], r["calls"], f"{r['cost_before'] * 1e6:.1f}", f"{r['greedy_cost'] * 1e6:.1f}",
          f"{r['greedy_s']:.2f}", f"{r['saturate_s']:.2f}", r["enodes"], r["iterations"], r["stop"],
          f"{r['dag_cost'] * 1e6:.1f}", f"{r['dag_s']:.2f}", f"{r['ilp_cost'] * 1e6:.1f}",
          "n/a" if r["ilp_gap"] is None else f"{r['ilp_gap']:.2%}", f"{r['ilp_s']:.2f}",
          f"{r['result_cost'] * 1e6:.1f}", f"{r['peak_mb']:.0f}"]
         for r in ok]))
    lines.append(table(
        ["model", "original (ms)", "TVM passes (ms)", "greedy (ms)", "saturate (ms)", "PyTorch eager (ms)",
         "saturate vs TVM", "saturate vs greedy", "saturate vs eager", "numeric check (max rel. diff)"],
        [[r["model"], f"{r['latency_original_ms']:.3f}", f"{r['latency_tvm_ms']:.3f}",
          f"{r['latency_greedy_ms']:.3f}", f"{r['latency_saturate_ms']:.3f}",
          "n/a" if r.get("latency_eager_ms") is None else f"{r['latency_eager_ms']:.3f}",
          f"{r['latency_tvm_ms'] / r['latency_saturate_ms']:.2f}x",
          f"{r['latency_greedy_ms'] / r['latency_saturate_ms']:.2f}x",
          "n/a" if r.get("latency_eager_ms") is None else f"{r['latency_eager_ms'] / r['latency_saturate_ms']:.2f}x",
          "pass" if max(r["diff_tvm"], r["diff_greedy"], r["diff_saturate"]) < 1e-3 else
          f"FAIL ({max(r['diff_tvm'], r['diff_greedy'], r['diff_saturate']):.1e})"] for r in ok]))
    failed = [r for r in rows if "error" in r]
    if failed:
        lines.append("Failed: " + "; ".join(f"{r['model']}: {r['error']}" for r in failed))
    untimed = sorted(f"{r['model']}: {r['eager_note']}" for r in ok if r.get("eager_note"))
    lines.append("Ratios above 1 mean the saturate result runs faster than the other. PyTorch eager: the original "
                 "model interpreted op by op with torch.nn.functional under no_grad (benchmarks/torch_eager.py), "
                 "as many threads as TVM's target has cores, its outputs checked against TVM's first"
                 + (f"; not timed: {'; '.join(untimed)}." if untimed else "."))
    return "\n\n".join(lines)


if __name__ == "__main__":
    main()
