"""The ``gsl-eq`` command: optimize models with GSL rules, greedily or by equality saturation.

    gsl-eq demo                                  # the embedded models, both modes, numeric check
    gsl-eq optimize bert_encoder -o out.py       # a model by name, or a Python file defining one
    gsl-eq orderings inception_block -n 24       # greedy mode under rule orderings vs saturation
    gsl-eq bench --quick                         # the benchmark suite (from a source checkout)
"""

from __future__ import annotations

import argparse
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import tvm
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import models, rules
from .errors import GslEqError
from .optimize import EXTRACTORS, MODES, OptimizeResult, optimize
from .orderings import compare_orderings
from .workload import Workload

DEMO_MODELS: dict[str, Callable[[], Workload]] = {
    "bert_encoder": models.bert_encoder,  # 12 BERT-style encoder layers
    "inception_network": models.inception_network,  # an Inception-style CNN
}
RULE_SETS: dict[str, Callable[[], list]] = {
    "default": rules.default,
    "all": rules.all,
    "algebraic": rules.algebraic,
    "default+algebraic": lambda: [*rules.default(), *rules.algebraic()],
    "tvm": rules.tvm_equivalents,
}


def model_names() -> dict[str, Callable[..., Workload]]:
    """Every model the command knows by name."""
    skip = {"zoo_model", "hf_bert_module", "hf_gpt2_module"}
    return {name: getattr(models, name) for name in models.__all__
            if callable(getattr(models, name)) and name not in skip}


def load_model(spec: str) -> Workload:
    """A model by name, or from a Python file defining ``workload`` (a Workload), ``mod`` (an IRModule,
    its parameters kept as runtime inputs), or ``model`` (a torch module) with ``example_inputs``."""
    path = Path(spec)
    if path.suffix == ".py":
        if not path.is_file():
            raise GslEqError(f"{spec}: no such file")
        scope = runpy.run_path(str(path))
        if isinstance(scope.get("workload"), Workload):
            return scope["workload"]
        if isinstance(scope.get("mod"), tvm.IRModule):
            return Workload(scope["mod"], {})
        if scope.get("model") is not None and "example_inputs" in scope:
            return Workload.from_torch(scope["model"], scope["example_inputs"])
        raise GslEqError(f"{spec} defines none of: workload (a gsl_eq.Workload), mod (a tvm.IRModule), "
                         "model (a torch.nn.Module) with example_inputs")
    known = model_names()
    if spec not in known:
        raise GslEqError(f"unknown model {spec!r}; choose one of {', '.join(sorted(known))} or give a .py file")
    return known[spec]()


def optimize_with_progress(console: Console, wl: Workload, rule_list: list, mode: str, **options: Any) -> OptimizeResult:
    """:func:`optimize` with a progress bar over saturation iterations."""
    iterations = options.get("iter_limit", 30)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task(f"{mode}: saturating" if mode == "saturate" else "greedy: rewriting",
                                 total=iterations, info="")

        def step(it: Any) -> None:
            progress.update(task, advance=1, info=f"{it.enodes} e-nodes")
            if progress.tasks[task].completed >= iterations:
                progress.update(task, description="extracting")

        result = optimize(wl, rule_list, mode=mode, on_iteration=step, **options)
        progress.update(task, completed=iterations)
    return result


def numeric_check(a: Workload, b: Workload) -> float:
    """Largest absolute difference between the outputs of ``a`` and ``b`` on the same random inputs."""
    inputs = a.random_inputs(0)
    ya, yb = a(**inputs), b(**inputs)
    ya, yb = (ya,) if isinstance(ya, np.ndarray) else ya, (yb,) if isinstance(yb, np.ndarray) else yb
    return max(float(np.max(np.abs(u - v))) for u, v in zip(ya, yb))


def demo(console: Console) -> int:
    """Optimize the embedded models in both modes; print costs, times and a numeric check."""
    table = Table(title="gsl_eq demo: roofline cost (µs), ILP extraction; greedy: default rules in order; "
                        "saturate: default + algebraic rules", title_justify="left")
    for column in ("model", "mode", "calls", "before", "after", "gain", "stop", "time (s)", "max |diff|"):
        table.add_column(column, justify="left" if column in ("model", "mode", "stop") else "right")
    failures = 0
    for name, build in DEMO_MODELS.items():
        wl = build()
        for mode, rule_list in (("greedy", rules.default()), ("saturate", [*rules.default(), *rules.algebraic()])):
            result = optimize_with_progress(console, wl, rule_list, mode)
            r = result.report
            diff = numeric_check(wl, result.workload)
            ok = diff <= 1e-4
            failures += not ok
            table.add_row(name, mode, f"{r.calls_before} -> {r.calls_after}", f"{r.cost_before * 1e6:.1f}",
                          f"{r.cost_after * 1e6:.1f}", f"{r.cost_before / r.cost_after:.3f}x", r.stop_reason or "-",
                          f"{r.timings['total']:.2f}", f"[green]{diff:.1e}[/]" if ok else f"[red]{diff:.1e}[/]")
    console.print(table)
    return 1 if failures else 0


