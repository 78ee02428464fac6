"""What users call: optimize a module or workload with GSL rules, greedily or by saturation.

    result = gsl_eq.optimize(wl, mode="saturate", cost="roofline", extractor="ilp")
    print(result.report)            # a table: cost before/after, phases, iterations, stop reason
    result.report.to_json()         # the same, for files
    new_mod = result.mod

Costs are those of the workload with its parameters folded: a computation on
parameters only is done once, before deployment, and costs nothing. The report says
which rules the returned module uses (``rules_used``), apart from what the run did
(``applications``, ``rejected``): see :class:`OptimizeReport`.
"""

from __future__ import annotations

import functools
import itertools
import math
import json
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, Sequence

import tvm

from .. import rules as library
from ..egraph import Iteration, Runner, Snapshot, StopReason
from ..egraph.cycles import closing_cycles
from ..cost import COST_MODELS, CostModel, Measured, OpCount, Roofline, get_cost_model, graph_cost
from ..cost.model import display_unit, speedup
from .choose import as_of, egglog_extract, priced, rebuild, roots, rules_used
from ..extract import Extraction, greedy_dag_extract, ilp_candidates, tree_extract
from ..frontend import Subst
from ..graph import Graph, Kind, Node
from ..graph.work import roofline_seconds
from ..greedy.rewriter import GreedyResult, greedy, to_workload
from ..run.limits import callers_heap_frozen, check_count, check_seconds
from .verify import Reference
from ..workload.workload import FOLD_RATES
from ..workload import FoldWarning, Workload

if TYPE_CHECKING:
    from ..measure.schedule_db import ScheduleDatabase

MODES = ("saturate", "greedy")
SELECTIONS = ("cost", "measured")
#: The built-in cost models that build and time kernels: not used for extra candidates unless asked for.
MEASURING = ("measured", "tvm", "gpu-measured")
EXTRACTORS = ("ilp", "greedy", "tree", "egglog")
#: What extraction does with the cycles of the e-graph: keep them (the exact extractor forbids
#: cyclic choices) or filter them as TENSAT does (:func:`~gsl_eq.egraph.cycles.closing_cycles`).
CYCLES = ("keep", "filter")

#: The share of ``time_limit`` saturation leaves to extraction.
EXTRACTION_SHARE = 0.2
#: The most of ``time_limit`` the check of the result is left (:meth:`~gsl_eq.optimizer.verify.Reference.predicted_check_seconds`):
#: under a limit shorter than twice its prediction, the check may end past the limit.
CHECK_SHARE = 0.5
#: The most of ``time_limit`` kept for folding the result's parameter computations (:func:`_fold_reserve`).
FOLD_SHARE = 0.2
#: Seconds extraction needs per e-node (reading the e-graph back, pricing it, the greedy
#: passes), with a margin over what a 2-core machine takes: saturation stops growing the
#: e-graph where the time left would not cover extracting it.
EXTRACTION_SECONDS_PER_ENODE = 40e-6
#: Where saturation grew the e-graph past EARLY_GROWTH times EARLY_ENODES e-nodes, the exact
#: extractor first extracts the e-graph as the last iteration that left at most EARLY_ENODES left
#: it (:func:`~gsl_eq.optimizer.choose.as_of`), in at most EARLY_SHARE of its time, and starts from
#: that choice where it is cheaper than the greedy DAG's (TASO's multi-pattern rules grow an
#: Inception-v3 from 2,000 to 50,000 e-nodes of forms none of which pays, and in some runs the
#: ILP found nothing better than the greedy DAG choice, the input, in 8 s; BENCHMARKS.md's
#: short-limits section). Twice is enough growth: a small NASNet-A (32 px, 2 cells) under
#: default()+algebraic() saturates at 18,379 e-nodes, whose program CP-SAT does not solve in 40 s
#: under the gpu model (cost 0.837-0.833 of the input's, where default() alone reaches 0.829); from
#: the optimum of iteration 8's 2,565 e-nodes it returns 0.829, under roofline in no more time.
#: Smaller e-graphs, TENSAT's at its settings among them, are solved whole.
EARLY_ENODES = 5_000
EARLY_GROWTH = 2
EARLY_SHARE = 0.25
#: Seconds per e-node telling which rules the chosen term relies on, once it is chosen
#: (:func:`~gsl_eq.egraph.attribution.attribute`: egglog indexes its tables for the provenance
#: rules' first run; measured 10-14 us on a 2-core machine): extraction leaves it this.
ATTRIBUTION_SECONDS_PER_ENODE = 20e-6
#: The most of saturate mode's search time greedy mode takes first: its result is a candidate of saturate
#: mode's, so that saturate mode never returns a graph costlier than greedy mode would with the same rules.
GREEDY_SHARE = 0.1


def cost_unit(model: CostModel) -> str:
    """The unit of ``model``'s costs: seconds (``"s"``) for :class:`Roofline` and :class:`Measured`,
    ``"op calls"`` for :class:`OpCount`, else the model's ``unit`` attribute, if it has one."""
    if isinstance(model, (Roofline, Measured)):
        return "s"
    if isinstance(model, OpCount):
        return "op calls"
    return str(getattr(model, "unit", "cost units"))


