"""Saturate mode's search: the e-graph grown within the budget, the cheapest term extracted and rebuilt.

:func:`saturate` returns the extracted workload and the other graphs the e-graph holds, rebuilt one by
one as they are asked for (:class:`~gsl_eq.optimizer.candidates.Alternative`)::

    found = saturate(wl, rule_list, model, settings, budget, report)
    found.workload          # the extraction, its parameter computations not yet folded
    next(found.others)      # the ILP's next cheapest, then greedy DAG extractions
"""

from __future__ import annotations

import itertools
import time
from dataclasses import asdict
from typing import Any, Callable, Hashable, Iterator, NamedTuple

from ..cost import COST_MODELS, MEASURING, CostModel, get_cost_model, graph_cost
from ..egraph import Iteration, Runner, Snapshot, StopReason
from ..egraph.cycles import closing_cycles
from ..extract import Extraction, ExtractGraph, greedy_dag_extract, ilp_candidates, tree_extract
from ..frontend import Subst
from ..greedy.rewriter import to_workload
from ..workload import Workload
from .arguments import Settings
from .budget import ATTRIBUTION_SECONDS_PER_ENODE, EXTRACTION_SECONDS_PER_ENODE, Budget
from .candidates import Alternative
from .choose import as_of, egglog_extract, priced, rebuild, roots, rules_used, settled
from .report import OptimizeReport

#: Where saturation grew the e-graph past EARLY_GROWTH times EARLY_ENODES e-nodes, the exact extractor
#: first extracts the e-graph as the last iteration that left at most EARLY_ENODES left it
#: (:func:`~gsl_eq.optimizer.choose.as_of`), in at most EARLY_SHARE of its time, and starts from that
#: choice where it is cheaper than the greedy DAG's: rules with several source outputs can grow an
#: e-graph by forms none of which pays, whose whole program the ILP may not solve in its time
#: (BENCHMARKS.md's short-limits section). Smaller e-graphs are solved whole.
EARLY_ENODES = 5_000
EARLY_GROWTH = 2
EARLY_SHARE = 0.25


class Saturated(NamedTuple):
    """What saturation found: the extraction, rebuilt, and the other graphs, rebuilt as asked for."""

    workload: Workload
    others: Iterator[Alternative]


class Term(NamedTuple):
    """The e-graph as extraction saw it and what it chose."""

    choice: dict[Hashable, int]
    egraph: ExtractGraph | None  # priced; None for egglog's own extraction
    roots: list[Hashable]
    left_out: set
    next_best: list[Extraction]
    pricing: float = 0.0  # seconds pricing the e-graph took: the price's, not extraction's


def saturate(wl: Workload, rule_list: list[Subst], model: CostModel, settings: Settings, budget: Budget,
             report: OptimizeReport, on_iteration: Callable[[Iteration], None] | None = None) -> Saturated:
    """Saturation, extraction and rebuilding within ``budget``; the report gets what each found."""
    runner = grow(wl, rule_list, settings, budget, report, on_iteration)
    return finish(wl, rule_list, runner, model, settings, budget, report)


def finish(wl: Workload, rule_list: list[Subst], runner: Runner, model: CostModel, settings: Settings,
           budget: Budget, report: OptimizeReport) -> Saturated:
    """Extraction and rebuilding of the e-graph :func:`grow` left in ``runner``; the report gets what each found."""
    t = time.perf_counter()
    snap = runner.egraph.snapshot()
    report.enodes, report.eclasses, report.extractor = snap.num_enodes, len(snap.classes), settings.extractor
    term = extract(runner, snap, model, settings, budget, report)
    if term.egraph is not None:
        term = term._replace(choice=settled(term.egraph, snap, term.choice, term.roots))
    graph = rebuild(runner, snap, term.choice)
    report.timings["extract"] = time.perf_counter() - t - term.pricing
    t = time.perf_counter()
    out = to_workload(graph, wl, fold_params=False)
    report.timings["rebuild"] = time.perf_counter() - t
    t = time.perf_counter()
    # Which rules the result uses, for the report; not asked of a result the input will replace, as not cheaper:
    # the provenance query is slow on large e-graphs (the report's rules_used is empty then).
    if (settings.alternatives or model.name in MEASURING
            or graph_cost(out.folded_graph(), model) < report.cost_before * (1 - 1e-9)):
        report.rules_used = _used(runner, snap, term.choice, rule_list, budget.deadline, report)
    report.timings["attribute"] = time.perf_counter() - t
    return Saturated(out, _others(wl, rule_list, runner, snap, model, settings, budget, report, term))


