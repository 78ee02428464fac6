"""A guided search for e-graphs that stop at their node limit: saturate, extract, and saturate again
from the best term (``optimize(..., search="restart")``).

Where the e-graph fills its node limit, most of it holds forms of the input that no cheap term uses.
Restarting from the extracted term spends the node budget anew where the last round's choice left
off: the rules apply to a graph that is already better, and their next steps fit in the limit. Each
round's e-graph holds the term it started from, so no round ends costlier than the one before; the
cheapest is returned::

    result = optimize(wl, rules.tensat(), node_limit=20_000, search="restart")
    result.report.rounds     # per round: e-nodes, why it stopped, the extracted cost

The first round is plain saturation under the same budget. Where it stopped at a limit another round
can pass, its exact extractor is given at most half of the time left, so the search finds at least
what saturation finds where the ILP solves in that time; where it saturated, it extracts as plain
saturation does, and is the result.
A later round runs after one that improved on the round before and stopped at the node limit (or ran
its rules with several source outputs in its first iterations only, ``multi_iterations``), until the
budget's search time ends
(each round within every limit: the node limit is each round's memory budget, the time limit the
whole call's, the best term's final build included) or :data:`MAX_ROUNDS`. The cheapest term whose
fold is predicted to fit in the limit is the result.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Any, Callable, Iterator

from ..cost import CostModel
from ..egraph import Iteration, StopReason
from ..frontend import Subst
from ..workload import Workload
from .arguments import Settings
from .budget import EXTRACTION_SHARE, Budget
from .candidates import Alternative
from .report import OptimizeReport
from .saturate import Saturated, finish, grow

#: The most rounds a restart search runs.
MAX_ROUNDS = 8
#: A later round starts only with at least this share of the search's seconds left before the search ends.
ROUND_SHARE = 0.1
#: What each round's saturation reports in ``report.timings``, summed over the rounds.
ROUND_TIMINGS = ("load", "compile", "saturate", "extract", "rebuild", "attribute")


def restart(wl: Workload, rule_list: list[Subst], model: CostModel, settings: Settings, budget: Budget,
            report: OptimizeReport, on_iteration: Callable[[Iteration], None] | None = None) -> Saturated:
    """Rounds of saturation, each from the cheapest term the one before extracted, within ``budget``."""
    runs: list[dict[str, Any]] = []
    terms: list[Workload] = []
    others: Iterator[Alternative] = iter(())
    start = wl
    for number in range(1, MAX_ROUNDS + 1):
        others = iter(())  # the last round's e-graph is released before the next one grows
        round_budget = budget if number == 1 else _later_round(budget)
        found, summary = _round(start, rule_list, model, settings, round_budget, report, on_iteration, number)
        if round_budget is not budget:  # a measuring model's timing moves the call's ends too
            budget.measured(round_budget.measuring)
        others, improved = found.others, not runs or summary["cost"] < min(r["cost"] for r in runs) * (1 - 1e-9)
        terms.append(found.workload)
        runs.append(summary)
        del found
        if not improved or not _more_to_find(summary["stop_reason"], settings) or not _room(terms[-1], budget):
            break
        start = terms[-1]
    cheapest = min(range(len(runs)), key=lambda k: (not _fits(terms[k], budget) and k > 0, runs[k]["cost"]))
    _sum_up(report, runs, cheapest)
    earlier = [Alternative(f"restart round {k + 1}", term, None) for k, term in enumerate(terms) if k != cheapest]
    return Saturated(terms[cheapest], itertools.chain(others, earlier))


def _fits(term: Workload, budget: Budget) -> bool:
    """Whether ``term``'s final build (its fold) and check are predicted to end within the call's limit."""
    return term.predicted_fold_seconds() + budget.checking <= budget.end - time.perf_counter()


def _room(term: Workload, budget: Budget) -> bool:
    """Whether another round fits: :data:`ROUND_SHARE` of the search's seconds left before the search ends,
    and after it still the time ``term``'s fold is predicted to take (a later round's term folds more)."""
    left = budget.end - time.perf_counter() - budget.checking - term.predicted_fold_seconds()
    return min(left, budget.search_end - time.perf_counter()) >= ROUND_SHARE * budget.search_seconds


def _more_to_find(stop_reason: str, settings: Settings) -> bool:
    """Whether a round from the extracted term can find what this one could not: it stopped at the node
    limit, or its rules with several source outputs ran in its first iterations only (TENSAT's
    ``iter_multi``), and run again in the next round's."""
    return stop_reason == StopReason.NODE_LIMIT.value or settings.multi_iterations is not None