@dataclass
class OptimizeReport:
    """What :func:`optimize` did, with costs in ``cost_unit`` under ``cost_model`` (lower is better).

    ``rules_used``: the rules whose rewrites the returned module holds, in rule order; empty
    when the input is returned (``input_returned``; ``notes`` says why); None when saturate mode
    could not tell within the time limit. Greedy mode: the
    rules with a rewrite whose nodes survive to the final graph (folded into one of its
    parameters counts; a rewrite that creates no node, only removes, counts), see
    :class:`~gsl_eq.greedy.rewriter.Ledger`. Saturate mode: the rules whose targets built an
    e-node of the extracted term (each of them, when several built one), and, where the term
    puts an input node in another place than the input did, the rules whose unions put it
    there, see :func:`~gsl_eq.optimizer.choose.rules_used`.

    ``applications``: what the run did per rule, used or not: rewrites done (greedy), matches
    applied to the e-graph (saturate). ``rejected``: rule -> reason -> matches left alone,
    counted once per key (the matched subgraph's ops, attributes, types and constants);
    reasons are "target cannot be typed", "output type would change" and, in saturate mode
    only, "source guard false" (greedy's matcher refuses those before any count).
    """

    mode: str
    cost_model: str
    cost_before: float
    cost_after: float
    calls_before: int
    calls_after: int
    timings: dict[str, float] = field(default_factory=dict)
    rules: list[str] = field(default_factory=list)
    rules_used: list[str] | None = field(default_factory=list)
    applications: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, dict[str, int]] = field(default_factory=dict)
    cost_unit: str = "s"
    extractor: str | None = None
    extraction_status: str | None = None
    solver: str | None = None  # the exact extractor's: "highs", or "cp-sat" on a cyclic e-graph
    regions: int | None = None  # the exact extractor's: programs solved, one per region, like ones once (gsl_eq.extract.regions)
    gap: float | None = None
    extracted_cost: float | None = None  # the chosen graph's cost in the e-graph (folded computations free)
    greedy_dag_cost: float | None = None  # the greedy DAG extractor's, which warm-starts the ILP
    greedy_dag_time: float | None = None
    greedy_cost: float | None = None  # saturate mode: what greedy mode's result with the same rules costs
    greedy_result: bool = False  # saturate mode: greedy mode's result was cheaper than the extraction's, and returned
    time_limit: float | None = None
    check_reserve: float = 0.0  # seconds of time_limit left for checking the result (as the reference took)
    fold_reserve: float = 0.0  # seconds of time_limit kept for folding the result's parameter computations
    extraction_budget: float | None = None  # seconds left for extraction and rebuilding when saturation stopped
    starved: bool = False  # the reference and the time kept for the check, the final build and extraction took the limit
    stop_reason: str | None = None
    enodes: int | None = None
    eclasses: int | None = None
    left_out: int = 0  # e-nodes the cycle filter left out (cycles="filter")
    iterations: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    input_returned: bool = False  # the result did not cost less, or nothing was rewritten
    #: With ``select="measured"``: each candidate's label, median seconds, round times, cost, whether
    #: it was returned, and for the fastest and the input their times under the second draw of
    #: schedules (``second_draw``: label, seconds, rounds, seed) when one was needed.
    candidates: list[dict[str, Any]] = field(default_factory=list)
    #: The graphs that failed the final check (``"label: reason"``), in the order they were tried.
    fallbacks: list[str] = field(default_factory=list)

    def budget(self) -> str:
        """``time_limit`` and what saturation left of it for extraction; the seconds a measuring cost
        model spent timing ops, which the limit does not bound (see :func:`optimize`)."""
        text = (f"{self.time_limit:g} s, {self.extraction_budget:.2f} s of it left for extraction, "
                f"{self.fold_reserve:.2f} s kept for the final build and {self.check_reserve:.2f} s for the check")
        if self.cost_model in MEASURING and self.timings.get("price"):
            text += f"; {self.timings['price']:.1f} s timing ops for the {self.cost_model} model, outside it"
        return text

    @property
    def speedup(self) -> float:
        """``cost_before / cost_after``."""
        return speedup(self.cost_before, self.cost_after)

    def extractor_label(self) -> str:
        """The extractor, with the solver that ran it: ``"ilp via cp-sat"``."""
        return f"{self.extractor} via {self.solver}" if self.solver else str(self.extractor)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def table(self) -> Any:
        """The report as a rich table; costs in one unit (the title and the cost row say which)."""
        from rich.table import Table

        unit, factor = display_unit(self.cost_unit)
        t = Table(title=f"gsl_eq optimize ({self.mode}): costs in {unit}, {self.cost_model} model; "
                        "speedup = before / after", show_header=False)
        t.add_column(style="bold")
        t.add_column()
        rows = [
            (f"cost ({unit}, {self.cost_model})", f"before {self.cost_before * factor:.6g} -> after "
             f"{self.cost_after * factor:.6g}: speedup {self.speedup:.3f}x (before / after)"),
            ("op calls before -> after", f"{self.calls_before} -> {self.calls_after}"),
        ]
        if self.mode == "saturate":
            left_out = f"; {self.left_out} e-nodes that close cycles left out" if self.left_out else ""
            rows += [("e-graph", f"{self.enodes} e-nodes, {self.eclasses} e-classes, {len(self.iterations)} iterations"
                      + left_out),
                     ("stop reason", str(self.stop_reason)),
                     ("extractor", f"{self.extractor_label()} ({self.extraction_status}, gap {_fmt_gap(self.gap)})"),
                     ("time budget", self.budget())]
        done = "e-graph applications" if self.mode == "saturate" else "rewrites done"
        rows += [("rules used", self.used_text()),
                 (done + (" (discarded)" if self.input_returned else ""), _fmt_counts(self.applications)),
                 ("rejected " + ("keys" if self.mode == "saturate" else "matches"), "; ".join(
                     f"{rule}: {_fmt_counts(reasons)}" for rule, reasons in sorted(self.rejected.items())) or "none"),
                 ("time (s)", ", ".join(f"{k} {v:.2f}" for k, v in self.timings.items()))]
        rows += [("failed the check", f) for f in self.fallbacks]
        rows += [("note", n) for n in self.notes]
        for k, v in rows:
            t.add_row(k, v)
        return t

    def used_text(self) -> str:
        """``rules_used`` as one line of text."""
        if self.rules_used is None:
            return "not known (time limit)"
        return ", ".join(self.rules_used) or ("none: the input is returned" if self.input_returned else "none")

    def __str__(self) -> str:
        from rich.console import Console

        console = Console(width=120, record=True, force_terminal=False)
        with console.capture() as capture:
            console.print(self.table())
        return capture.get()