def grow(wl: Workload, rule_list: list[Subst], settings: Settings, budget: Budget, report: OptimizeReport,
         on_iteration: Callable[[Iteration], None] | None) -> Runner:
    """The e-graph of ``wl`` under the rules, grown until saturation or a limit, leaving extraction its time."""
    limits = settings.limits
    runner = Runner(wl.graph, rule_list, node_limit=limits.node_limit, iter_limit=limits.iter_limit,
                    time_limit=budget.search_seconds, on_iteration=on_iteration, params=wl.params,
                    extraction_reserve=EXTRACTION_SECONDS_PER_ENODE + ATTRIBUTION_SECONDS_PER_ENODE,
                    multi_iterations=settings.multi_iterations, deadline=budget.saturation_end)
    report.timings["load"] = runner.report.load_time
    if runner.report.uncompiled and not report.starved:
        report.notes.append(f"compiling the rules reached the time limit: {len(runner.report.uncompiled)} of "
                            f"{len(rule_list)} were not compiled and never searched")
    run = runner.run(deadline=budget.saturation_end)
    report.timings["compile"], report.timings["saturate"] = run.compile_time, run.total_time
    report.stop_reason = run.stop_reason.value
    report.applications = {name: n for name, n in run.applied().items() if n}
    report.rejected = run.rejected()
    report.iterations = [asdict(it) for it in run.iterations]
    left = budget.deadline - time.perf_counter()
    report.extraction_budget = left
    late = run.iterations[-1].late if run.iterations and run.stop_reason is StopReason.TIME_LIMIT else []
    if late and not report.starved:
        report.notes.append(f"saturation stopped after {run.total_time:.1f} s, {left:.1f} s of the time limit left: "
                            f"searching {', '.join(late)} again is predicted to take longer than that (an egglog "
                            "search cannot be stopped once begun), and no other rule had anything left to do")
    return runner


def extract(runner: Runner, snap: Snapshot, model: CostModel, settings: Settings, budget: Budget,
            report: OptimizeReport) -> Term:
    """The chosen term of the e-graph under ``model`` with the settings' extractor, and what it saw."""
    root_classes = roots(runner, snap)
    left_out = _cycle_filter(snap, root_classes, settings, report)
    if settings.extractor == "egglog":
        report.extraction_status = "tree cost, every e-node 1"
        return Term(egglog_extract(runner, snap), None, root_classes, left_out, [])
    t = time.perf_counter()
    egraph = priced(runner.egraph, snap, model, left_out=left_out)
    pricing = time.perf_counter() - t
    report.timings["price"] += pricing
    if model.name in MEASURING:  # measuring is outside time_limit, as documented
        budget.measured(pricing)
    attribution = ATTRIBUTION_SECONDS_PER_ENODE * snap.num_enodes
    # The ILP's next best are measured candidates too. Of the ``alternatives`` the input takes one:
    # ask for two more, as some may rebuild into graphs structurally equal to the input or another.
    alternatives = settings.alternatives
    chosen, *next_best = _extractions(settings, egraph, root_classes, budget.deadline - attribution, report,
                                      k=alternatives + 1 if alternatives > 1 else 1, snap=snap)
    report.extraction_status, report.gap, report.extracted_cost = chosen.status, chosen.gap, chosen.cost
    report.solver, report.regions = chosen.solver or None, chosen.regions
    return Term(chosen.choice, egraph, root_classes, left_out, next_best, pricing)


def _cycle_filter(snap: Snapshot, root_classes: list, settings: Settings, report: OptimizeReport) -> set:
    """The e-nodes TENSAT's cycle filter leaves out (``cycles="filter"``), else none."""
    if settings.cycles != "filter" or settings.extractor == "egglog":
        return set()
    left_out = closing_cycles(snap.classes, root_classes)
    if left_out is None:
        report.notes.append("cycle filter: leaving out the e-nodes that close cycles would leave an output "
                            "without a term; the cycles are kept")
        left_out = set()
    report.left_out = len(left_out)
    return left_out


def _extractions(settings: Settings, egraph: Any, root_classes: list, deadline: float, report: OptimizeReport,
                 k: int = 1, snap: Snapshot | None = None) -> list[Extraction]:
    """The chosen extraction, then with the ILP and ``k`` > 1 up to ``k - 1`` next cheapest distinct
    ones (:func:`~gsl_eq.extract.ilp_candidates`, searched for within the same time limit). The ILP
    starts from the cheaper of the greedy DAG choice and, with ``snap``, the exact extraction of the
    e-graph as an early iteration left it (:data:`EARLY_ENODES`)."""
    if settings.extractor == "tree":
        return [tree_extract(egraph, root_classes)]
    margin = 0.05 * (deadline - time.perf_counter())  # for rebuilding the chosen graph
    warm = greedy_dag_extract(egraph, root_classes, deadline=deadline - margin)
    report.greedy_dag_cost, report.greedy_dag_time = warm.cost, warm.time
    if settings.extractor == "greedy":
        return [warm]
    early = _early_iteration(report.iterations, snap.num_enodes) if snap is not None else None
    if early is not None:
        warm = _early_start(egraph, snap, root_classes, early, warm, deadline - margin, settings, report)
    left = deadline - margin - time.perf_counter()
    return ilp_candidates(egraph, root_classes, k, time_limit=max(0.0, min(settings.ilp_time_limit, left)),
                          warm_start=warm)


