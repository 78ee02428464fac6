"""What users call: :func:`optimize` a module or workload with GSL rules, greedily or by saturation.

    result = gsl_eq.optimize(wl, mode="saturate", cost="roofline", extractor="ilp")
    print(result.report)            # a table: cost before/after, phases, iterations, stop reason
    result.report.to_json()         # the same, for files
    new_mod = result.mod

A call is six phases, each a function here or in the module named: its arguments checked
(:mod:`.arguments`), the input folded, priced and its reference outputs computed (:func:`prepare`), the
time budgeted (:class:`~.budget.Budget`), the search (:func:`search_greedy`, or
:func:`~.saturate.saturate` after greedy mode's rival), the choice among what it found, checked
(:mod:`.candidates`), and the report finished (:func:`finish`).

Costs are those of the workload with its parameters folded: a computation on parameters only is done
once, before deployment, and costs nothing. The report says which rules the returned module uses
(``rules_used``), apart from what the run did (``applications``, ``rejected``): see
:class:`~.report.OptimizeReport`.
"""

from __future__ import annotations

import functools
import itertools
import time
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, Sequence

import tvm

from ..cost import MEASURING, CostModel, cost_unit, graph_cost
from ..egraph import Iteration, StopReason
from ..frontend import Subst
from ..graph import Node
from ..greedy.rewriter import GreedyResult, greedy
from ..run.limits import Limits, callers_heap_frozen
from ..workload import FoldWarning, Workload
from . import arguments
from .arguments import Settings
from .budget import Budget, fold_reserve
from .candidates import (
    TVM_PASSES, Alternative, Prove, against_greedy, calls, checked, greedy_rival, greedy_runnable, reference_of, select_measured,
)
from .proofs import Prover
from .report import OptimizeReport, OptimizeResult
from .guided import restart
from .saturate import saturate
from .verify import Reference

if TYPE_CHECKING:
    from ..measure.schedule_db import ScheduleDatabase


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
    node_limit: int | None = None,
    iter_limit: int | None = None,
    time_limit: float | None = None,
    order: Sequence[int | str] | None = None,
    ilp_time_limit: float = 60.0,
    on_iteration: Callable[[Iteration], None] | None = None,
    select: str = "cost",
    candidates: int = 4,
    schedules: "ScheduleDatabase | None" = None,
    multi_iterations: int | None = None,
    cycles: str = "keep",
    limits: Limits | None = None,
    search: str = "saturate",
) -> OptimizeResult:
    """Optimize a workload (or a bare IRModule) with GSL ``rules``; the input is never changed.

    Saturate mode applies every rule at once in an e-graph and extracts the cheapest equivalent graph;
    it runs greedy mode first and returns greedy's result where that costs less, so it is never
    costlier than greedy mode with the same rules. Greedy mode runs GSL's destructive matcher, the rules
    in order. Every returned module has been built, run and seen to compute what the input computes;
    a result that fails is replaced by the next cheapest candidate that passes, at last the input::

        result = optimize(wl, rules.default() + rules.algebraic(), time_limit=30)
        result.report.speedup, result.mod

    Parameters
    ----------
    mod_or_workload:
        A :class:`~gsl_eq.workload.Workload` (a module with its weights) or a bare ``tvm.IRModule``.
    rules:
        The rules (default :func:`gsl_eq.rules.default`, in saturate mode with ``cost="tvm"``
        :func:`gsl_eq.rules.default` + :func:`gsl_eq.rules.cpu`). Greedy mode leaves out, naming them in
        ``report.notes``, rules whose source outputs share no node (``Subst.connected``).
    mode:
        ``"saturate"`` or ``"greedy"``.
    cost:
        ``"roofline"``, ``"opcount"``, ``"measured"``, ``"tvm"``, ``"gpu"``, ``"gpu-measured"`` or a
        :class:`~gsl_eq.cost.CostModel`. A model that measures times each kernel it has not seen once,
        outside ``time_limit``, and keeps it on disk.
    extractor:
        ``"ilp"`` (exact), ``"greedy"`` (greedy DAG), ``"tree"`` or ``"egglog"``.
    node_limit, iter_limit, time_limit:
        The limits (:class:`~gsl_eq.run.limits.Limits`; given here they override ``limits``).
        ``time_limit`` bounds the whole call, folds, checks and the final build included
        (:mod:`gsl_eq.optimizer.budget` says how it is shared).
    order:
        Greedy mode's rule order: a permutation of rule indices or names.
    ilp_time_limit:
        The most seconds the exact extractor runs.
    on_iteration:
        Called with each saturation :class:`~gsl_eq.egraph.Iteration`.
    select:
        ``"cost"``, or ``"measured"``: the input, TVM's own passes' result and up to ``candidates - 1``
        other graphs are built through ``schedules`` and timed (:mod:`gsl_eq.optimizer.selection`); a
        candidate replaces the baseline (the input, or TVM's passes' result where that wins over it) only
        if it is faster beyond the noise under two independent draws of schedules and under TVM's
        default build. This timing comes after ``time_limit``.
    candidates:
        How many graphs measured selection times, the input included.
    schedules:
        The :class:`~gsl_eq.measure.schedule_db.ScheduleDatabase` that ``"tvm"`` and measured
        selection build kernels with.
    multi_iterations, cycles:
        TENSAT's settings: rules with several source outputs searched in the first
        ``multi_iterations`` iterations only; ``cycles="filter"`` leaves out the e-nodes that would
        close a cycle (``report.left_out``); ``"keep"`` forbids cyclic choices instead.
    limits:
        The limits as one object.
    search:
        Saturate mode's search: ``"saturate"``, one saturation; ``"restart"``, rounds of saturation
        where the e-graph stops at its node limit, each from the cheapest term the round before
        extracted, within the same limits (:mod:`gsl_eq.optimizer.guided`; ``report.rounds``).
    """
    start = time.perf_counter()
    settings = arguments.settings(mode, extractor, Limits.of(limits, node_limit=node_limit, iter_limit=iter_limit,
                                                             time_limit=time_limit),
                                  ilp_time_limit, select, candidates, multi_iterations, cycles, search)
    model = arguments.cost_model(cost, schedules)
    rule_list = arguments.rule_list(rules, order, settings.mode, model)
    given = arguments.as_workload(mod_or_workload)
    wl, report, reference, budget = prepare(given, rule_list, model, settings, start)
    if settings.mode == "greedy":
        found = search_greedy(wl, rule_list, model, settings, budget, report)
    else:
        found = search_saturate(wl, rule_list, model, settings, budget, report, on_iteration)
    prover = Prover(given, wl, rule_list)
    chosen = choose(wl, found, model, settings, schedules, reference, budget, report, prover.of)
    origins = found.origins
    t = time.perf_counter()
    del found  # the last reference to the e-graph: egglog frees its tables and indexes, which cannot be foreseen
    report.timings["release"] = time.perf_counter() - t
    return finish(wl, chosen, origins, model, report, start, prover)