@dataclass
class OptimizeResult:
    """The optimized workload (``.workload``, ``.mod``) and what was done (``.report``).

    ``input`` is the workload that was optimized, its parameters folded (the costs before are
    its costs); ``cost`` the cost model that priced both; ``origins`` maps nodes of the result's
    graph to the rules whose rewrites made them (greedy mode only, see
    :class:`~gsl_eq.greedy.rewriter.Ledger`). :meth:`to_html` draws them.
    """

    workload: Workload
    report: OptimizeReport
    input: Workload | None = None
    cost: CostModel | None = field(default=None, repr=False)
    origins: dict[Node, frozenset[str]] = field(default_factory=dict, repr=False)

    @property
    def mod(self) -> tvm.IRModule:
        return self.workload.mod

    def to_html(self, path: str | Path, title: str | None = None, max_nodes: int | None = 300) -> Path:
        """Write a self-contained page of this optimization to ``path`` and return it: the input and
        the result drawn side by side with the changed nodes marked, the rules used, the cost
        of each op kind before and after, the e-graph's growth, the extraction and the timings
        (see :mod:`gsl_eq.pages.result`). Graphs larger than ``max_nodes`` are drawn reduced:
        repeated blocks folded, then only what lies near a change (None: every node)."""
        from ..pages import result_page

        return result_page(self, title=title, max_nodes=max_nodes).write(path)


def as_workload(mod_or_workload: Workload | tvm.IRModule) -> Workload:
    """A workload as given, or a bare IRModule whose function parameters all stay runtime inputs."""
    if isinstance(mod_or_workload, Workload):
        return mod_or_workload
    if isinstance(mod_or_workload, tvm.IRModule):
        return Workload(mod_or_workload, {})
    raise TypeError(f"optimize takes a gsl_eq.Workload or a tvm.IRModule, not {type(mod_or_workload).__name__}")


def _call_settings(function: Callable[..., OptimizeResult]) -> Callable[..., OptimizeResult]:
    """What fold_params cannot fold goes into the report's notes, not into warnings; and the
    caller's objects stay out of the cycle collector's way (:func:`~gsl_eq.run.limits.callers_heap_frozen`)."""

    @functools.wraps(function)
    def wrapped(*args: Any, **kwargs: Any) -> OptimizeResult:
        with warnings.catch_warnings(), callers_heap_frozen():
            warnings.simplefilter("ignore", FoldWarning)
            return function(*args, **kwargs)

    return wrapped