def _early_start(egraph: Any, snap: Snapshot, root_classes: list, early: tuple[int, int], warm: Extraction,
                 deadline: float, settings: Settings, report: OptimizeReport) -> Extraction:
    """The exact extraction of the e-graph as iteration ``early[0]`` left it, where it is cheaper than ``warm``."""
    iteration, enodes = early
    small = as_of(egraph, snap, iteration)
    left = deadline - time.perf_counter()
    start = ilp_candidates(small, root_classes, 1, time_limit=max(0.0, min(settings.ilp_time_limit, EARLY_SHARE * left)),
                           warm_start=greedy_dag_extract(small, root_classes))[0]
    if start.cost >= warm.cost * (1 - 1e-9):
        return warm
    report.notes.append(f"the ILP started from the exact extraction of the e-graph as iteration {iteration} "
                        f"left it ({enodes:,} e-nodes; {start.status}), cost {start.cost:.6g} against the "
                        f"greedy DAG choice's {warm.cost:.6g}")
    return start


def _early_iteration(iterations: list[dict[str, Any]], enodes: int) -> tuple[int, int] | None:
    """The last iteration after which the e-graph held at most :data:`EARLY_ENODES` e-nodes, and how
    many, where it now holds ``enodes``, :data:`EARLY_GROWTH` times that bound or more; else None."""
    early = [(n, it["enodes"]) for n, it in enumerate(iterations, start=1) if it["enodes"] <= EARLY_ENODES]
    return early[-1] if early and enodes >= EARLY_GROWTH * EARLY_ENODES else None


def _used(runner: Runner, snap: Snapshot, choice: dict, rule_list: list[Subst], deadline: float,
          report: OptimizeReport) -> list[str] | None:
    """The names of the rules the chosen term relies on, or None where the query ran out of time."""
    used = rules_used(runner, snap, choice, deadline=deadline)
    if used is None:
        report.notes.append("which rules the result uses is not known: egglog's provenance query was not done "
                            "within the time limit")
        return None
    return rule_names(rule_list, used)


def _others(wl: Workload, rule_list: list[Subst], runner: Runner, snap: Snapshot, model: CostModel,
            settings: Settings, budget: Budget, report: OptimizeReport, term: Term) -> Iterator[Alternative]:
    """The e-graph's other graphs, each rebuilt when asked for: the ILP's next cheapest distinct ones under
    the run's cost model (``extractor="ilp"``), then the greedy DAG extractions under the run's and the
    other built-in cost models that do not measure. A choice made before is skipped."""
    seen = [term.choice]

    def ilp_choices() -> Iterator[tuple[str, dict]]:
        more = term.next_best
        if not more and settings.extractor == "ilp":  # asked for after the run: searched for now
            left = budget.deadline + report.check_reserve - time.perf_counter()  # the check's time, within the limit
            more = ilp_candidates(term.egraph, term.roots, 3, time_limit=max(0.0, min(settings.ilp_time_limit, left)),
                                  warm_start=greedy_dag_extract(term.egraph, term.roots))[1:]
        for rank, e in enumerate(more, start=2):
            yield f"ILP #{rank} under {model.name}", e.choice

    def greedy_choices() -> Iterator[tuple[str, dict]]:
        for name in dict.fromkeys([model.name, *(m for m in COST_MODELS if m not in MEASURING)]):
            priced_egraph = (term.egraph if name == model.name and term.egraph is not None else
                             priced(runner.egraph, snap, get_cost_model(name), left_out=term.left_out))
            yield f"greedy DAG under {name}", greedy_dag_extract(priced_egraph, term.roots).choice

    for label, picked in itertools.chain(ilp_choices(), greedy_choices()):
        if picked in seen:  # the same graph again: not rebuilt (nor folded, which builds with TVM)
            continue
        seen.append(picked)
        other = to_workload(rebuild(runner, snap, settled(term.egraph, snap, picked, term.roots)
                                    if term.egraph is not None else picked), wl, fold_params=False)
        yield Alternative(label, other, rule_names(rule_list, rules_used(runner, snap, picked)))


def rule_names(rule_list: list[Subst], used: set[int]) -> list[str]:
    """The names of the rules numbered in ``used``, in rule order."""
    return [rule.name for k, rule in enumerate(rule_list) if k in used]
