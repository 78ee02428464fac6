"""gsl-eq: optimize TVM Relax models with GSL rules, greedily or by equality saturation.

  gsl-eq demo                                  TENSAT's BERT, saturation vs greedy orderings
  gsl-eq optimize bert_encoder -o out.py       a model by name, or a Python file defining one
  gsl-eq optimize bert_encoder --html r.html   the same, with a page drawing what changed
  gsl-eq orderings inception_block -n 24       greedy mode under rule orderings vs saturation
  gsl-eq check my_rules.py                     is each rule sound? (numeric check on drawn instances)
  gsl-eq explain my_rules.py resnet50          why (not) does each rule fire on a model?
  gsl-eq sweep --models bert,nasrnn --quick -o sweep.jsonl
                                               many models x rule sets x modes x cost models, on Ray
  gsl-eq bench --quick                         the benchmark suite (from a source checkout)

Every table gives costs in microseconds (us) of the cost model named above it
(op calls for the opcount model) and speedup = cost before / cost after, so
above 1 means faster. Run gsl-eq <command> --help for a command's options.
"""

# Help must answer at once: TVM, egglog, torch, numpy, rich and the rest of gsl_eq are imported inside
# the functions that need them. MODEL_NAMES, MODES, EXTRACTORS and COST_MODELS copy what the library
# defines, so that help can list them without importing it; tests/test_cli.py checks they are equal.

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .errors import GslEqError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from .optimizer import OptimizeReport, OptimizeResult
    from .workload import Workload

#: The models optimize and orderings know by name: the keys of model_registry().
MODEL_NAMES = (
    "ac_sum", "bert", "bert_encoder", "diamond_conv", "distilbert", "hf_bert", "hf_gpt2", "hf_llama",
    "inception_block", "inception_network", "inception_v3", "mobilenet_v2", "nasnet_a", "nasrnn", "polynomial", "resnet50",
    "resnet_bottleneck", "resnext50", "squeezenet", "t5_encoder", "tensat_bert", "tensat_inception_v3",
    "tensat_nasnet_a", "tensat_nasrnn", "tensat_resnext50", "tensat_squeezenet", "tensat_vgg19",
    "transformer_encoder_layer", "vgg19", "vit",
    "wav2vec2", "whisper_encoder",
)
MODES = ("saturate", "greedy")  # gsl_eq.optimizer.arguments.MODES
EXTRACTORS = ("ilp", "greedy", "tree", "egglog")  # gsl_eq.optimizer.arguments.EXTRACTORS
COST_MODELS = ("opcount", "roofline", "measured", "tvm", "gpu", "gpu-measured")  # gsl_eq.cost.model.COST_MODELS
RULE_SETS = {
    "default": "a safe inference pipeline: legalization, structural clean-up, batch norms folded or lowered, "
               "fusions that never add work",
    "all": "every rule of the library but the algebraic identities",
    "algebraic": "algebraic identities (commutativity, associativity...; for saturate mode)",
    "default+algebraic": "default and algebraic together",
    "tvm": "the rules mirroring TVM's CombineParallelMatmul, FoldBatchnormToConv2D, "
           "DecomposeOpsForInference and RemoveRedundantReshape",
    "cpu": "forms TVM's CPU backend may run faster (a 1x1 conv as a matmul, strided or not)",
    "taso": "TASO's substitutions with a Relax meaning (single_rules.txt and multi_rules.txt)",
    "tensat": "TENSAT's experiment set of TASO's substitutions (converted.txt, converted_multi.txt and TASO's hand-written conv merges)",
}  # gsl_eq.rules.sets.RULE_SETS; a sum of sets joined by + (tensat+default) is a set too
DEMO_MODELS = {"tensat_bert": "TENSAT's BERT (4 of its 8 layers, at its widths): TENSAT's rules under the gpu "
                              "model, beside TENSAT's published speedup",
               "matmul_chains": "three small matmul products, each wanting a different rewrite: saturation "
                                "against every greedy ordering of three rules"}
DEFAULTS = {"rules": "default", "cost": "roofline", "mode": "saturate", "extractor": "ilp", "node_limit": 50_000,
            "iter_limit": 30, "time_limit": 60.0, "n": 24, "seed": 0, "select": "cost", "candidates": 4,
            "cycles": "keep", "search": "saturate", "schedule_samples": 8}  # schedule_samples: ScheduleDatabase's default
SPEEDUP = "speedup = before / after (>1 is faster)"
QUICK_HELP = "the model's small version, as gsl-eq bench --quick builds it (models without one are small already)"
BIND_HELP = ("sizes of the model's symbolic dimensions, comma-separated (batch=1,seq=128): gsl_eq works on static "
             "shapes")


def model_registry() -> dict[str, Callable[[], Workload]]:
    """Every model the command builds by name (this imports gsl_eq.models, hence TVM): each function of
    gsl_eq.models that builds a workload from its default arguments, and the small Hugging Face encoders."""
    from .models.registry import model_registry as registry

    return registry()


def rule_set(name: str) -> list:
    """The rules of a named set (see RULE_SETS) or of a sum of them (tensat+default)."""
    from .rules.sets import rule_set as named

    return named(name)


def rule_set_name(spec: str) -> str:
    """``spec`` if it names a rule set or a sum of them (argparse's check; nothing is imported)."""
    parts = [part.strip() for part in spec.split("+")]
    groups = [name for name in RULE_SETS if "+" not in name]
    unknown = [part for part in parts if part not in groups]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown rule set {unknown[0]!r}; choose from {', '.join(groups)} "
                                         "or a sum of them such as tensat+default")
    return spec


