"""GPU truth: the gpu cost model's results timed on a GPU, by a kit that needs only PyTorch there.

    python benchmarks/gpu_truth.py --prepare kit       # here: optimize, export every graph and the runner
    python benchmarks/gpu_truth.py --run kit           # there (PyTorch and NumPy only): kit/timings.json
    python benchmarks/gpu_truth.py --report kit/timings.json    # here: BENCHMARKS.md's gpu-truth section

The folder this checkout holds, benchmarks/data/gpu_kit, is such a kit, ready to run on a GPU machine:
``python benchmarks/gpu_truth.py --run benchmarks/data/gpu_kit --out timings.json`` (its CPU run's
seconds are in BENCHMARKS.md; ``--no-kernels`` skips timing each kernel alone, ``--only`` runs some cases).

``--prepare`` optimizes, under the gpu model (a V100), TENSAT's seven graphs with TENSAT's settings
(rules.tensat(), node_limit=50,000, iter_limit=15, multi-pattern rules in the first iteration, cycle
filtering) and with gsl_eq's (rules.tensat() + rules.default(), its default limits), the zoo at its
quick sizes (tensat+default), and writes ResNeXt-50's grouped convs at half and at one group (TASO's
merge_gconv, applied once and to the end). Each input and result goes into the folder as a graph
file (gsl_eq.workload.portable, weights as seeds), with the runner (gsl_eq/workload/torch_runner.py, as runner.py) and
a manifest; input and result are written before their folds (Workload.before_folds), so the runner
computes their weights from the same
seeds. The folder must stay under 64 MiB. ``--run`` runs the runner with this Python on CUDA (or
``--device cpu``): every pair on the same values, outputs compared, timed side by side (CUDA graphs,
the median of alternating rounds), and every distinct kernel alone. ``--report`` sets the measured
speedups beside the gpu model's (V100, and an H200 preset of published figures), and ranks the
models' kernel prices against the measured kernel times (Kendall's tau).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))  # the gsl_eq of this checkout (--run imports neither: it runs the runner alone)
RUNNER = ROOT / "gsl_eq" / "workload" / "torch_runner.py"
LIMIT_BYTES = 64 * 2**20
TENSAT_MODELS = ("bert", "nasrnn", "resnext50", "nasnet_a", "inception_v3", "squeezenet", "vgg19")
ZOO_MODELS = ("bert", "nasrnn", "resnext50", "nasnet_a", "inception_v3", "squeezenet", "vgg19", "resnet50",
              "mobilenet_v2")
OURS = dict(time_limit=60.0)


# --------------------------------------------------------------------------- prepare (here, with gsl_eq)


def prepare_tensat(model: str, folder: str) -> list[dict]:
    """TENSAT's graph of ``model``: its input, and its results under TENSAT's settings and gsl_eq's."""
    from tensat_table import MULTI_ITERATIONS, SETTINGS

    from gsl_eq import models, rules

    wl = models.tensat_model(model)
    settings = {**SETTINGS, "multi_iterations": MULTI_ITERATIONS.get(model, 1)}
    return [optimized_case(f"tensat_{model}", "tensat", wl, rules.tensat(), settings, Path(folder)),
            optimized_case(f"tensat_{model}", "tensat+default", wl, rules.tensat() + rules.default(), OURS, Path(folder))]


def prepare_zoo(model: str, folder: str) -> list[dict]:
    from gsl_eq import rules
    from gsl_eq.models.registry import load_model

    return [optimized_case(model, "tensat+default", load_model(model, quick=True), rules.tensat() + rules.default(), OURS,
                  Path(folder))]


def prepare_grouped(folder: str) -> list[dict]:
    """TENSAT's ResNeXt-50 with its grouped convs at half their groups and at one group: TASO's
    merge_gconv (rules.tensat()'s predefined.txt; its activation variants are one rule in Relax)
    applied once, and until no grouped conv is left; the merged kernels are left computed from the
    input's (the runner folds them)."""
    from gsl_eq import Workload, models, rules
    from gsl_eq.greedy.rewriter import rewrite_once

    wl = models.tensat_model("resnext50")
    merges = [r for r in rules.tensat() if r.name in ("taso:predefined.txt#0", "taso:predefined.txt#2")]
    cases, current = [], wl
    for rounds in range(1, 64):
        fired, graph = 0, current.graph
        for rule in merges:  # one pass each: every grouped conv's groups halved once
            graph, count, _ = rewrite_once(graph, rule)
            fired += count
        current = Workload.from_graph(graph, wl.params)
        groups = sorted({n.attrs["groups"] for n in current.graph.rpo() if n.op == "relax.nn.conv2d"})
        if rounds == 1:
            cases.append(pair("tensat_resnext50", f"groups halved (merge_gconv once; groups {groups})", wl, current,
                               Path(folder)))
        if groups == [1] or not fired:
            break
    cases.append(pair("tensat_resnext50", f"one group (merge_gconv {rounds} times; groups {groups})", wl, current,
                       Path(folder)))
    return cases