@_call_settings
def optimize(
    mod_or_workload: Workload | tvm.IRModule,
    rules: Sequence[Subst] | None = None,
    mode: str = "saturate",
    cost: str | CostModel = "roofline",
    extractor: str = "ilp",
    node_limit: int = 50_000,
    iter_limit: int = 30,
    time_limit: float = 60.0,
    order: Sequence[int | str] | None = None,
    ilp_time_limit: float = 60.0,
    on_iteration: Callable[[Iteration], None] | None = None,
    select: str = "cost",
    candidates: int = 4,
    schedules: "ScheduleDatabase | None" = None,
    multi_iterations: int | None = None,
    cycles: str = "keep",
) -> OptimizeResult:
    """Optimize a workload (or a bare IRModule) with GSL ``rules`` (default: :func:`gsl_eq.rules.default`).

    ``mode="saturate"`` applies every rule at once in an e-graph (limits: ``node_limit``
    e-nodes, ``iter_limit`` iterations, ``time_limit`` seconds) and extracts the
    cheapest equivalent graph under ``cost`` (``"roofline"``, ``"opcount"``,
    ``"measured"``, ``"tvm"`` or a :class:`~gsl_eq.cost.CostModel`) with ``extractor``
    (``"ilp"``, ``"greedy"`` for the greedy DAG extractor, ``"tree"``, ``"egglog"``).
    ``mode="greedy"`` runs GSL's destructive matcher, rules in the given order
    (``order``: a permutation of rule indices or names); it leaves out, naming them in
    ``report.notes``, the rules whose source outputs share no node (``Subst.connected``:
    four of :func:`~gsl_eq.rules.tensat`'s), which its matcher cannot reach, and raises
    :class:`~gsl_eq.frontend.DisconnectedSourceError` if no rule is left. The input is never changed.
    Saturate mode runs greedy mode first (at most a tenth of its search time, :data:`GREEDY_SHARE`) and
    returns greedy's result where it costs less than the extraction's, as when the e-graph stops at a
    limit short of it: it is never costlier than greedy mode with the same rules (``report.greedy_cost``;
    ``report.greedy_result`` says greedy's result was returned).

    TENSAT's two settings that keep its e-graphs small and acyclic: ``multi_iterations=k``
    searches the rules with several source outputs (merges) in the first ``k`` iterations
    only (TENSAT's ``iter_multi``, 1 in its published runs; default: every iteration), and
    ``cycles="filter"`` has extraction leave out the e-nodes that would close a cycle, latest
    made first (TENSAT's cycle filter; ``report.left_out`` counts them). The exact extractor
    then sees an acyclic e-graph, which it solves far faster, at the price of the terms only
    the cycles reach (default ``"keep"``: cycles are forbidden in the extraction instead)::

        optimize(wl, rules.tensat(), node_limit=50_000, iter_limit=15, multi_iterations=1, cycles="filter")

    ``time_limit`` bounds the whole call: folding the input, compiling the rules,
    loading, saturation (or greedy rewriting), extraction, rebuilding, folding the result's parameter
    computations (the final build) and checking the result share it. A result whose fold is predicted
    to end past the limit is not folded and the input is returned (TASO's rules fold products of weight
    matrices: :meth:`~gsl_eq.workload.Workload.predicted_fold_seconds`; the notes say so, and which
    limit would do). The input's own outputs, which the result's are compared with, are computed first
    (``report.timings["reference"]``), and the result's check is predicted from what that took
    (:meth:`~gsl_eq.optimizer.verify.Reference.predicted_check_seconds`; ``report.check_reserve``), up to
    :data:`CHECK_SHARE` of the limit; the rest is the search's. Saturation leaves extraction
    :data:`EXTRACTION_SHARE` of it plus what the e-graph's size needs; the ILP gets
    at most ``ilp_time_limit`` of what is left. ``report.timings`` has each phase (``price``:
    pricing the input and the e-graph under the cost model). A cost
    model that measures (``"measured"``, ``"tvm"``, ``"gpu-measured"``) times every op or kernel it has not seen
    when the e-graph is priced; that time is not bounded by ``time_limit`` (a price cannot be
    had without it), but each is measured once and kept on disk.

    ``select="measured"`` lets TVM decide instead of the cost model: the input and up to
    ``candidates - 1`` other distinct graphs are built through ``schedules`` (a
    :class:`~gsl_eq.measure.schedule_db.ScheduleDatabase`, by default one on the default cache),
    timed in alternating rounds (:mod:`gsl_eq.optimizer.selection`), and the fastest is returned;
    ``report.candidates`` has every candidate's time, the input first. In saturate mode the
    others are, in this order: the result; with ``extractor="ilp"``, the next cheapest
    distinct DAG extractions under ``cost`` (the K cheapest by the ILP with no-good cuts,
    the result the cheapest, searched for within the ILP's time limit: see
    :func:`~gsl_eq.extract.ilp_candidates`); then the greedy DAG extractions of the e-graph
    under ``cost`` and the other built-in cost models that do not measure
    (:data:`MEASURING`; with ``extractor="egglog"``, these follow the result). Greedy mode has
    only the result. Fewer than ``candidates`` come back when the e-graph holds fewer distinct
    graphs (or the ILP's time runs out first); structurally equal graphs are one candidate. The input being a
    candidate, and a candidate is preferred to it only when it runs faster beyond the timing
    noise under ``schedules`` and again under an independently seeded draw of schedules
    (:func:`~gsl_eq.optimizer.selection.confirm`; ``report.candidates`` has both times). This measuring
    comes after ``time_limit``, as do the folds of the candidates::

        result = optimize(wl, rules.default(), select="measured", candidates=3)
        result.report.candidates   # [{"label": "input", "seconds": ...}, ...]

    Every returned module has been seen to build, run and compute what the input computes
    (:mod:`gsl_eq.optimizer.verify`: built with TVM, run on random inputs, outputs compared; where TVM
    cannot build the input, with its legalized form). A result that fails is replaced by the next
    candidate that costs less than the input and passes: the ILP's next cheapest distinct
    extraction, then the greedy DAG's, at last the input itself; ``report.fallbacks`` lists what
    failed and why, ``report.notes`` what was returned (``report.timings["check"]``; a check that
    falls back to further candidates takes longer than its prediction). Releasing the e-graph
    comes after ``time_limit``
    (``report.timings["release"]``: egglog freeing its tables and their indexes, which grows with
    the rules as much as with the e-nodes and cannot be foreseen; half a second for TASO's rules
    on 20,000 e-nodes, milliseconds for most).
    """
    start = time.perf_counter()
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if extractor not in EXTRACTORS:
        raise ValueError(f"unknown extractor {extractor!r}; choose one of {', '.join(EXTRACTORS)}")
    node_limit, iter_limit = check_count("node_limit", node_limit), check_count("iter_limit", iter_limit)
    time_limit, ilp_time_limit = check_seconds("time_limit", time_limit), check_seconds("ilp_time_limit", ilp_time_limit)
    if select not in SELECTIONS:
        raise ValueError(f"unknown select {select!r}; choose one of {', '.join(SELECTIONS)}")
    candidates = check_count("candidates", candidates)
    if select == "measured" and candidates < 2:
        raise ValueError("select='measured' with candidates=1 would time only the input and return it; "
                         "candidates counts the input, so give at least 2")
    if multi_iterations is not None:
        multi_iterations = check_count("multi_iterations", multi_iterations)
    if cycles not in CYCLES:
        raise ValueError(f"unknown cycles {cycles!r}; choose one of {', '.join(CYCLES)}")
    model = _cost_model(cost, schedules)
    rule_list = _ordered(as_rule_list(library.default() if rules is None else rules), order)
    wl = as_workload(mod_or_workload).fold_params()
    timings = {"fold": time.perf_counter() - start}
    t = time.perf_counter()
    before = graph_cost(wl.graph, model)
    timings["price"] = time.perf_counter() - t
    measuring = timings["price"] if model.name in MEASURING else 0.0  # outside time_limit, as documented
    report = OptimizeReport(mode, model.name, before, before, _calls(wl.graph), _calls(wl.graph), timings,
                            [r.name for r in rule_list], cost_unit=cost_unit(model), time_limit=time_limit)
    report.notes += [f"input: {unfolded} (TVM cannot build it; it stays a computation)" for unfolded in wl.unfolded]
    # the reference first: the result's check is predicted from its time, far closer than from rates alone
    # (the slowest seen on any model), which left short limits' searches half the limit for checks of a second
    t = time.perf_counter()
    reference = _reference(wl, report)
    timings["reference"] = time.perf_counter() - t
    checking = min(reference.predicted_check_seconds(), CHECK_SHARE * time_limit)
    folding = min(_fold_reserve(wl), FOLD_SHARE * time_limit)
    deadline, budget = start + measuring + time_limit - checking - folding, time_limit - checking - folding
    report.check_reserve, report.fold_reserve = checking, folding
    search_end = deadline - (EXTRACTION_SHARE * time_limit if mode == "saturate" else 0.0)
    report.starved = time.perf_counter() >= search_end
    if report.starved:
        report.notes.append(f"the time limit left no time for the search: the input's reference outputs took "
                            f"{timings['reference']:.1f} s of its {time_limit:g} s, and {checking:.1f} s of it "
                            f"are kept for checking the result, {folding:.1f} s for its final build"
                            + (f", {EXTRACTION_SHARE * time_limit:.1f} s for extraction" if mode == "saturate" else ""))
    greedy_origins: dict[Node, frozenset[str]] = {}
    rival = None  # saturate mode: greedy mode's result, a candidate
    if mode == "greedy":
        runnable = _greedy_runnable(rule_list, report)
        t = time.perf_counter()
        result = greedy(wl, runnable, max_rounds=iter_limit, node_limit=node_limit,
                        time_limit=max(deadline - t, 1e-9))
        timings["rewrite"] = time.perf_counter() - t
        out = result.workload
        report.applications = {name: n for name, n in result.fired.items() if n}
        report.rules_used, report.rejected = result.used, result.rejected
        report.stop_reason = result.stop_reason.value
        greedy_origins = result.origins
        if result.stop_reason is StopReason.CYCLE:
            report.notes.append(f"greedy rewriting stopped after {result.rounds} rounds ({result.passes} passes): "
                                "its rules came back to a graph they had made before (rules that undo one another)")
        elif not result.converged and not report.starved:
            report.notes.append(f"greedy rewriting stopped at the {result.stop_reason.value} after "
                                f"{result.rounds} rounds ({result.passes} passes)")
        others: Iterator[Alternative] = iter(())
    else:
        t = time.perf_counter()
        rival = None if report.starved else _greedy_rival(wl, rule_list, iter_limit, node_limit,
                                                          min(search_end, t + GREEDY_SHARE * budget))
        timings["greedy"] = time.perf_counter() - t
        out, others = _saturate(wl, rule_list, model, extractor, node_limit, iter_limit, deadline,
                                budget, ilp_time_limit, on_iteration, report,
                                candidates if select == "measured" else 0, multi_iterations, cycles)
    priced = out.folded_graph()  # greedy mode leaves a rewrite past its time limit unfolded
    report.cost_after, report.calls_after = graph_cost(priced, model), _calls(priced)
    if rival is not None:
        out, others, greedy_origins = _against_greedy(out, others, rival, model, report)
    # Saturate mode changes the module only for a gain: among equal-cost choices the extractor's pick is arbitrary.
    # With measured selection TVM's time decides instead.
    if select == "measured":
        chosen = _select_measured(wl, itertools.chain([Alternative("result", out, report.rules_used)], others),
                                  candidates, schedules, model, reference, report)
    elif not report.applications and report.cost_after >= before * (1 - 1e-9):
        chosen = None
        report.notes.append("no rule rewrote anything: the input is returned")
    elif report.cost_after > before or (mode == "saturate" and report.cost_after >= before * (1 - 1e-9)):
        chosen = None
        report.notes.append(f"the result cost {report.cost_after:.6g} {report.cost_unit} is not below the input's "
                            f"{before:.6g}: the input is returned, no rewrite is used")
    else:
        t, built = time.perf_counter(), timings.get("final build", 0.0)
        all_measuring = timings["price"] if model.name in MEASURING else 0.0  # the e-graph's pricing too
        chosen = _checked(itertools.chain([Alternative("result", out, report.rules_used)], others), before, model,
                          reference, report, start + all_measuring + time_limit)
        timings["check"] = time.perf_counter() - t - (timings.get("final build", 0.0) - built)
    t = time.perf_counter()
    del others  # the last reference to the e-graph: egglog frees its tables and indexes (0.5 s for TASO's rules at 20k e-nodes)
    timings["release"] = time.perf_counter() - t
    if chosen is None:
        report.input_returned = True
        out, report.cost_after, report.calls_after, report.rules_used = wl, before, report.calls_before, []
    else:
        out, report.rules_used = chosen.workload, chosen.rules_used
        report.cost_after, report.calls_after = graph_cost(out.graph, model), _calls(out.graph)
        if report.rules_used == []:
            report.notes.append("no rule's rewrite is on the result: it is the input with the computations it "
                                "repeats merged (each computed once, as an e-graph holds it)")
    report.notes += [f"result: {unfolded} (TVM cannot build it; it stays a computation)"
                     for unfolded in out.unfolded if unfolded not in wl.unfolded]
    timings["total"] = time.perf_counter() - start
    origins = greedy_origins if chosen is not None and chosen.label == "result" else {}
    return OptimizeResult(out, report, input=wl, cost=model, origins=origins)