def positive_int(text: str) -> int:
    """``text`` as an integer of at least 1 (argparse's check)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def load_rules(spec: str, names: Sequence[str] | None = None) -> list:
    """The rules of a rule set (RULE_SETS) or of a Python file: every Subst it defines at top level
    (alone, or in a list or tuple), and what its zero-argument functions annotated to return a
    Subst (or a list of them) build, in the order the file defines them. ``names`` keeps those rules."""
    import inspect
    import runpy

    from .frontend import Subst

    path = Path(spec)
    if path.suffix != ".py":
        try:
            rule_set_name(spec)
        except argparse.ArgumentTypeError:
            raise GslEqError(f"{spec}: neither a rule set ({', '.join(RULE_SETS)}, or a sum of them) "
                             "nor a Python file") from None
        found = rule_set(spec)
    else:
        if not path.is_file():
            raise GslEqError(f"{spec}: neither a rule set ({', '.join(RULE_SETS)}) nor a Python file")
        scope = runpy.run_path(str(path))
        found = []
        for value in scope.values():
            if inspect.isfunction(value) and value.__module__ == "<run_path>" and "Subst" in str(
                    inspect.signature(value).return_annotation) and not inspect.signature(value).parameters:
                value = value()
            items = value if isinstance(value, (list, tuple)) else [value]
            found += [item for item in items if isinstance(item, Subst) and all(item is not f for f in found)]
        if not found:
            raise GslEqError(f"{spec} defines no rule (a gsl_eq.Subst, a list of them, or a function returning one)")
    if names:
        unknown = sorted(set(names) - {r.name for r in found})
        if unknown:
            raise GslEqError(f"no rule named {', '.join(unknown)} in {spec}; its rules: {', '.join(r.name for r in found)}")
        found = [r for r in found if r.name in set(names)]
    return found


def load_model(spec: str, quick: bool = False, bind: dict[str, int] | None = None) -> Workload:
    """A model by name (``quick``: its small version, where it has one), an ONNX file, or a Python file
    defining `workload` (a Workload), `mod` (an IRModule, its parameters kept as runtime inputs), or
    `model` (a torch module) with `example_inputs`; ``bind`` sizes its symbolic dimensions."""
    from .models.registry import load_model as load

    return load(spec, quick, bind)


def bindings(text: str) -> dict[str, int]:
    """``--bind batch=1,seq=128``: sizes of symbolic dimensions by name."""
    found: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, size = part.partition("=")
        if not eq or not name.strip() or not size.strip().isdigit() or int(size) < 1:
            raise argparse.ArgumentTypeError(f"expected NAME=SIZE with a positive integer size (batch=1), got {part!r}")
        found[name.strip()] = int(size)
    if not found:
        raise argparse.ArgumentTypeError(f"expected NAME=SIZE[,NAME=SIZE...], got {text!r}")
    return found


def optimize_with_progress(console: Console, wl: Workload, rule_list: list, mode: str, **options: Any) -> OptimizeResult:
    """gsl_eq.optimize with a progress bar over saturation iterations, shown on terminals only (it leaves
    nothing behind: no bar, no blank line, in a pipe or a log file)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from .optimizer import optimize

    iterations = options.get("iter_limit", DEFAULTS["iter_limit"])
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                  TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal) as progress:
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
    """Largest absolute difference between the outputs of `a` and `b` on the same random inputs."""
    import numpy as np

    inputs = a.random_inputs(0)
    ya, yb = a(**inputs), b(**inputs)
    ya, yb = (ya,) if isinstance(ya, np.ndarray) else ya, (yb,) if isinstance(yb, np.ndarray) else yb
    return max(float(np.max(np.abs(u - v))) for u, v in zip(ya, yb))


# --------------------------------------------------------------------------- costs, one unit and one direction


def shown_unit(unit: str) -> str:
    """The unit tables print costs of the report's ``unit`` in (seconds as us)."""
    from .cost import display_unit

    return display_unit(unit)[0]


def fmt_cost(cost: float, unit: str) -> str:
    """A cost of the report's ``unit`` in the unit tables print (shown_unit)."""
    from .cost import display_unit

    shown, factor = display_unit(unit)
    value = cost * factor
    return f"{value:.0f}" if shown == "op calls" else f"{value:.1f}" if abs(value) >= 1 else f"{value:.3f}"


def fmt_speedup(before: float, after: float) -> str:
    """before / after: above 1 is faster (cheaper)."""
    return f"{before / after:.3f}x" if after > 0 else "-"


def print_heading(console: Console, what: str, cost_model: str, unit: str) -> None:
    """The lines above a table of costs: what it shows, in which unit, and what its ratio means."""
    console.print(f"{what}.\nCosts in {shown_unit(unit)}, {cost_model} model; {SPEEDUP}.")


def results_table(unit: str) -> Table:
    """The table optimize prints: one row per model and mode (see add_result); costs of ``unit``."""
    from rich.table import Table

    unit = shown_unit(unit)
    table = Table()
    for column in ("model", "mode", "op calls", f"before ({unit})", f"after ({unit})", "speedup", "stop", "time (s)"):
        table.add_column(column, justify="left" if column in ("model", "mode", "stop") else "right",
                         no_wrap=column == "model")
    return table


def add_result(table: Table, model: str, r: OptimizeReport) -> None:
    table.add_row(model, r.mode, f"{r.calls_before} -> {r.calls_after}", fmt_cost(r.cost_before, r.cost_unit),
                  fmt_cost(r.cost_after, r.cost_unit), fmt_speedup(r.cost_before, r.cost_after), r.stop_reason or "-",
                  f"{r.timings['total']:.2f}")