def optimized_case(model: str, setting: str, wl, rule_list, settings: dict, folder: Path) -> dict:
    """``wl`` optimized in saturate mode under the gpu model, input and result exported into ``folder``."""
    from gsl_eq import optimize
    from gsl_eq.cost import GPU

    start = time.perf_counter()
    result = optimize(wl, rule_list, mode="saturate", cost=GPU(), **settings)
    seconds = time.perf_counter() - start
    case = pair(model, setting, result.input.before_folds(), result.workload.before_folds(), folder)
    case.update(optimize_s=seconds, returned_input=result.report.input_returned, stop=result.report.stop_reason,
                calls=[result.report.calls_before, result.report.calls_after])
    return case


def pair(model: str, setting: str, before, after, folder: Path) -> dict:
    """Both graphs exported (the input once per model), on the parameters no fold made, priced by the gpu
    model's presets after their folds."""
    from gsl_eq.cost import GPU, graph_cost
    from gsl_eq.workload.portable import export

    name = f"{model} · {setting}"
    stem = "".join(c if c.isalnum() else "_" for c in name).strip("_")
    source = folder / f"{model}.input.json"
    if not source.exists():
        export(before, source, params="seeds")
    export(after, folder / f"{stem}.result.json", params="seeds")
    prices = {device: graph_cost(before.folded_graph(), GPU(device)) / graph_cost(after.folded_graph(), GPU(device))
              for device in ("v100", "h200")}
    return {"name": name, "model": model, "setting": setting, "input": source.name,
            "result": f"{stem}.result.json", "model_speedup": prices["v100"], "h200_speedup": prices["h200"]}


def prepare(folder: Path, only: list[str] | None = None) -> None:
    from report import in_child

    folder.mkdir(parents=True, exist_ok=True)
    jobs = [(prepare_tensat, (m, str(folder))) for m in TENSAT_MODELS]
    jobs += [(prepare_zoo, (m, str(folder))) for m in ZOO_MODELS]
    jobs += [(prepare_grouped, (str(folder),))]
    cases = []
    for fn, args in jobs:
        label = f"{fn.__name__}({args[0] if len(args) > 1 else ''})"
        if only and not any(o in label for o in only):
            continue
        start = time.perf_counter()
        found = in_child(_rows, fn, *args)
        if "error" in found:
            print(f"{label}: {found['error']}", flush=True)
            continue
        cases += found["cases"]
        print(f"{label}: {len(found['cases'])} cases in {time.perf_counter() - start:.0f} s", flush=True)
    size = finish(folder, cases)
    print(f"wrote {folder}: {len(cases)} cases, {size / 2**20:.1f} MiB")


def finish(folder: Path, cases: list[dict]) -> int:
    """The runner and the manifest written beside the cases' graphs; the folder's size in bytes,
    refused past the 64 MiB that travel to the GPU machine."""
    shutil.copy(RUNNER, folder / "runner.py")
    manifest = {"format": "gsl_eq.kit/1", "prepared_on": _machine(), "cases": cases}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    if size > LIMIT_BYTES:
        raise SystemExit(f"{folder} holds {size / 2**20:.1f} MiB, over the {LIMIT_BYTES / 2**20:.0f} MiB that travel")
    return size


def _rows(fn, *args) -> dict:
    return {"cases": fn(*args)}


def _machine() -> str:
    from report import machine

    return machine()


# --------------------------------------------------------------------------- run (there: PyTorch only)


def run(folder: Path, device: str, out: Path | None, extra: list[str]) -> int:
    """The prepared folder run with this Python, by its runner.py (or this checkout's, which it copies):
    ``out``, by default ``folder/timings.json``."""
    runner = folder / "runner.py" if (folder / "runner.py").exists() else RUNNER
    command = [sys.executable, str(runner), "--device", device, "--dir", str(folder),
               "--out", str(out or folder / "timings.json"), *extra]
    return subprocess.run(command).returncode


# --------------------------------------------------------------------------- report (here, with gsl_eq)