def _fold_reserve(wl: Workload) -> float:
    """The time kept for folding the result's parameter computations: a fold reading each of ``wl``'s
    parameters once is predicted to take it (:meth:`~gsl_eq.workload.Workload.predicted_fold_seconds`'s
    rates), as merging rewrites concatenate weights. A fold predicted to take more is done only in what
    the search leaves of the limit."""
    types = [v.type for v in wl.graph.inputs if v.name in wl.params]
    copies = sum(roofline_seconds("relax.concat", {"axis": 0}, [t], t) for t in types)
    return FOLD_RATES.predicted(len(types), copies) if types else 0.0


def _greedy_rival(wl: Workload, rule_list: list[Subst], iter_limit: int, node_limit: int,
                  deadline: float) -> GreedyResult | None:
    """Greedy mode's result with the rules it can run, by ``deadline``: saturate mode's rival."""
    runnable = [rule for rule in rule_list if rule.connected]
    left = deadline - time.perf_counter()
    if not runnable or left <= 0:
        return None
    return greedy(wl, runnable, max_rounds=iter_limit, node_limit=node_limit, time_limit=left)


def _against_greedy(out: Workload, others: Iterator[Alternative], rival: GreedyResult, model: CostModel,
                    report: OptimizeReport) -> tuple[Workload, Iterator[Alternative], dict[Node, frozenset[str]]]:
    """The extraction, or greedy mode's result where that costs less (the other then a candidate after
    it); greedy's result is a candidate after the extraction's others in any case."""
    folded = rival.workload.folded_graph()
    report.greedy_cost = graph_cost(folded, model)
    greedy_option = Alternative("greedy mode's result", rival.workload, rival.used)
    if report.greedy_cost >= report.cost_after * (1 - 1e-9):
        return out, itertools.chain(others, [greedy_option]), {}
    report.notes.append(f"greedy mode's result with the same rules costs {report.greedy_cost:.6g} {report.cost_unit}, "
                        f"less than the extraction's {report.cost_after:.6g}: it is the result")
    extracted = Alternative("saturation's extraction", out, report.rules_used)
    report.greedy_result, report.rules_used = True, rival.used
    report.cost_after, report.calls_after = report.greedy_cost, _calls(folded)
    return rival.workload, itertools.chain([extracted], others), rival.origins


def _greedy_runnable(rule_list: list[Subst], report: OptimizeReport) -> list[Subst]:
    """The rules greedy mode can match (a connected source: its matcher reaches every output from
    the first); the others are left out and named in the report's notes. None of them: the first
    one's :class:`~gsl_eq.frontend.DisconnectedSourceError`."""
    runnable = [rule for rule in rule_list if rule.connected]
    left_out = [rule for rule in rule_list if not rule.connected]
    if left_out and not runnable:
        left_out[0].require_connected()
    if left_out:
        report.notes.append(f"greedy mode leaves out {len(left_out)} of the {len(rule_list)} rules, whose source outputs "
                            f"share no node ({', '.join(rule.name for rule in left_out)}); saturate mode runs them")
    return runnable


class Alternative(NamedTuple):
    """A graph optimize() may return: where it comes from, the workload, the rules it uses."""

    label: str
    workload: Workload
    rules_used: list[str] | None