def details_table(r: OptimizeReport) -> Table:
    """What the results table leaves out: e-graph, extraction, budget, the rules the result uses, what
    the run applied and rejected, phase times, notes."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(show_header=False)
    table.add_column(style="bold")
    table.add_column()
    rows = []
    if r.mode == "saturate":
        gap = "n/a" if r.gap is None else f"{r.gap:.2%}"
        rows += [("e-graph", f"{r.enodes} e-nodes, {r.eclasses} e-classes, {len(r.iterations)} iterations"),
                 ("extractor", f"{r.extractor_label()} ({r.extraction_status}, gap {gap})")]
        if r.time_limit is not None and r.extraction_budget is not None:
            rows.append(("time budget", r.budget()))
    rejected = "; ".join(f"{rule}: " + ", ".join(f"{why} x{n}" for why, n in reasons.items())
                         for rule, reasons in sorted(r.rejected.items()))
    applications = ", ".join(f"{k} x{v}" for k, v in sorted(r.applications.items()) if v) or "none"
    rows += [("rules used", r.used_text()),
             ("applications" + (" (discarded)" if r.input_returned else ""), applications)]
    if rejected:
        rows.append(("rejected", rejected))
    rows.append(("time (s)", ", ".join(f"{k} {v:.2f}" for k, v in r.timings.items())))
    rows += [("failed the check", f) for f in r.fallbacks]
    rows += [("note", n) for n in r.notes]
    for key, value in rows:
        table.add_row(key, escape(value))
    return table


# --------------------------------------------------------------------------- commands


#: TENSAT's published speedup for its BERT (Yang et al., "Equality Saturation for Tensor Graph
#: Superoptimization", MLSys 2021: 9.2 %, TASO's cost model measured on a V100), as
#: benchmarks/tensat_table.py and BENCHMARKS.md record it: the one figure the demo does not compute.
TENSAT_BERT_SPEEDUP = 1.092
#: TENSAT's settings as benchmarks/tensat_table.py's SETTINGS give them (its runs' limits, iter_multi=1 and
#: cycle filter), within 60 s.
DEMO_TENSAT_SETTINGS = dict(node_limit=50_000, iter_limit=15, multi_iterations=1, cycles="filter", time_limit=60.0)
#: TENSAT's BERT as the demo builds it: TENSAT's layer at its published widths (seq 64, hidden 1024, 16
#: heads), 4 of its 8 layers, so that the demo ends within 30 s (the result's folded weights are most
#: of its time: gsl-eq optimize tensat_bert --cost gpu --rules tensat+default runs all 8).
DEMO_BERT_LAYERS = 4
#: The matmul rules of rules.algebraic() the demo's second model is optimized with, in every order.
DEMO_CHAIN_RULES = ("matmul_associative", "matmul_factor_left", "matmul_distributes_left")
#: The largest difference from the input's outputs a demo result may show.
DEMO_TOLERANCE = 1e-4


def demo_matmul_chains(n: int = 256, d: int = 64, h: int = 256, m: int = 16) -> Workload:
    """Three matmul products, each wanting a different rewrite: ``(x @ w1) @ w2`` (weights: reassociated,
    ``w1 @ w2`` folds into one (d, d) weight), ``(a @ b) @ c`` (activations (m, n), (n, m), (m, n):
    reassociated it does n / m times the work) and ``x @ p + x @ q`` (factored: one matmul fewer)."""
    from tvm import relax

    from .models.blocks import var
    from .workload import Workload

    R = relax.op
    x = var("x", n, d)
    y1 = R.matmul(R.matmul(x, var("w1", d, h)), var("w2", h, d))
    a, b, c = var("a", m, n), var("b", n, m), var("c", m, n)
    y2 = R.matmul(R.matmul(a, b), c)
    y3 = R.add(R.matmul(x, var("p", d, d)), R.matmul(x, var("q", d, d)))
    return Workload.from_expr(relax.Tuple([y1, y2, y3]), {"x", "a", "b", "c", "p", "q"})


def demo_table() -> Table:
    from rich.table import Table

    table = Table()
    for column in ("model", "run", "costs", "before", "after", "speedup", "compared with", "check: max |diff|",
                   "time (s)"):
        table.add_column(column, justify="left" if column in ("model", "run", "costs", "compared with") else
                         "right", no_wrap=column in ("model", "run", "check: max |diff|"))
    return table


def demo_row(table: Table, model: str, run: str, cost_model: str, r: OptimizeReport, compared: str, diff: float,
             seconds: float) -> None:
    """One row of the demo's table; its check green within DEMO_TOLERANCE, else red."""
    colour = "green" if diff <= DEMO_TOLERANCE else "red"
    table.add_row(model, run, cost_model, fmt_cost(r.cost_before, r.cost_unit), fmt_cost(r.cost_after, r.cost_unit),
                  fmt_speedup(r.cost_before, r.cost_after), compared, f"[{colour}]{diff:.1e}[/]", f"{seconds:.1f}")


