"""The ONNX route: models exported from PyTorch to ONNX, run by onnxruntime, by TVM as a TVM user
compiles them, and by TVM with gsl_eq's pass in ``tvm.compile``'s pipeline.

Each model is written in PyTorch with random weights (fixed seeds), exported with
``torch.onnx.export(..., dynamo=False)`` to a file, and then:

1. run by onnxruntime on the CPU (its default graph optimizations, as many threads as cores);
2. imported with TVM's ONNX frontend (``from_onnx(model, shape_dict=...)``, weights as constants)
   and compiled with ``tvm.compile(mod, "llvm")``;
3. compiled with ``tvm.compile(mod, "llvm", relax_pipeline=gsl_eq.transform.pipeline(rules.default()))``;
4. (unless ``--quick``) both TVM variants built through the schedule database
   (:class:`gsl_eq.measure.schedule_db.ScheduleDatabase`: every kernel scheduled by the best of a few
   MetaSchedule design-space draws, the same schedule for the same kernel in both), since TVM's
   default build leaves every kernel unscheduled.

Every TVM output is checked against onnxruntime's before anything is timed; the variants are
then timed side by side in alternating rounds and the medians reported. Each model runs in a
fresh process. Writes BERT's and the CNN's rows into BENCHMARKS.md's "onnx-route" section
("onnx-route-quick" with ``--quick``).

    python benchmarks/onnx_route.py [--quick] [--models resnet18,bert] [--samples 4]

About 5 minutes on 2 cores the first time (the schedule database measures some 600 kernel schedules, then
keeps them on disk), about a minute after that; ``--quick`` about half a minute.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))  # the gsl_eq of this checkout
from report import in_child, machine, table, write_section  # noqa: E402

SEED = 0
OPSET = 17
ROUNDS, QUICK_ROUNDS = 11, 3
ROUND_SECONDS = 0.2  # each variant runs at least this long per round
TOLERANCE = 1e-4  # largest output difference from onnxruntime's allowed, relative to its largest output value

#: The models: what each is, and its input.
MODELS = {
    "resnet18": "ResNet-18 (torchvision's layout: 8 basic blocks, widths 64-512, a batch norm after every conv, "
                "10 classes), input 1x3x64x64",
    "bert": "BERT encoder from transformers (BertModel, 2 layers, hidden 256, 4 heads, FFN 1024, vocabulary "
            "2000, eager attention, no pooler), 64 token ids",
}


# --- the models, in PyTorch ----------------------------------------------------------------------
def resnet18() -> tuple[Any, dict[str, np.ndarray]]:
    """ResNet-18 at 64x64 with random weights and random batch-norm statistics (the defaults,
    mean 0 and variance 1, would make every batch norm nearly the identity)."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class ResNet(nn.Module):
        def __init__(self, widths=(64, 128, 256, 512), classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            blocks, cin = [], widths[0]
            for i, width in enumerate(widths):
                blocks += [Block(cin, width, 1 if i == 0 else 2), Block(width, width, 1)]
                cin = width
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))

    from torch_models import random_batch_norms

    torch.manual_seed(SEED)
    model = random_batch_norms(ResNet().eval())
    x = np.random.default_rng(SEED).standard_normal((1, 3, 64, 64)).astype("float32")
    return model, {"x": x}