def _reference(wl: Workload, report: OptimizeReport) -> Reference:
    """What candidates are checked against (:mod:`gsl_eq.optimizer.verify`); the notes say when it is not the input."""
    reference = Reference.of(wl)
    if reference.label != "input":
        report.notes.append(f"TVM cannot build the input: results are checked against the {reference.label}"
                            if reference.outputs is not None else
                            f"{reference.reason}: results are checked only to build and run")
    return reference


def _checked(options: Iterable[Alternative], before: float, model: CostModel, reference: Reference,
             report: OptimizeReport, deadline: float = math.inf) -> Alternative | None:
    """The first of ``options`` that costs less than the input (``before``) and passes the check
    (:mod:`gsl_eq.optimizer.verify`), folded (:func:`_final_build`), or None for the input; each one that fails is in
    ``report.fallbacks``. Past ``deadline`` no further option is tried, and none is folded whose fold is
    predicted (:meth:`~gsl_eq.workload.Workload.predicted_fold_seconds`) to take longer than the time kept for
    it (``report.fold_reserve``) and to end past ``deadline`` less the check's time, as the reference's took
    (:meth:`~gsl_eq.optimizer.verify.Reference.predicted_check_seconds`; TASO's rules fold products of weight matrices,
    11 s for TENSAT's BERT): the input is returned."""
    remaining = iter(options)
    while True:
        if report.fallbacks and time.perf_counter() >= deadline:  # before making the next option, too
            report.notes.append(f"the result failed the check ({report.fallbacks[0]}) and the time limit ended "
                                f"the search for a cheaper graph that passes it after {len(report.fallbacks)} "
                                "tried: the input is returned")
            return None
        option = next(remaining, None)
        if option is None:
            break
        if option.label != "result" and graph_cost(option.workload.folded_graph(), model) >= before * (1 - 1e-9):
            continue
        checking = reference.predicted_check_seconds()
        folding, left = option.workload.predicted_fold_seconds(), deadline - checking - time.perf_counter()
        if folding > max(left, report.fold_reserve):
            report.notes.append(f"folding the {option.label}'s parameter computations ({len(option.workload.fold_calls())} "
                                f"calls) is predicted to take {folding:.1f} s, past the time limit ({max(left, 0.0):.1f} "
                                f"s left before the check; a limit of {math.ceil(report.time_limit + folding - left)} s "
                                "would leave room for it): the input is returned")
            return None
        option = option._replace(workload=_final_build(option.workload, report.timings))
        reason = reference.mismatch(option.workload)
        if reason is None:
            if report.fallbacks:
                report.notes.append(f"the result failed the check ({report.fallbacks[0]}): {option.label} is "
                                    "returned instead, the next cheapest that passes it")
            return option
        report.fallbacks.append(f"{option.label}: {reason}")
    if report.fallbacks:
        report.notes.append(f"the result failed the check ({report.fallbacks[0]}) and no other extraction "
                            "cheaper than the input passes it: the input is returned")
    return None


def _select_measured(wl: Workload, found: Iterable[Alternative], candidates: int,
                     schedules: "ScheduleDatabase | None", model: CostModel, reference: Reference,
                     report: OptimizeReport) -> Alternative | None:
    """The fastest of the input and the distinct ``found`` graphs that pass the check
    (``candidates`` in all) as TVM runs them, or None for the input: a candidate is preferred to
    the input only if it runs faster beyond the noise under ``schedules`` and again under an
    independently seeded draw of schedules. Fills ``report.candidates``."""
    import tvm_ffi

    from ..measure.schedule_db import ScheduleDatabase
    from .selection import confirm, time_candidates

    t = time.perf_counter()
    key = functools.partial(tvm_ffi.structural_hash, map_free_vars=True)
    pool: dict[int, Alternative] = {}
    if reference.label == "input":
        pool[key(wl.mod)] = Alternative("input", wl, [])
    else:
        report.notes.append("measured selection: the input cannot be built, so it is not a candidate")
    for option in found:
        if len(pool) >= candidates:
            break
        option = option._replace(workload=_final_build(option.workload, report.timings))
        k = key(option.workload.mod)
        if k in pool:
            same = pool[k]
            pool[k] = same._replace(label=f"{same.label} = {option.label}")
            continue
        reason = reference.mismatch(option.workload)
        if reason is None:
            pool[k] = option
        else:
            report.fallbacks.append(f"{option.label}: {reason}")
    if schedules is None:  # the tvm cost model's kernels are those the candidates are built with
        schedules = getattr(model, "schedules", None) or ScheduleDatabase()
    options = list(pool.values())
    if not options:
        report.notes.append("measured selection: no candidate builds and passes the check, the input is returned")
        return None
    timed = time_candidates([(o.label, o.workload) for o in options], schedules)
    report.candidates = [{"label": c.label, "seconds": c.seconds, "rounds": c.rounds,
                          "cost": graph_cost(c.workload.graph, model)} for c in timed]
    has_input = options[0].label.startswith("input")
    fastest = min(range(len(timed)), key=lambda i: timed[i].seconds)
    verdict = f"{timed[fastest].label} runs fastest of {len(timed)} candidates ({timed[fastest].seconds * 1e6:.1f} us"
    if has_input and fastest != 0:
        second = confirm(timed[fastest], timed[0], schedules)
        verdict += f" against the input's {timed[0].seconds * 1e6:.1f} us"
        if second.candidate:
            report.candidates[0]["second_draw"] = second.baseline
            report.candidates[fastest]["second_draw"] = second.candidate
            verdict += (f"; {second.candidate['seconds'] * 1e6:.1f} us against {second.baseline['seconds'] * 1e6:.1f}"
                        " us under an independent draw of schedules")
        verdict += f"): {second.why}" + ("" if second.confirmed else ", so the input is returned")
        if not second.confirmed:
            fastest = 0
    else:
        verdict += ")"
    for i, entry in enumerate(report.candidates):
        entry["returned"] = i == fastest
    report.timings["select"] = time.perf_counter() - t
    report.notes.append(f"measured selection: {verdict}")
    return None if has_input and fastest == 0 else options[fastest]