def demo(console: Console) -> int:
    """What gsl_eq is for, each result built with TVM and checked on random inputs: (a) TENSAT's BERT
    with TENSAT's rules and settings under the gpu model, beside TENSAT's published speedup; (b) a
    model where saturation beats every greedy ordering of its rules. Exits 1 if a check differs by
    more than DEMO_TOLERANCE."""
    import contextlib
    import time

    from . import rules
    from .models.tensat import tensat_bert
    from .orderings import orderings_of

    table, diffs, sentences = demo_table(), [], []

    # (a) TENSAT's BERT (its published widths, fewer layers), TENSAT's rules and settings, the gpu model
    bert = tensat_bert(layers=DEMO_BERT_LAYERS)
    t = time.perf_counter()
    a = optimize_with_progress(console, bert, rule_set("tensat+default"), "saturate", cost="gpu",
                               **DEMO_TENSAT_SETTINGS)
    seconds = time.perf_counter() - t
    diffs.append(numeric_check(bert, a.workload))
    ra = a.report
    demo_row(table, "(a) tensat_bert", "saturate, tensat+default", "gpu", ra,
             f"TENSAT paper {TENSAT_BERT_SPEEDUP:.3f}x", diffs[-1], seconds)
    sentences.append(
        f"(a) TENSAT's BERT ({DEMO_BERT_LAYERS} of its 8 layers, at its widths; {ra.calls_before} op calls) with "
        f"TENSAT's rules and settings: saturation finds a graph {ra.speedup:.3f}x faster under gsl_eq's gpu model (an analytic V100) in "
        f"{seconds:.1f} s, where TENSAT's paper reports {TENSAT_BERT_SPEEDUP:.3f}x (its figure, under TASO's cost "
        "model measured on a V100, not computed here).")

    # (b) saturation against every greedy ordering of the same rules, the roofline model
    chains = demo_matmul_chains()
    by_name = {r.name: r for r in rules.algebraic()}
    chain_rules = [by_name[name] for name in DEMO_CHAIN_RULES]
    orders = orderings_of(len(chain_rules), 6)  # all 3! of them
    status = (console.status(f"greedy mode under each of the {len(orders)} orderings") if console.is_terminal
              else contextlib.nullcontext())
    greedy_runs = []
    with status:
        for order in orders:
            t = time.perf_counter()
            g = optimize_with_progress(console, chains, chain_rules, "greedy", order=list(order))
            greedy_runs.append((g, time.perf_counter() - t, order))
    t = time.perf_counter()
    s = optimize_with_progress(console, chains, chain_rules, "saturate")
    seconds = time.perf_counter() - t
    diffs.append(numeric_check(chains, s.workload))
    rs = s.report
    best = min(greedy_runs, key=lambda run: run[0].report.cost_after)
    worst = max(greedy_runs, key=lambda run: run[0].report.cost_after)
    over_best = best[0].report.cost_after / rs.cost_after
    demo_row(table, "(b) matmul_chains", f"saturate, {len(chain_rules)} rules", "roofline", rs,
             f"{over_best:.2f}x below greedy", diffs[-1], seconds)
    for label, (g, took, order) in (("best", best), ("worst", worst)):
        diffs.append(numeric_check(chains, g.workload))
        demo_row(table, "(b) matmul_chains", f"greedy, {label} of {len(orders)}", "roofline", g.report,
                 f"stop: {g.report.stop_reason}", diffs[-1], took)
    unit = rs.cost_unit
    named = {label: " > ".join(chain_rules[i].name for i in order) for label, (_, _, order) in
             (("best", best), ("worst", worst))}
    sentences.append(
        "(b) matmul_chains holds three products that each want a different rewrite (two weights: reassociated, "
        "they fold into one; three activations: best left as they are; x @ p + x @ q: factored). Greedy mode "
        f"applies a rule wherever it matches, so of all {len(orders)} orderings of its {len(chain_rules)} rules the "
        f"best ({named['best']}) ends at {fmt_cost(best[0].report.cost_after, unit)} us and the worst "
        f"({named['worst']}) at {fmt_cost(worst[0].report.cost_after, unit)} us; saturation chooses per product: "
        f"{fmt_cost(rs.cost_after, unit)} us, {over_best:.2f}x below every ordering.")

    console.print("gsl_eq demo: what equality saturation buys. Each result was built with TVM and run on random "
                  "inputs; check = the largest difference from the input's outputs.\n"
                  f"Costs (before, after) in us under each row's cost model; {SPEEDUP}.")
    console.print(table)
    for sentence in sentences:
        console.print(sentence)
    return 1 if any(not diff <= DEMO_TOLERANCE for diff in diffs) else 0


def greedy_runnable(console: Console, spec: str, both: bool = False) -> list:
    """The rules of ``spec`` greedy mode can run (a connected source); says what it leaves out. ``both``:
    saturation runs the same rules, to be compared with greedy mode."""
    from .sweeps.cells import greedy_rules

    kept, left_out = greedy_rules(spec)
    if left_out:
        console.print(f"note: greedy mode runs the {len(kept)} rules of {spec} with a connected source; {left_out} "
                      "with outputs that share no node are left out" + (", from saturation too" if both else
                                                                        " (saturate mode pairs them)"))
    return kept


def default_rules(args: argparse.Namespace) -> str:
    """The rule set when none is named: optimize()'s default, which adds the CPU rules to saturate mode under tvm."""
    return DEFAULTS["rules"] + ("+cpu" if getattr(args, "mode", "") == "saturate" and args.cost == "tvm" else "")


def run_optimize(console: Console, args: argparse.Namespace) -> int:
    args.rules = args.rules or default_rules(args)
    wl = load_model(args.model, args.quick, args.bind)
    rules = greedy_runnable(console, args.rules) if args.mode == "greedy" else rule_set(args.rules)
    schedules = None
    if args.select == "measured" or args.cost == "tvm":
        from .measure.schedule_db import ScheduleDatabase

        schedules = ScheduleDatabase(samples=args.schedule_samples)
    result = optimize_with_progress(
        console, wl, rules, args.mode, cost=args.cost, extractor=args.extractor,
        node_limit=args.node_limit, iter_limit=args.iter_limit, time_limit=args.time_limit, select=args.select,
        candidates=args.candidates, multi_iterations=args.multi_iterations, cycles=args.cycles, search=args.search,
        schedules=schedules)
    report = result.report
    stem = Path(args.model).stem
    table = results_table(report.cost_unit)
    add_result(table, stem, report)
    print_heading(console, f"gsl_eq optimize, {args.rules} rules", report.cost_model, report.cost_unit)
    console.print(table)
    console.print(details_table(report))
    for c in report.candidates:
        second = "".join(f"; against {check['against']}: {check[build]['candidate'] * 1e6:.1f} us under the {build}"
                         for check in c.get("confirmed", []) for build in ("second draw", "default build") if build in check)
        console.print(f"candidate {c['label']}: {c['seconds'] * 1e6:.1f} us measured (median of {len(c['rounds'])} "
                      f"rounds{second}){', returned' if c.get('returned') else ''}")
    out, params = result.workload.save(args.output or f"{stem}.optimized.py")
    report_path = Path(args.report or f"{stem}.report.json")
    report_path.write_text(report.to_json())
    if args.check:
        diff = numeric_check(wl, result.workload)
        console.print(f"numeric check: max |diff| = {diff:.1e}")
    page = f", {result.to_html(args.html, title=f'gsl_eq optimize: {stem}, {args.rules} rules, {args.mode} mode')} " \
        "(page)" if args.html else ""
    proof = f", {result.proof.save(args.proof)} (proof: {result.proof.summary()})" if args.proof else ""
    console.print(f"wrote {out} (TVMScript), {params} (parameters), "
                  f"{report_path} (report, costs in {report.cost_unit}){page}{proof}")
    return 0