def report(timings_path: Path) -> str:
    """The BENCHMARKS.md section of a run's timings."""
    from report import table

    timings = json.loads(timings_path.read_text())
    on_gpu = timings["device"].startswith("cuda")
    rows = [[c["name"], f"{c['model_speedup']:.3f}x", f"{c['h200_speedup']:.3f}x", f"{c['speedup']:.3f}x",
             f"±{c['noise']:.1%}", ", ".join(c["timing"]), f"{c['input_s'] * 1e3:.3f} -> {c['result_s'] * 1e3:.3f}",
             f"{c['input_kernels']} -> {c['result_kernels']}", "yes" if c["agree"] else f"NO ({c['max_diff']:.2g})"]
            for c in _with_prices(timings)["cases"]]
    where = (f"on {timings['device_name']} ({timings['device']})" if on_gpu else
             f"on the CPU ({timings['device_name']}, {timings['threads']} threads): **no GPU was used**; these "
             "timings say nothing of a GPU's, they show the kit running end to end")
    taus = kernel_ranks(timings)
    lines = [
        "## GPU truth: the gpu model's results timed (benchmarks/gpu_truth.py)",
        "",
        f"`python benchmarks/gpu_truth.py --prepare benchmarks/data/gpu_kit`, then `--run benchmarks/data/gpu_kit "
        f"--device {timings['device']}` {where}; PyTorch {timings['torch']}, Python {timings['python']}; {len(timings['cases'])} cases and "
        f"{len(timings['kernels'])} distinct kernels in {timings['seconds']:.0f} s. Each input and result runs op by op "
        "with PyTorch (gsl_eq/workload/torch_runner.py) on the same drawn weights and inputs, its weight-only computations "
        "folded first; both are timed side by side in alternating rounds (median round; ± half the spread of the "
        "rounds over the median); model speedup is the gpu model's (a V100), H200 preset the same model with "
        "H200's published figures; agree: outputs equal within 1e-3 of their scale.",
        "",
        table(["case", "gpu model (V100)", "H200 preset", "measured", "noise", "timing", "ms", "kernels", "agree"],
              rows),
        "",
        "Kernel prices against kernel times (each distinct kernel timed alone; Kendall's tau over "
        f"{taus['kernels']} kernels, 1 = the same order): V100 preset {taus['v100']:.3f}, H200 preset "
        f"{taus['h200']:.3f}.",
    ]
    return "\n".join(lines)


def _with_prices(timings: dict) -> dict:
    for case in timings["cases"]:
        case.setdefault("h200_speedup", float("nan"))
    return timings


def kernel_ranks(timings: dict) -> dict:
    """Kendall's tau between each preset's price of every kernel timed and its measured seconds."""
    from scipy.stats import kendalltau

    from gsl_eq.cost import GPU
    from gsl_eq.graph import TensorType, TupleType

    def typed(t):
        return TupleType(tuple(typed(f) for f in t["fields"])) if "fields" in t else TensorType(tuple(t["shape"]), t["dtype"])

    measured = [k["seconds"] for k in timings["kernels"]]
    taus = {"kernels": len(measured)}
    for device in ("v100", "h200"):
        model = GPU(device)
        priced = [model.kernel_seconds(k["op"], _attrs(k["attrs"]), [typed(t) for t in k["types"]], typed(k["output"]))
                  for k in timings["kernels"]]
        taus[device] = float(kendalltau(priced, measured).statistic) if len(measured) > 1 else float("nan")
    return taus


def _attrs(attrs: dict) -> dict:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--prepare", metavar="DIR", help="optimize and export the cases into DIR")
    action.add_argument("--run", metavar="DIR", help="run the prepared DIR with this Python (PyTorch only)")
    action.add_argument("--report", metavar="TIMINGS", help="write BENCHMARKS.md's gpu-truth section from a run")
    parser.add_argument("--device", default="cuda", help="for --run: cuda or cpu (default: cuda)")
    parser.add_argument("--out", type=Path, help="for --run: the timings file (default: DIR/timings.json)")
    parser.add_argument("--only", nargs="*", help="for --prepare: only the jobs whose label holds one of these")
    args, extra = parser.parse_known_args()
    if args.prepare:
        prepare(Path(args.prepare), args.only)
    elif args.run:
        sys.exit(run(Path(args.run), args.device, args.out, extra))
    else:
        from report import write_section

        write_section("gpu-truth", report(Path(args.report)))
        print("wrote BENCHMARKS.md's gpu-truth section")


if __name__ == "__main__":
    main()