def _saturate(wl: Workload, rule_list: list[Subst], model: CostModel, extractor: str, node_limit: int,
              iter_limit: int, deadline: float, time_limit: float, ilp_time_limit: float,
              on_iteration: Callable[[Iteration], None] | None, report: OptimizeReport,
              alternatives: int = 0, multi_iterations: int | None = None,
              cycles: str = "keep") -> tuple[Workload, Iterator[Alternative]]:
    """Saturation, extraction and rebuilding, filling ``report``; returns the extracted workload and
    the other extractions, rebuilt one by one as they are asked for: the ILP's next cheapest
    distinct ones under the run's cost model (with ``extractor="ilp"``; ``alternatives`` > 1 has
    the ILP look for that many within its time limit, else they are searched for when first
    asked), then the greedy DAG extractions under the run's and the other built-in cost models
    that do not measure. An extraction choosing what one before chose is skipped."""
    timings = report.timings
    runner = Runner(wl.graph, rule_list, node_limit=node_limit, iter_limit=iter_limit, time_limit=time_limit,
                    on_iteration=on_iteration, params=wl.params,
                    extraction_reserve=EXTRACTION_SECONDS_PER_ENODE + ATTRIBUTION_SECONDS_PER_ENODE,
                    multi_iterations=multi_iterations, deadline=deadline - EXTRACTION_SHARE * time_limit)
    timings["load"] = runner.report.load_time
    if runner.report.uncompiled and not report.starved:
        report.notes.append(f"compiling the rules reached the time limit: {len(runner.report.uncompiled)} of "
                            f"{len(rule_list)} were not compiled and never searched")
    run = runner.run(deadline=deadline - EXTRACTION_SHARE * time_limit)
    timings["compile"], timings["saturate"] = run.compile_time, run.total_time
    report.stop_reason = run.stop_reason.value
    report.applications = {name: n for name, n in run.applied().items() if n}
    report.rejected = run.rejected()
    report.iterations = [asdict(it) for it in run.iterations]
    t = time.perf_counter()
    report.extraction_budget = deadline - t
    late = run.iterations[-1].late if run.iterations and run.stop_reason is StopReason.TIME_LIMIT else []
    if late and not report.starved:
        report.notes.append(f"saturation stopped after {run.total_time:.1f} s, {deadline - t:.1f} s of the time limit left: "
                            f"searching {', '.join(late)} again is predicted to take longer than that (an egglog "
                            "search cannot be stopped once begun), and no other rule had anything left to do")
    snap = runner.egraph.snapshot()
    report.enodes, report.eclasses = snap.num_enodes, len(snap.classes)
    report.extractor = extractor
    root_classes = roots(runner, snap)
    left_out = closing_cycles(snap.classes, root_classes) if cycles == "filter" and extractor != "egglog" else set()
    if left_out is None:
        report.notes.append("cycle filter: leaving out the e-nodes that close cycles would leave an output "
                            "without a term; the cycles are kept")
        left_out = set()
    report.left_out = len(left_out)
    if extractor == "egglog":
        choice, next_best = egglog_extract(runner, snap), []
        report.extraction_status = "tree cost, every e-node 1"
    else:
        t_price = time.perf_counter()
        egraph = priced(runner.egraph, snap, model, left_out=left_out)
        pricing = time.perf_counter() - t_price
        timings["price"] += pricing
        if model.name in MEASURING:  # measuring is outside time_limit, as documented
            deadline += pricing
        attribution = ATTRIBUTION_SECONDS_PER_ENODE * snap.num_enodes
        # The ILP's next best are measured candidates too. Of the ``alternatives`` the input takes one:
        # ask for two more, as some may rebuild into graphs structurally equal to the input or another.
        chosen, *next_best = _extract(extractor, egraph, root_classes, deadline - attribution,
                                      ilp_time_limit, report, k=alternatives + 1 if alternatives > 1 else 1,
                                      snap=snap)
        report.extraction_status, report.gap, report.extracted_cost = chosen.status, chosen.gap, chosen.cost
        report.solver, report.regions = chosen.solver or None, chosen.regions
        choice = chosen.choice
    graph = rebuild(runner, snap, choice)
    timings["extract"] = time.perf_counter() - t - (pricing if extractor != "egglog" else 0.0)
    t = time.perf_counter()
    out = to_workload(graph, wl, fold_params=False)
    timings["rebuild"] = time.perf_counter() - t
    t = time.perf_counter()
    # Which rules the result uses, for the report; not asked of a result the input will replace, as not cheaper:
    # the provenance rules took 8.8 s on a 50k-e-node e-graph of TASO's rules (the report's rules_used is empty then).
    if alternatives or model.name in MEASURING or graph_cost(out.folded_graph(), model) < report.cost_before * (1 - 1e-9):
        used = rules_used(runner, snap, choice, deadline=deadline)
        if used is None:
            report.rules_used = None
            report.notes.append("which rules the result uses is not known: egglog's provenance query was not done "
                                "within the time limit")
        else:
            report.rules_used = _rule_names(rule_list, used)
    timings["attribute"] = time.perf_counter() - t

    def others() -> Iterator[Alternative]:
        seen = [choice]

        def ilp_choices() -> Iterator[tuple[str, dict]]:
            more = next_best
            if not more and extractor == "ilp":  # asked for after the run: searched for now
                left = deadline + report.check_reserve - time.perf_counter()  # the check's time, within the limit
                more = ilp_candidates(egraph, root_classes, 3, time_limit=max(0.0, min(ilp_time_limit, left)),
                                      warm_start=greedy_dag_extract(egraph, root_classes))[1:]
            for rank, e in enumerate(more, start=2):
                yield f"ILP #{rank} under {model.name}", e.choice

        def greedy_choices() -> Iterator[tuple[str, dict]]:
            for name in dict.fromkeys([model.name, *(m for m in COST_MODELS if m not in MEASURING)]):
                priced_egraph = (egraph if name == model.name and extractor != "egglog" else
                                 priced(runner.egraph, snap, get_cost_model(name), left_out=left_out))
                yield f"greedy DAG under {name}", greedy_dag_extract(priced_egraph, root_classes).choice

        for label, picked in itertools.chain(ilp_choices(), greedy_choices()):
            if picked in seen:  # the same graph again: not rebuilt (nor folded, which builds with TVM)
                continue
            seen.append(picked)
            other = to_workload(rebuild(runner, snap, picked), wl, fold_params=False)
            yield Alternative(label, other, _rule_names(rule_list, rules_used(runner, snap, picked)))

    return out, others()