def run_orderings(console: Console, args: argparse.Namespace) -> int:
    import contextlib

    from rich.table import Table

    from .orderings import compare_orderings

    args.rules = args.rules or DEFAULTS["rules"]
    wl = load_model(args.model, args.quick, args.bind)
    status = (console.status("running greedy mode under each ordering, then saturation") if console.is_terminal
              else contextlib.nullcontext())
    with status:
        comparison = compare_orderings(wl, greedy_runnable(console, args.rules, both=True), orderings=args.n,
                                       cost=args.cost, seed=args.seed,
                                       plot=args.plot, address=args.address)
    model, unit = comparison.cost_model, comparison.cost_unit
    table = Table()
    for column in ("mode", "ordering", f"cost ({shown_unit(unit)})", "speedup", "op calls", "time (s)"):
        table.add_column(column, justify="left" if column in ("mode", "ordering") else "right")
    for row in comparison.rows():
        table.add_row(row["mode"], row["ordering"], fmt_cost(row["cost"], unit),
                      fmt_speedup(comparison.cost_before, row["cost"]), str(row["calls"]), f"{row['time']:.2f}")
    print_heading(console, f"rule orderings, {Path(args.model).stem}, {args.rules} rules, cost "
                           f"{fmt_cost(comparison.cost_before, unit)} before optimization", model, unit)
    console.print(table)
    if args.plot:
        console.print(f"wrote {args.plot} (costs in {unit})")
    if args.html:
        console.print(f"wrote {comparison.to_html(args.html, model=Path(args.model).stem, rules=args.rules)} (page)")
    return 0


def run_check(console: Console, args: argparse.Namespace) -> int:
    """Check each rule numerically; exit 1 if one is unsound or its target cannot be typed."""
    import json

    from rich.markup import escape
    from rich.table import Table

    from .soundness import Verdict, check_rules, failed

    results = check_rules(load_rules(args.rules, args.only), trials=args.trials, seed=args.seed)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2, default=str))
        return 1 if failed(results) else 0
    colour = {Verdict.SOUND: "green", Verdict.UNSOUND: "red", Verdict.UNTYPED: "red", Verdict.NO_INSTANCE: "yellow",
              Verdict.UNBUILDABLE: "yellow"}
    table = Table()
    for column in ("rule", "verdict", "evidence"):
        table.add_column(column, no_wrap=column != "evidence")
    for r in results:
        table.add_row(escape(r.rule), f"[{colour[r.verdict]}]{r.verdict.value}[/]", escape(r.summary()))
    console.print(f"Soundness of {len(results)} rules, {args.trials} instances each (seed {args.seed}): each instance "
                  "is drawn so the source matches, rewritten, built and run with TVM on random inputs.")
    console.print(table)
    for r in results:
        if r.counterexample is not None:
            ex = r.counterexample
            console.print(f"[bold]{escape(r.rule)}[/]: counterexample, {escape(ex.problem)}")
            console.print(escape(f"attributes: {ex.attributes}"))
            console.print(escape("\n".join(line for line in ex.module.splitlines() if line.strip())), soft_wrap=True)
    return 1 if failed(results) else 0


def run_explain(console: Console, args: argparse.Namespace) -> int:
    """For each rule, every place its source could start in the model, and why it stopped there."""
    import json

    from rich.markup import escape
    from rich.table import Table

    from .greedy.explain import explain

    wl = load_model(args.model, args.quick, args.bind)
    explanations = [explain(rule, wl) for rule in load_rules(args.rules, args.only)]
    if args.json:
        print(json.dumps([e.to_dict() for e in explanations], indent=2, default=str))
        return 0
    for e in explanations:
        console.print(f"[bold]{escape(e.summary())}[/]")
        if not e.attempts:
            continue
        table = Table()
        for column in ("place", "outcome", "matched", "stopped at", "reason"):
            table.add_column(column, no_wrap=column in ("outcome", "matched"))
        for a in e.attempts[:args.limit]:
            matched = "" if a.outcome == "fires" else f"{a.matched}/{e.source_patterns}"
            table.add_row(escape(a.node), a.outcome, matched, escape(a.pattern or ""), escape(a.reason or ""))
        console.print(table)
        if len(e.attempts) > args.limit:
            left = ", ".join(f"{reason} x{n}" for reason, n in e.reasons().items())
            console.print(f"{len(e.attempts) - args.limit} more places not shown; all places by reason: {escape(left)}")
    return 0


def run_sweep(console: Console, args: argparse.Namespace) -> int:
    """Run the sweep's cells on Ray; print each line as it comes (in a pipe; a progress bar on terminals),
    then the summary table. Exits with 1 if a cell failed."""
    from rich.markup import escape

    from .sweeps import sweep

    def names(text: str) -> list[str]:
        return [name.strip() for name in text.split(",")]

    def shown(line: dict) -> None:
        if not console.is_terminal:
            status = f"error: {line['error']}" if line.get("error") else \
                f"{fmt_cost(line['cost_before'], line['cost_unit'])} -> {fmt_cost(line['cost_after'], line['cost_unit'])} " \
                f"{shown_unit(line['cost_unit'])}, {fmt_speedup(line['cost_before'], line['cost_after'])}"
            console.print(escape(f"{Path(line['model']).name} · {line['rules']} · {line['mode']} · {line['cost_model']}"
                                 + (f" · {line['extractor']}" if line.get("extractor") else "") + f": {status}"))

    limits = {"node_limit": args.node_limit, "iter_limit": args.iter_limit, "time_limit": args.time_limit}
    result = sweep(names(args.models), names(args.rules), names(args.modes), names(args.costs), names(args.extractors),
                   orderings=args.orderings, seed=args.seed, quick=args.quick, output=args.output,
                   address=args.address, num_cpus=args.cpus, retry_failed=args.retry_failed, progress=True,
                   on_line=shown, **{k: v for k, v in limits.items() if v is not None})
    console.print(result.table())
    ran = f"{result.ran} run now on {len(result.ran_on)} Ray node(s)" if result.ran else "none run now"
    console.print(f"wrote {args.output}: {len(result.lines)} cells, {ran}, "
                  f"{result.resumed} read back, {len(result.failed)} failed; {result.seconds:.1f} s")
    if args.plot:
        console.print(f"wrote {result.plot(args.plot)} (speedups)")
    if args.html:
        console.print(f"wrote {result.to_html(args.html)} (page)")
    return 1 if result.failed else 0