def run_optimize(console: Console, args: argparse.Namespace) -> int:
    wl = load_model(args.model)
    result = optimize_with_progress(
        console, wl, RULE_SETS[args.rules](), args.mode, cost=args.cost, extractor=args.extractor,
        node_limit=args.node_limit, iter_limit=args.iter_limit, time_limit=args.time_limit)
    console.print(result.report.table())
    stem = Path(args.model).stem
    out = Path(args.output or f"{stem}.optimized.py")
    out.write_text(result.mod.script())
    params = out.with_suffix(".params.npz")
    np.savez(params, **{k: np.asarray(v) for k, v in result.workload.params.items()})
    report = Path(args.report or f"{stem}.report.json")
    report.write_text(result.report.to_json())
    if args.check:
        diff = numeric_check(wl, result.workload)
        console.print(f"numeric check: max |diff| = {diff:.1e}")
    console.print(f"wrote {out} (TVMScript), {params} (parameters), {report} (report)")
    return 0


def run_orderings(console: Console, args: argparse.Namespace) -> int:
    wl = load_model(args.model)
    with console.status("running greedy mode under each ordering, then saturation"):
        table = compare_orderings(wl, RULE_SETS[args.rules](), orderings=args.n, cost=args.cost, seed=args.seed,
                                  plot=args.plot)
    console.print(table.table())
    if args.plot:
        console.print(f"wrote {args.plot}")
    return 0


def run_bench(args: argparse.Namespace) -> int:
    """Run the benchmark suite of a source checkout (benchmarks/run.py is not installed with the package)."""
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
    if not script.is_file():
        raise GslEqError(f"gsl-eq bench needs a source checkout of gsl_eq: {script} does not exist")
    extra = (["--quick"] if args.quick else []) + (["--models", args.models] if args.models else [])
    return subprocess.run([sys.executable, str(script), *extra]).returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gsl-eq", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="optimize the embedded models in both modes, with a numeric check")
    bench = sub.add_parser("bench", help="run the benchmark suite (benchmarks/run.py) and update BENCHMARKS.md")
    bench.add_argument("--quick", action="store_true", help="small versions of the models (under 5 minutes)")
    bench.add_argument("--models", help="comma-separated model names (default: all)")
    for name, text in (("optimize", "optimize one model"), ("orderings", "compare rule orderings with saturation")):
        p = sub.add_parser(name, help=text)
        p.add_argument("model", help="a model name (see gsl_eq.models) or a .py file defining workload, mod or model")
        p.add_argument("--rules", choices=list(RULE_SETS), default="default")
        p.add_argument("--cost", default="roofline", help="opcount, roofline or measured")
    opt = sub.choices["optimize"]
    opt.add_argument("--mode", choices=MODES, default="saturate")
    opt.add_argument("--extractor", choices=EXTRACTORS, default="ilp")
    opt.add_argument("--node-limit", type=int, default=50_000)
    opt.add_argument("--iter-limit", type=int, default=30)
    opt.add_argument("--time-limit", type=float, default=60.0)
    opt.add_argument("-o", "--output", help="TVMScript file to write (default: <model>.optimized.py)")
    opt.add_argument("--report", help="JSON report to write (default: <model>.report.json)")
    opt.add_argument("--check", action="store_true", help="run both modules on random inputs and compare")
    order = sub.choices["orderings"]
    order.add_argument("-n", type=int, default=24, help="orderings to try (all permutations when fewer)")
    order.add_argument("--seed", type=int, default=0)
    order.add_argument("--plot", help="save a chart of the costs (PNG)")
    args = parser.parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 140)  # pipes and logs get whole rows
    try:
        if args.command == "demo":
            return demo(console)
        if args.command == "bench":
            return run_bench(args)
        return run_optimize(console, args) if args.command == "optimize" else run_orderings(console, args)
    except (GslEqError, ValueError) as err:
        console.print(f"[red]error:[/] {err}")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