def prepare(given: Workload, rule_list: list[Subst], model: CostModel,
            settings: Settings, start: float) -> tuple[Workload, OptimizeReport, Reference, Budget]:
    """The input folded and priced, the report begun, the input's reference outputs (what the result's are
    compared with) and the budget: the check's reserve is predicted from what the reference took."""
    wl = given.fold_params()
    timings = {"fold": time.perf_counter() - start}
    t = time.perf_counter()
    before = graph_cost(wl.graph, model)
    timings["price"] = time.perf_counter() - t
    limit = settings.limits.time_limit
    report = OptimizeReport(settings.mode, model.name, before, before, calls(wl.graph), calls(wl.graph), timings,
                            [r.name for r in rule_list], cost_unit=cost_unit(model), time_limit=limit)
    report.notes += [f"input: {unfolded} (TVM cannot build it; it stays a computation)" for unfolded in wl.unfolded]
    t = time.perf_counter()
    reference = reference_of(wl, report)
    timings["reference"] = time.perf_counter() - t
    measuring = timings["price"] if model.name in MEASURING else 0.0  # outside time_limit, as documented
    budget = Budget.plan(start, limit, settings.mode, measuring, reference.predicted_check_seconds(), fold_reserve(wl))
    report.check_reserve, report.fold_reserve = budget.checking, budget.folding
    report.starved = budget.starved()
    if report.starved:
        report.notes.append(f"the time limit left no time for the search: the input's reference outputs took "
                            f"{timings['reference']:.1f} s of its {limit:g} s, and {budget.checking:.1f} s of it "
                            f"are kept for checking the result, {budget.folding:.1f} s for its final build"
                            + (f", {budget.extraction:.1f} s for extraction" if budget.extraction else ""))
    return wl, report, reference, budget


class Found(NamedTuple):
    """What a search found: its result, the other graphs it offers (rebuilt as asked for), which
    rules made each node of the result and the rewrites that made it (greedy mode's result only), and
    those of the others made already (saturate mode's rival or extraction), which cost no search to offer."""

    workload: Workload
    others: Iterator[Alternative]
    origins: dict[Node, frozenset[str]]
    history: list | None = None
    ready: tuple[Alternative, ...] = ()