def run_bench(args: argparse.Namespace) -> int:
    """Run the benchmark suite of a source checkout (benchmarks/run.py is not installed with the package)."""
    import subprocess

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
    if not script.is_file():
        raise GslEqError(f"gsl-eq bench needs a source checkout of gsl_eq: {script} does not exist")
    extra = (["--quick"] if args.quick else []) + (["--models", args.models] if args.models else []) + \
        (["--address", args.address] if args.address else [])
    return subprocess.run([sys.executable, str(script), *extra]).returncode


# --------------------------------------------------------------------------- arguments


def _paragraph(text: str, **indents: str) -> str:
    return textwrap.fill(text, 79, break_on_hyphens=False, **indents)


def _listing(title: str, items: dict[str, str] | Sequence[str]) -> str:
    """A help paragraph: a title and its items, wrapped (names) or one a line (names with descriptions)."""
    if isinstance(items, dict):
        lines = [f"  {name:<18} {text}" for name, text in items.items()]
        return "\n".join([f"{title}:", *(_paragraph(line, subsequent_indent=" " * 21) for line in lines)])
    return f"{title}:\n" + _paragraph(", ".join(items), initial_indent="  ", subsequent_indent="  ")


def build_parser() -> argparse.ArgumentParser:
    """The gsl-eq argument parser; building it imports nothing heavy."""
    d = DEFAULTS
    raw = argparse.RawDescriptionHelpFormatter  # descriptions and epilogs are wrapped here, lists kept
    parser = argparse.ArgumentParser(prog="gsl-eq", description=__doc__, formatter_class=raw)
    sub = parser.add_subparsers(dest="command", required=True, metavar="command",
                                help="demo, optimize, orderings, check, explain, sweep or bench")
    sub.add_parser("demo", help="what gsl_eq is for, in two results, each with a numeric check",
                   formatter_class=raw, epilog=_listing("models", DEMO_MODELS), description=_paragraph(
                       "(a) TENSAT's BERT optimized with TENSAT's rules (tensat+default) and settings under the "
                       "gpu model, beside the speedup TENSAT's paper reports; (b) a model where saturation beats "
                       "every greedy ordering of its rules (roofline model): saturate mode against the best and "
                       "the worst of the orderings. Each result is built with TVM and checked against the "
                       "original on random inputs. Costs in us; speedup = before / after (>1 is faster). Exits "
                       "with 1 if a result differs by more than 1e-4."))
    epilog = "\n\n".join([_listing("models", MODEL_NAMES), _listing("rule sets", RULE_SETS)])
    for name, text, description in (
            ("optimize", "optimize one model",
             "Optimize one model and write it as TVMScript, with its parameters and a JSON report."),
            ("orderings", "compare rule orderings with saturation",
             "Run greedy mode under many orderings of the rules, and saturate mode once, on one model.")):
        p = sub.add_parser(name, help=text, epilog=epilog, formatter_class=raw, description=_paragraph(
            f"{description} Costs in us of the cost model (op calls for opcount); {SPEEDUP}."))
        p.add_argument("model", help="a model name (listed below), a module optimize wrote (-o), an ONNX file (.onnx) "
                                     "or a .py file defining workload (a gsl_eq.Workload), mod (a tvm.IRModule) or "
                                     "model (a torch.nn.Module) with example_inputs")
        p.add_argument("--quick", action="store_true", help=QUICK_HELP)
        p.add_argument("--bind", type=bindings, default=None, metavar="NAME=SIZE", help=BIND_HELP)
        p.add_argument("--rules", type=rule_set_name, default=None, metavar="SET",
                       help=f"the rule set, one of {', '.join(RULE_SETS)} (listed below), or a sum of them such as "
                            f"tensat+default (default: {d['rules']}; {d['rules']}+cpu in saturate mode with --cost "
                            "tvm, as optimize() chooses)")
        p.add_argument("--cost", choices=COST_MODELS, default=d["cost"],
                       help="the cost model: roofline (time on this CPU from FLOPs and bytes moved), measured "
                            "(each distinct call timed with TVM on this CPU, cached in ~/.cache/gsl_eq), tvm (TVM's "
                            "fused kernels, scheduled and timed on this CPU), gpu (a V100: kernels by roofline at the "
                            "share of the device their threads fill, plus a launch, element-wise epilogues fused, "
                            f"splits and views free) or opcount (one per op call) (default: {d['cost']})")
    opt = sub.choices["optimize"]
    opt.add_argument("--mode", choices=MODES, default=d["mode"],
                     help="saturate: every rule at once in an e-graph, then the cheapest equivalent graph is "
                          f"extracted; greedy: GSL's matcher, rules in order (default: {d['mode']})")
    opt.add_argument("--extractor", choices=EXTRACTORS, default=d["extractor"],
                     help="how saturate mode picks the graph: ilp (optimal, or the best found and its gap), greedy "
                          f"(DAG-aware, near-linear), tree or egglog (egglog's own) (default: {d['extractor']})")
    opt.add_argument("--node-limit", type=int, default=d["node_limit"], metavar="N",
                     help=f"most e-nodes the e-graph holds; in greedy mode, most graph nodes (default: {d['node_limit']})")
    opt.add_argument("--iter-limit", type=int, default=d["iter_limit"], metavar="N",
                     help="most saturation iterations; in greedy mode, most rounds over the rules "
                          f"(default: {d['iter_limit']})")
    opt.add_argument("--time-limit", type=float, default=d["time_limit"], metavar="SECONDS",
                     help="seconds for the whole call but a measuring cost model's "
                          "timing (--cost tvm, measured) and --select measured; saturation leaves part of them to "
                          f"extraction (default: {d['time_limit']:g})")
    opt.add_argument("--multi-iterations", type=int, default=None, metavar="K",
                     help="search the rules with several source outputs (merges) in the first K iterations only, "
                          "as TENSAT's iter_multi (TENSAT: 1; default: every iteration)")
    opt.add_argument("--cycles", choices=("keep", "filter"), default=d["cycles"],
                     help="keep: extraction forbids cyclic choices; filter: the e-nodes that would close a cycle "
                          f"are left out, latest made first, as TENSAT does (default: {d['cycles']})")
    opt.add_argument("--search", choices=("saturate", "restart"), default=d["search"],
                     help="saturate: one saturation; restart: where the e-graph stops at its node limit (or runs "
                          "merges in its first iterations only), rounds of saturation, each from the cheapest term "
                          f"the round before extracted, within the same limits (default: {d['search']})")
    opt.add_argument("--select", choices=("cost", "measured"), default=d["select"],
                     help="cost: the cost model picks the result; measured: the input, the result and other "
                          "extractions are built with scheduled kernels (MetaSchedule samples, cached in "
                          "~/.cache/gsl_eq), timed, and the fastest is written, never slower than the input beyond "
                          f"timing noise (default: {d['select']})")
    opt.add_argument("--candidates", type=int, default=d["candidates"], metavar="N",
                     help=f"most candidates --select measured times, the input included (default: {d['candidates']})")
    opt.add_argument("--schedule-samples", type=positive_int, default=d["schedule_samples"], metavar="N",
                     help="design-space draws of each kernel, the fastest kept, when kernels are scheduled (--cost tvm, "
                          "--select measured): fewer is quicker, more finds faster schedules "
                          f"(default: {d['schedule_samples']})")
    opt.add_argument("-o", "--output", metavar="FILE", help="TVMScript file to write (default: <model>.optimized.py; "
                                                            "the parameters go next to it, in <output>.params.npz; "
                                                            "gsl-eq optimize reads both back)")
    opt.add_argument("--report", metavar="FILE", help="JSON report to write (default: <model>.report.json)")
    opt.add_argument("--html", metavar="FILE",
                     help="write a self-contained page: the input and the result drawn side by side with the "
                          "changed nodes marked, the rules used, cost per op kind, the e-graph's growth, timings")
    opt.add_argument("--check", action="store_true",
                     help="run the original and the optimized module on random inputs and print the largest difference")
    opt.add_argument("--proof", metavar="FILE",
                     help="write the steps from the input to the result, one JSON object per line: each rule's "
                          "rewrite (the rule, its file and line, the nodes it matched and made), merge and fold")
    order = sub.choices["orderings"]
    order.add_argument("-n", type=int, default=d["n"], metavar="N",
                       help=f"orderings to try; every permutation when there are fewer (default: {d['n']})")
    order.add_argument("--seed", type=int, default=d["seed"],
                       help=f"seed of the sample of orderings when not all are tried (default: {d['seed']})")
    order.add_argument("--plot", metavar="FILE", help="save a bar chart of each ordering's cost against saturation's (PNG)")
    order.add_argument("--html", metavar="FILE", help="write a self-contained page: each ordering's speedup and "
                                                      "saturation's as a chart, and the table")
    order.add_argument("--address", metavar="ADDRESS",
                       help="run the orderings and the saturation at once as Ray tasks: on a local Ray instance "
                            "(local) or the cluster at ADDRESS (auto, ray://HOST:PORT, a head's HOST:PORT) "
                            "(default: one after another in this process)")
    rules_help = ("a Python file of rules (every gsl_eq.Subst it defines, in lists too, and what its zero-argument "
                  f"functions returning a Subst build) or a rule set: {', '.join(RULE_SETS)}")
    check = sub.add_parser("check", help="check rules numerically: sound, counterexample, untyped, or no instance",
                           formatter_class=raw, description=_paragraph(
                               "Check each rule numerically: draw small graphs its source matches (shapes, dtypes, "
                               "attributes and variadic lengths drawn so its guards hold), rewrite them with greedy "
                               "mode, and compare source and rewrite built and run with TVM on random inputs. "
                               "Verdicts: sound (on N instances), unsound (the smallest counterexample, its Relax "
                               "module and the largest difference), untyped (TVM cannot type the target on any "
                               "instance), no instance (the guards never held: the rule may never fire), "
                               "unbuildable (TVM cannot build the source). Exits with 1 if a rule is unsound or "
                               "untyped."))
    check.add_argument("rules", metavar="RULES", help=rules_help)
    check.add_argument("--rules", dest="only", nargs="+", metavar="NAME", help="check only the rules of these names")
    check.add_argument("--trials", type=int, default=8, metavar="N", help="instances to check per rule (default: 8)")
    check.add_argument("--seed", type=int, default=0, help="seed of the draws; the same seed gives the same verdicts "
                                                           "(default: 0)")
    check.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    why = sub.add_parser("explain", help="why each rule does or does not fire on a model", formatter_class=raw,
                         epilog=_listing("models", MODEL_NAMES), description=_paragraph(
                             "For each rule, every node where its source could start (same op and arity as its "
                             "first output), and how far the match got: the pattern where it stopped and why (a node "
                             "of another op, a guard that is false with the values it compared, an inner node with a "
                             "successor outside the match), or the target refused (TVM cannot type it, an output "
                             "type would change), or fires."))
    why.add_argument("rules", metavar="RULES", help=rules_help)
    why.add_argument("model", help="a model name (listed below), a module optimize wrote (-o), an ONNX file (.onnx) "
                                   "or a .py file defining workload, mod or model")
    why.add_argument("--quick", action="store_true", help=QUICK_HELP)
    why.add_argument("--bind", type=bindings, default=None, metavar="NAME=SIZE", help=BIND_HELP)
    why.add_argument("--rules", dest="only", nargs="+", metavar="NAME", help="explain only the rules of these names")
    why.add_argument("--limit", type=int, default=20, metavar="N",
                     help="places shown per rule; the rest are counted by reason (default: 20)")
    why.add_argument("--json", action="store_true", help="print every place as JSON instead of tables")
    sweep = sub.add_parser("sweep", help="many models x rule sets x modes x cost models, each cell a Ray task",
                           formatter_class=raw, epilog="\n\n".join([_listing("models", MODEL_NAMES),
                                                                    _listing("rule sets", RULE_SETS)]),
                           description=_paragraph(
                               "Optimize every cell of models x rule sets x modes x cost models (x extractors for "
                               "saturate mode, x rule orderings for greedy mode), each cell a Ray task on a local "
                               "Ray instance or a cluster (pip install \"gsl_eq[ray]\"). Each cell's line goes to "
                               "the JSON Lines file as it finishes; run again with the same file, only the cells "
                               "missing from it run. A cell that fails is recorded with its error and the sweep "
                               "goes on; a cell whose worker dies runs again. Greedy mode runs the rules with a "
                               "connected source only, and says so. Exits with 1 if a cell failed. "
                               f"Costs in us of each cell's cost model (op calls for opcount); {SPEEDUP}."))
    sweep.add_argument("--models", required=True, metavar="NAMES",
                       help="comma-separated model names (listed below), modules optimize wrote (-o), ONNX files "
                            "of static shapes or .py files "
                            "defining workload, mod, or model with example_inputs")
    sweep.add_argument("--rules", default=d["rules"], metavar="SETS",
                       help=f"comma-separated rule sets (listed below) or sums such as tensat+default "
                            f"(default: {d['rules']})")
    sweep.add_argument("--modes", default=",".join(MODES), metavar="MODES",
                       help=f"comma-separated modes, of {', '.join(MODES)} (default: both)")
    sweep.add_argument("--costs", default=d["cost"], metavar="MODELS",
                       help=f"comma-separated cost models, of {', '.join(COST_MODELS)} (default: {d['cost']})")
    sweep.add_argument("--extractors", default=d["extractor"], metavar="NAMES",
                       help=f"comma-separated extractors for saturate mode, of {', '.join(EXTRACTORS)} "
                            f"(default: {d['extractor']})")
    sweep.add_argument("--orderings", type=int, metavar="N",
                       help="run greedy mode under N orderings of the rules (every permutation when there are "
                            "fewer; default: the rule set's own order only)")
    sweep.add_argument("--seed", type=int, default=d["seed"],
                       help=f"seed of the sample of orderings (default: {d['seed']})")
    sweep.add_argument("--quick", action="store_true", help=QUICK_HELP)
    sweep.add_argument("-o", "--output", required=True, metavar="FILE",
                       help="the JSON Lines file of results, one line per cell; cells already in it are skipped")
    sweep.add_argument("--address", metavar="ADDRESS",
                       help="join a running Ray cluster: auto (the one this machine belongs to), ray://HOST:PORT "
                            "(Ray Client) or a head node's HOST:PORT (default: start a local Ray instance)")
    sweep.add_argument("--cpus", type=int, metavar="N",
                       help="CPUs of the local Ray instance, one cell per CPU at a time (default: every core)")
    sweep.add_argument("--node-limit", type=int, metavar="N",
                       help=f"most e-nodes (greedy mode: graph nodes) per cell (default: {d['node_limit']})")
    sweep.add_argument("--iter-limit", type=int, metavar="N",
                       help=f"most iterations (greedy mode: rounds) per cell (default: {d['iter_limit']})")
    sweep.add_argument("--time-limit", type=float, metavar="SECONDS",
                       help=f"seconds per cell, as optimize's --time-limit (default: {d['time_limit']:g})")
    sweep.add_argument("--retry-failed", action="store_true",
                       help="run again the cells whose line in the file records an error")
    sweep.add_argument("--plot", metavar="FILE", help="save a bar chart of each cell's speedup (PNG)")
    sweep.add_argument("--html", metavar="FILE", help="write a self-contained page: each cell's speedup as a "
                                                      "chart, and the table")
    bench = sub.add_parser("bench", help="run the benchmark suite (benchmarks/run.py) and update BENCHMARKS.md",
                           description="Run the benchmark suite of a source checkout (benchmarks/run.py): the zoo "
                                       "models through both modes and TVM's own passes, with latency on the CPU; "
                                       "the results go to BENCHMARKS.md.")
    bench.add_argument("--quick", action="store_true",
                       help="small versions of the models (about 4 minutes on 2 cores; the full run takes about 15)")
    bench.add_argument("--models", metavar="NAMES",
                       help="comma-separated names of the suite's models (default: all of them)")
    bench.add_argument("--address", metavar="ADDRESS",
                       help="run the models as Ray tasks, each on a node of its own (its latency is timed): on the "
                            "cluster at ADDRESS (auto, ray://HOST:PORT, a head's HOST:PORT) or on a local instance "
                            "(local) (default: one after another, each in a process of its own)")
    return parser