def _later_round(budget: Budget) -> Budget:
    """A round's own budget: the time left until the call's search ends (the call's extraction share
    stays a margin for the final build and check), extraction's share of it kept."""
    now = time.perf_counter()
    left = budget.search_end - now
    return Budget(now, left, EXTRACTION_SHARE * left, 0.0, 0.0)


def _round(start: Workload, rule_list: list[Subst], model: CostModel, settings: Settings, budget: Budget,
           report: OptimizeReport, on_iteration: Callable[[Iteration], None] | None,
           number: int) -> tuple[Saturated, dict[str, Any]]:
    """One round of saturation from ``start``; the report's totals (timings, applications, rules used)
    kept over the rounds before. Where another round may follow, the round's exact extractor is held to
    half the time left; a round that ends the search extracts as plain saturation does."""
    before = _totals(report)
    runner = grow(start, rule_list, settings, budget, report, on_iteration)
    if _more_to_find(report.stop_reason, settings):
        left = budget.deadline - time.perf_counter()
        settings = dataclasses.replace(settings, ilp_time_limit=max(1e-3, min(settings.ilp_time_limit, left / 2)))
    found = finish(start, rule_list, runner, model, settings, budget, report)
    summary = {"round": number, "enodes": report.enodes, "iterations": len(report.iterations),
               "stop_reason": report.stop_reason, "cost": report.extracted_cost
               if report.extracted_cost is not None else float("inf"),
               "extraction_status": report.extraction_status, "rules_used": report.rules_used,
               "iteration_reports": report.iterations}
    _add_totals(report, before)
    return found, summary


def _totals(report: OptimizeReport) -> dict[str, Any]:
    return {"timings": {k: report.timings.get(k, 0.0) for k in ROUND_TIMINGS},
            "applications": dict(report.applications), "rejected": {r: dict(v) for r, v in report.rejected.items()}}


def _add_totals(report: OptimizeReport, before: dict[str, Any]) -> None:
    """The report's per-round fields as totals: what the rounds before did, plus this round's."""
    for key, value in before["timings"].items():
        report.timings[key] = report.timings.get(key, 0.0) + value
    for rule, count in before["applications"].items():
        report.applications[rule] = report.applications.get(rule, 0) + count
    for rule, reasons in before["rejected"].items():
        merged = report.rejected.setdefault(rule, {})
        for reason, count in reasons.items():
            merged[reason] = merged.get(reason, 0) + count


def _sum_up(report: OptimizeReport, runs: list[dict[str, Any]], cheapest: int) -> None:
    """The rounds in the report: each round's summary, every iteration (with its round), the rules the
    rounds up to the cheapest used, and a note."""
    report.iterations = [{**it, "round": run["round"]} for run in runs for it in run.pop("iteration_reports")]
    used = [run.pop("rules_used") for run in runs][:cheapest + 1]
    report.rules_used = None if any(u is None for u in used) else [
        rule for rule in report.rules if any(rule in u for u in used)]
    report.rounds = runs
    report.notes.append(f"restart search: {len(runs)} round(s), extracted costs "
                        + ", ".join(f"{run['cost']:.6g}" for run in runs)
                        + f"; round {cheapest + 1}'s term is the result")