def search_greedy(wl: Workload, rule_list: list[Subst], model: CostModel, settings: Settings, budget: Budget,
                  report: OptimizeReport) -> Found:
    """Greedy mode: the rules it can run, rewriting until none matches or a limit stops it."""
    runnable = greedy_runnable(rule_list, report)
    t = time.perf_counter()
    limits = settings.limits
    result = greedy(wl, runnable, max_rounds=limits.iter_limit, node_limit=limits.node_limit,
                    time_limit=max(budget.deadline - t, 1e-9), record=True)
    report.timings["rewrite"] = time.perf_counter() - t
    report.applications = {name: n for name, n in result.fired.items() if n}
    report.rules_used, report.rejected = result.used, result.rejected
    report.stop_reason = result.stop_reason.value
    if result.stop_reason is StopReason.CYCLE:
        report.notes.append(f"greedy rewriting stopped after {result.rounds} rounds ({result.passes} passes): "
                            "its rules came back to a graph they had made before (rules that undo one another)")
    elif not result.converged and not report.starved:
        report.notes.append(f"greedy rewriting stopped at the {result.stop_reason.value} after "
                            f"{result.rounds} rounds ({result.passes} passes)")
    _price_result(result.workload, model, report)
    return Found(result.workload, iter(()), result.origins, result.history)


def search_saturate(wl: Workload, rule_list: list[Subst], model: CostModel, settings: Settings, budget: Budget,
                    report: OptimizeReport, on_iteration: Callable[[Iteration], None] | None) -> Found:
    """Saturate mode: greedy mode's result first (its rival, in :data:`~.budget.GREEDY_SHARE` of the
    search), then saturation; the cheaper of the two is the result, the other a later candidate."""
    t = time.perf_counter()
    limits = settings.limits
    rival: GreedyResult | None = None if report.starved else greedy_rival(
        wl, rule_list, limits.iter_limit, limits.node_limit, budget.greedy_end())
    if rival is not None:  # the extraction, of the same rules' rewrites, folds about what greedy's folds did
        budget.keep_for_folding(rival.workload.before_folds().predicted_fold_seconds())
        report.fold_reserve = budget.folding
    report.timings["greedy"] = time.perf_counter() - t
    search = restart if settings.search == "restart" else saturate
    out, others = search(wl, rule_list, model, settings, budget, report, on_iteration)
    _price_result(out, model, report)
    if rival is None:
        return Found(out, others, {})
    return Found(*against_greedy(out, others, rival, model, report))


def _price_result(out: Workload, model: CostModel, report: OptimizeReport) -> None:
    """The search's result priced into the report, folded (greedy mode leaves a rewrite past its time
    limit unfolded; saturation leaves every fold to the final build)."""
    priced = out.folded_graph()
    report.cost_after, report.calls_after = graph_cost(priced, model), calls(priced)


def choose(wl: Workload, found: Found, model: CostModel, settings: Settings, schedules: "ScheduleDatabase | None",
           reference: Reference, budget: Budget, report: OptimizeReport, prove: Prove | None = None) -> Alternative | None:
    """The graph to return, checked and folded, or None for the input. Saturate mode changes the module
    only for a gain: among equal-cost choices the extractor's pick is arbitrary. With measured selection
    TVM's time decides instead."""
    before = report.cost_before
    options = itertools.chain([Alternative("result", found.workload, report.rules_used, found.history)], found.others)
    if settings.select == "measured":
        return select_measured(wl, options, settings.candidates, schedules, model, reference, report, prove)
    if not report.applications and report.cost_after >= before * (1 - 1e-9):
        report.notes.append("no rule rewrote anything: the input is returned")
        return None
    if report.cost_after > before or (settings.mode == "saturate" and report.cost_after >= before * (1 - 1e-9)):
        report.notes.append(f"the result cost {report.cost_after:.6g} {report.cost_unit} is not below the input's "
                            f"{before:.6g}: the input is returned, no rewrite is used")
        return None
    t, built = time.perf_counter(), report.timings.get("final build", 0.0)
    chosen = checked(options, before, model, reference, report, budget.end, prove, found.ready)
    report.timings["check"] = time.perf_counter() - t - (report.timings.get("final build", 0.0) - built)
    return chosen


def finish(wl: Workload, chosen: Alternative | None, origins: dict[Node, frozenset[str]], model: CostModel,
           report: OptimizeReport, start: float, prover: Prover | None = None) -> OptimizeResult:
    """The result: the chosen graph (or the input) with the report's costs and rules of what is returned,
    and its proof, made when asked for."""
    if chosen is None:
        report.input_returned = True
        out, report.cost_after, report.calls_after, report.rules_used = wl, report.cost_before, report.calls_before, []
    else:
        out, report.rules_used = chosen.workload, chosen.rules_used
        report.cost_after, report.calls_after = graph_cost(out.graph, model), calls(out.graph)
        if report.rules_used == [] and chosen.label != TVM_PASSES:
            report.notes.append("no rule's rewrite is on the result: it is the input with the computations it "
                                "repeats merged (each computed once, as an e-graph holds it)")
    report.notes += [f"result: {unfolded} (TVM cannot build it; it stays a computation)"
                     for unfolded in out.unfolded if unfolded not in wl.unfolded]
    report.timings["total"] = time.perf_counter() - start
    kept = origins if chosen is not None and chosen.label == "result" else {}
    prove = None if prover is None else functools.partial(prover.of, chosen)
    return OptimizeResult(out, report, input=wl, cost=model, origins=kept, prove=prove)