def bert() -> tuple[Any, dict[str, np.ndarray]]:
    """A 2-layer BERT encoder with random weights, its last hidden state as the output."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(SEED)
    config = BertConfig(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, intermediate_size=1024,
                        vocab_size=2000, max_position_embeddings=128, attn_implementation="eager")
    encoder = BertModel(config, add_pooling_layer=False).eval()

    class LastHidden(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids):
            return self.encoder(input_ids=input_ids, return_dict=False)[0]

    ids = np.random.default_rng(SEED).integers(0, config.vocab_size, (1, 64)).astype("int64")
    return LastHidden().eval(), {"input_ids": ids}


def export(name: str, path: Path) -> dict[str, np.ndarray]:
    """Model ``name`` exported to ONNX at ``path`` by TorchScript's exporter; its inputs. The CNN is
    exported without the exporter's constant folding, which would fold every batch norm into its
    conv itself: the file keeps its BatchNormalization nodes, as ONNX files from other tools do."""
    import warnings

    import torch

    model, inputs = {"resnet18": resnet18, "bert": bert}[name]()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer warnings
        torch.onnx.export(model, args, str(path), dynamo=False, opset_version=OPSET, input_names=list(inputs),
                          output_names=["output"], do_constant_folding=name != "resnet18")
    return inputs


# --- one model ------------------------------------------------------------------------------------
def measure(name: str, quick: bool, samples: int) -> dict:
    """One model's row: the variants built, checked against onnxruntime and timed side by side."""
    import onnx
    import onnxruntime as ort
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    from gsl_eq import rules
    from gsl_eq.measure.schedule_db import ScheduleDatabase
    from gsl_eq.transform import pipeline

    threads = os.cpu_count() or 1
    row: dict[str, Any] = {"model": name}
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    with tempfile.TemporaryDirectory(prefix="gsl_eq_onnx_") as folder:
        path = Path(folder) / f"{name}.onnx"
        inputs = export(name, path)
        model = onnx.load(str(path))
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    row["onnx_nodes"] = len(model.graph.node)
    expected = session.run(None, inputs)

    mod = from_onnx(model, shape_dict={k: list(v.shape) for k, v in inputs.items()})
    start = time.perf_counter()
    executables = {"tvm": tvm.compile(mod, "llvm")}
    row["tvm_build_s"] = time.perf_counter() - start
    runs: list = []
    start = time.perf_counter()
    executables["gsl_eq"] = tvm.compile(mod, "llvm", relax_pipeline=pipeline(rules.default(), on_run=runs.append))
    row["gsl_eq_build_s"] = time.perf_counter() - start
    (run,) = runs
    report = run.report
    row.update(calls_before=report.calls_before, calls_after=report.calls_after,
               optimize_s=report.timings["total"], rules_used=list(report.rules_used or []),
               input_returned=report.input_returned, notes=list(report.notes))
    if not quick:
        schedules = ScheduleDatabase(samples=samples, seed=SEED)
        row["target"] = str(schedules.target)
        start = time.perf_counter()
        executables["tvm_scheduled"] = schedules.build(mod)
        # the module the pass returned: its one function, optimized, with the weights bound as constants
        executables["gsl_eq_scheduled"] = schedules.build(run.result.workload.bound_module())
        row["scheduled_build_s"] = time.perf_counter() - start
        row["schedule_measurements"] = schedules.measurements

    dev = tvm.cpu()
    machines = {label: relax.VirtualMachine(ex, dev) for label, ex in executables.items()}
    args = [tvm.runtime.tensor(np.ascontiguousarray(v), dev) for v in inputs.values()]
    for label, vm in machines.items():
        out = vm["main"](*args)
        got = [out.numpy()] if hasattr(out, "numpy") else [o.numpy() for o in out]
        diff = max(float(np.max(np.abs(g - e))) for g, e in zip(got, expected, strict=True))
        scale = max(float(np.max(np.abs(e))) for e in expected)
        row[f"diff_{label}"] = diff
        if diff > TOLERANCE * max(1.0, scale):
            raise AssertionError(f"{label}'s outputs differ from onnxruntime's by {diff:.2e} (largest output "
                                 f"value {scale:.2e})")

    def tvm_runner(vm) -> Callable[[int], float]:
        return lambda n: float(vm.time_evaluator("main", dev, number=n, repeat=1)(*args).mean)

    def ort_runner(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            session.run(None, inputs)
        return (time.perf_counter() - start) / n

    before = busy(), time.process_time(), time.perf_counter()
    seconds = alternating({"onnxruntime": ort_runner, **{label: tvm_runner(vm) for label, vm in machines.items()}},
                          QUICK_ROUNDS if quick else ROUNDS)
    if before[0] is not None:  # CPU seconds the machine spent on other processes, per second of timing
        others = (busy() - before[0]) - (time.process_time() - before[1])
        row["other_cores"] = others / (time.perf_counter() - before[2])
    row.update({f"{label}_ms": s * 1e3 for label, s in seconds.items()})
    row["threads"] = threads
    return row


def busy() -> float | None:
    """CPU seconds the machine has spent busy since it booted, all cores together (None without /proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def alternating(runners: dict[str, Callable[[int], float]], rounds: int) -> dict[str, float]:
    """Median seconds of one call of each runner (``runner(n)``: seconds per call over ``n`` calls):
    ``rounds`` rounds, each running every runner in turn for at least ``ROUND_SECONDS``."""
    numbers = {}
    for label, runner in runners.items():
        runner(1)  # warm-up
        numbers[label] = max(1, round(ROUND_SECONDS / runner(1)))
    times: dict[str, list[float]] = {label: [] for label in runners}
    for _ in range(rounds):
        for label, runner in runners.items():
            times[label].append(runner(numbers[label]))
    return {label: statistics.median(t) for label, t in times.items()}


# --- the section ----------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--quick", action="store_true",
                        help=f"no schedule-database builds, {QUICK_ROUNDS} timing rounds")
    parser.add_argument("--samples", type=int, default=4, help="design-space draws per kernel in the schedule database")
    args = parser.parse_args()
    names = args.models.split(",")
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}; this benchmark has {list(MODELS)}")
    start = time.perf_counter()
    rows = []
    for name in names:
        row = in_child(measure, name, args.quick, args.samples)
        row.setdefault("model", name)
        print({k: v for k, v in row.items() if k != "notes"}, flush=True)
        rows.append(row)
    total = time.perf_counter() - start
    write_section("onnx-route-quick" if args.quick else "onnx-route", section(rows, args, total))
    print(f"wrote BENCHMARKS.md ({'onnx-route-quick' if args.quick else 'onnx-route'}) in {total:.0f} s")
    if any("error" in r for r in rows):
        sys.exit(1)


def section(rows: list[dict], args: argparse.Namespace, total: float) -> str:
    ok = [r for r in rows if "error" not in r]
    threads = ok[0]["threads"] if ok else os.cpu_count()
    target = next((r["target"] for r in ok if "target" in r), None)
    lines = [
        "## The ONNX route (benchmarks/onnx_route.py)",
        "",
        f"`python benchmarks/onnx_route.py{' --quick' if args.quick else ''}"
        f"{'' if args.quick else f' --samples {args.samples}'}` on {machine()}; {total:.0f} s in all. "
        "Each model is written in PyTorch with random weights (seed "
        f"{SEED}), exported with `torch.onnx.export(..., dynamo=False)` (opset {OPSET}) to one file, and that file "
        f"run by onnxruntime (CPU, its default graph optimizations, {threads} threads) and imported with TVM's ONNX "
        "frontend (`from_onnx(model, shape_dict=...)`, weights as constants). TVM: `tvm.compile(mod, \"llvm\")`. "
        "TVM + gsl_eq: `tvm.compile(mod, \"llvm\", relax_pipeline=gsl_eq.transform.pipeline(rules.default()))`, "
        "saturate mode, roofline cost, default limits.",
        "",
        "Models: " + "; ".join(f"{name}: {MODELS[name]}" for name in (r["model"] for r in rows)) + ". The CNN is "
        "exported without the exporter's constant folding (`do_constant_folding=False`), which would fold its "
        "batch norms into the convs itself; the file keeps its 20 BatchNormalization nodes, for gsl_eq to fold.",
        "",
        "TVM's default build leaves every kernel unscheduled: LegalizeOps writes each op as a plain loop nest "
        "and the build compiles it as written, with no tiling, vectorization or parallel loops, for plain "
        "`llvm` (baseline x86-64, no AVX or FMA), so the TVM and TVM + gsl_eq columns run many times slower "
        "than onnxruntime's tuned kernels; they compare graphs under TVM as a user gets it out of the box.",
    ]
    if not args.quick:
        lines[-1] += (" The scheduled columns build both TVM modules (the frontend's, and the one gsl_eq's pass "
                      "returned) through the schedule database (gsl_eq.measure.schedule_db, target "
                      f"`{target}`): each kernel scheduled by the best of {args.samples} MetaSchedule design-space "
                      f"draws of its llvm rules (seed {SEED}, no tuning), the same kernel the same schedule in both.")
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    lines += [
        "",
        f"Latency: medians of {rounds} rounds that alternate all the variants, each running at least "
        f"{ROUND_SECONDS * 1e3:.0f} ms per round (onnxruntime: `session.run` on NumPy inputs; TVM: the VM's "
        "time evaluator on inputs already on the device). Ratios: the other's time over gsl_eq's, above 1 when "
        "TVM + gsl_eq runs faster. Max abs diff: the largest absolute difference of any TVM variant's outputs "
        f"from onnxruntime's on the same inputs, each checked (at most {TOLERANCE:g} of the largest output value, "
        "else the row fails) before timing. Optimize (s): gsl_eq's whole optimize call in the pass (its report's "
        "total time)." + (" Other work on the machine while the variants were timed (CPU time of other "
                          "processes over the timing's wall time, from /proc/stat): "
                          + "; ".join(f"{r['model']}: {r['other_cores']:.2f} cores" for r in ok
                                      if r.get("other_cores") is not None) + "." if ok else ""),
        "",
    ]
    header = ["model", "op calls before → after", "onnxruntime (ms)", "TVM (ms)", "TVM + gsl_eq (ms)",
              "gsl_eq vs TVM", "gsl_eq vs onnxruntime"]
    if not args.quick:
        header += ["TVM scheduled (ms)", "TVM + gsl_eq scheduled (ms)", "scheduled: gsl_eq vs TVM",
                   "scheduled: gsl_eq vs onnxruntime"]
    header += ["max abs diff", "optimize (s)"]
    lines.append(table(header, [cells(r, args.quick, len(header)) for r in rows]))
    if any(r["input_returned"] for r in ok):
        lines += ["", "Where gsl_eq returned its input (marked), TVM and TVM + gsl_eq build the same graph: their "
                  "ratio shows the timing noise of this machine."]
    used = [f"{r['model']}: {', '.join(r['rules_used']) or 'none'}" for r in ok]
    if used:
        lines += ["", "Rules in gsl_eq's result: " + "; ".join(used) + "."]
    notes = [f"{r['model']}: {note}" for r in ok for note in r["notes"]]
    if notes:
        lines += ["", "gsl_eq's notes: " + "; ".join(notes) + "."]
    if not args.quick and ok:
        lines += ["", "Kernel schedules measured for the database in this run (0 where all were cached from an "
                  "earlier run): " + "; ".join(f"{r['model']}: {r['schedule_measurements']} in "
                                               f"{r['scheduled_build_s']:.0f} s of building" for r in ok) + "."]
    failed = [f"{r['model']}: {r['error']}" for r in rows if "error" in r]
    if failed:
        lines += ["", "Failed: " + "; ".join(failed) + "."]
    return "\n".join(lines)


def cells(r: dict, quick: bool, width: int) -> list[str]:
    if "error" in r:
        return [r["model"], *["-"] * (width - 1)]
    ort_ms, gsl_ms = r["onnxruntime_ms"], r["gsl_eq_ms"]
    calls = f"{r['calls_before']} → {r['calls_after']}{' (input returned)' if r['input_returned'] else ''}"
    out = [r["model"], calls, f"{ort_ms:.3f}", f"{r['tvm_ms']:.3f}",
           f"{gsl_ms:.3f}", f"{r['tvm_ms'] / gsl_ms:.2f}x", f"{ort_ms / gsl_ms:.2f}x"]
    diffs = [r["diff_tvm"], r["diff_gsl_eq"]]
    if not quick:
        sched = r["gsl_eq_scheduled_ms"]
        out += [f"{r['tvm_scheduled_ms']:.3f}", f"{sched:.3f}", f"{r['tvm_scheduled_ms'] / sched:.2f}x",
                f"{ort_ms / sched:.2f}x"]
        diffs += [r["diff_tvm_scheduled"], r["diff_gsl_eq_scheduled"]]
    return out + [f"{max(diffs):.1e}", f"{r['optimize_s']:.1f}"]


if __name__ == "__main__":
    main()