def _rule_names(rule_list: list[Subst], used: set[int]) -> list[str]:
    return [rule.name for k, rule in enumerate(rule_list) if k in used]


def _cost_model(cost: str | CostModel, schedules: "ScheduleDatabase | None") -> CostModel:
    """``cost`` as a model; ``"tvm"`` schedules its kernels with ``schedules`` when given."""
    if schedules is not None and isinstance(cost, str) and cost.strip().lower() == "tvm":
        from ..cost.tvm_cost import TVMCost

        return TVMCost(schedules)
    return get_cost_model(cost)


def _extract(extractor: str, egraph: Any, root_classes: list, deadline: float, ilp_time_limit: float,
             report: OptimizeReport, k: int = 1, snap: Snapshot | None = None) -> list[Extraction]:
    """The chosen extraction, then with the ILP and ``k`` > 1 up to ``k - 1`` next cheapest distinct
    ones (:func:`~gsl_eq.extract.ilp_candidates`, searched for within the same time limit). The ILP
    starts from the cheaper of the greedy DAG choice and, with ``snap``, the exact extraction of the
    e-graph as an early iteration left it (:data:`EARLY_ENODES`)."""
    if extractor == "tree":
        return [tree_extract(egraph, root_classes)]
    margin = 0.05 * (deadline - time.perf_counter())  # for rebuilding the chosen graph
    warm = greedy_dag_extract(egraph, root_classes, deadline=deadline - margin)
    report.greedy_dag_cost, report.greedy_dag_time = warm.cost, warm.time
    if extractor == "greedy":
        return [warm]
    early = _early_iteration(report.iterations, snap.num_enodes) if snap is not None else None
    if early is not None:
        iteration, enodes = early
        small = as_of(egraph, snap, iteration)
        left = deadline - margin - time.perf_counter()
        start = ilp_candidates(small, root_classes, 1, time_limit=max(0.0, min(ilp_time_limit, EARLY_SHARE * left)),
                               warm_start=greedy_dag_extract(small, root_classes))[0]
        if start.cost < warm.cost * (1 - 1e-9):
            report.notes.append(f"the ILP started from the exact extraction of the e-graph as iteration {iteration} "
                                f"left it ({enodes:,} e-nodes; {start.status}), cost {start.cost:.6g} against the "
                                f"greedy DAG choice's {warm.cost:.6g}")
            warm = start
    left = deadline - margin - time.perf_counter()
    return ilp_candidates(egraph, root_classes, k, time_limit=max(0.0, min(ilp_time_limit, left)), warm_start=warm)


def _early_iteration(iterations: list[dict[str, Any]], enodes: int) -> tuple[int, int] | None:
    """The last iteration after which the e-graph held at most :data:`EARLY_ENODES` e-nodes, and how
    many, where it now holds ``enodes``, :data:`EARLY_GROWTH` times that bound or more; else None."""
    early = [(n, it["enodes"]) for n, it in enumerate(iterations, start=1) if it["enodes"] <= EARLY_ENODES]
    return early[-1] if early and enodes >= EARLY_GROWTH * EARLY_ENODES else None


def _final_build(out: Workload, timings: dict[str, float]) -> Workload:
    """``out`` with its parameter computations folded, timed as the final build (rewrites leave them
    unfolded: their folds are kept within the time limit, :func:`_checked`)."""
    t = time.perf_counter()
    built = out.fold_params()
    timings["final build"] = timings.get("final build", 0.0) + time.perf_counter() - t
    return built


def _calls(graph: Graph) -> int:
    return sum(1 for n in graph.rpo() if n.kind is Kind.CALL)


def as_rule_list(rules: object) -> list[Subst]:
    """``rules`` as a list of Subst, each rule once (a library rule given twice, as in
    ``rules.legalize() + rules.default()``, is kept where it comes first), or a TypeError that says
    what was passed instead; two different rules of one name are a ValueError."""
    hint = ""
    if isinstance(rules, Subst):
        hint = ": put a single rule in a list, [rule]"
    elif callable(rules):
        hint = f": {getattr(rules, '__qualname__', rules)!s} is a function; call it, e.g. rules.default()"
    elif isinstance(rules, (str, bytes, Workload, tvm.IRModule)) or not isinstance(rules, Iterable):
        hint = ""
    else:
        rule_list = list(rules)
        wrong = [(k, r) for k, r in enumerate(rule_list) if not isinstance(r, Subst)]
        if not wrong:
            first: dict[str, Subst] = {}
            twice = sorted({r.name for r in rule_list if not _same_rule(first.setdefault(r.name, r), r)})
            if twice:
                raise ValueError(f"rules must have distinct names; more than one rule is named "
                                 f"{', '.join(map(repr, twice))} (name them: Subst(source, target, name=...))")
            return list(first.values())
        k, r = wrong[0]
        raise TypeError(f"rules must be a list of Subst; item {k} is {_describe(r)}")
    raise TypeError(f"rules must be a list of Subst; got {_describe(rules)}{hint}")


def _same_rule(a: Subst, b: Subst) -> bool:
    """Whether two rules of one name are one rule: the same object, or the library's rule built
    twice (``rules.legalize() + rules.default()``: by the same line of gsl_eq.rules)."""
    return a is b or (a.loc == b.loc and Path(a.loc.filename).resolve().is_relative_to(_LIBRARY))


_LIBRARY = Path(library.__file__).resolve().parent


def _describe(value: object) -> str:
    return f"the {type(value).__name__} {value!r}"[:200]


def _ordered(rule_list: list[Subst], order: Sequence[int | str] | None) -> list[Subst]:
    if order is None:
        return rule_list
    names = [r.name for r in rule_list]
    index = [names.index(o) if isinstance(o, str) and o in names else o for o in order]
    if sorted(i for i in index if isinstance(i, int)) != list(range(len(rule_list))):
        raise ValueError(f"order {list(order)} is not a permutation of the {len(rule_list)} rules {names}")
    return [rule_list[i] for i in index]


def _fmt_gap(gap: float | None) -> str:
    return "n/a" if gap is None else f"{gap:.2%}"


def _fmt_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in sorted(counts.items()) if v) or "none"