#: The options that name a file to write.
OUTPUT_OPTIONS = ("output", "report", "html", "plot", "proof")


def check_output_paths(args: argparse.Namespace) -> None:
    """A GslEqError, before any work, for a file to write whose directory does not exist, that is
    a directory itself, or whose suffix names another format than the one written (a page, a chart)."""
    for option in OUTPUT_OPTIONS:
        value = getattr(args, option, None)
        if value and not Path(value).parent.is_dir():
            raise GslEqError(f"--{option} {value}: the directory {Path(value).parent} does not exist")
        if value and Path(value).is_dir():
            raise GslEqError(f"--{option} {value}: is a directory; give a file name in it")
    page = getattr(args, "html", None)
    if page and Path(page).suffix.lower() not in (".html", ".htm"):
        raise GslEqError(f"--html {page}: a page is written as HTML; give a file name ending in .html")
    chart = getattr(args, "plot", None)
    if chart:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure

        formats = Figure().canvas.get_supported_filetypes()
        if Path(chart).suffix.lower().lstrip(".") not in formats:
            raise GslEqError(f"--plot {chart}: matplotlib writes a chart as one of "
                             f"{', '.join('.' + f for f in sorted(formats))}; give a file name ending in one")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rich.console import Console
    from rich.markup import escape

    # Rich writes escape codes and progress bars to terminals only; pipes and logs get whole rows.
    console = Console(width=None if sys.stdout.isatty() else 140, highlight=False)
    try:
        check_output_paths(args)
        if args.command == "demo":
            return demo(console)
        if args.command == "bench":
            return run_bench(args)
        if args.command == "check":
            return run_check(console, args)
        if args.command == "explain":
            return run_explain(console, args)
        if args.command == "sweep":
            return run_sweep(console, args)
        return run_optimize(console, args) if args.command == "optimize" else run_orderings(console, args)
    except (GslEqError, ValueError) as err:
        console.print(f"[red]error:[/] {escape(str(err))}")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
