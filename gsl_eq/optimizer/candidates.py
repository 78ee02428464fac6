"""Which graph optimize() returns: the candidates a search found, checked in order of cost, or timed.

The search offers its result first, then other graphs of the e-graph (:class:`Alternative`), one by one
as they are asked for. :func:`checked` returns the first that costs less than the input and passes
the check (:mod:`.verify`), folded; :func:`select_measured` times the input and a few of them as TVM
builds them (:mod:`.selection`) and keeps the fastest. Greedy mode's result is saturate mode's rival
(:func:`against_greedy`)::

    chosen = checked(iter([Alternative("result", out, used)]), before, model, reference, report)
    chosen.workload if chosen is not None else wl   # None: the input is returned
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple

from ..cost import CostModel, graph_cost
from ..frontend import Subst
from ..graph import Graph, Kind, Node
from ..greedy.rewriter import GreedyResult, greedy
from ..workload import Workload
from .report import Fallback, OptimizeReport
from .verify import Reference

if TYPE_CHECKING:
    from ..measure.schedule_db import ScheduleDatabase
    from ..proof import Proof

#: Makes the proof of a built candidate (:func:`built`).
Prove = Callable[["Alternative"], "Proof"]


class Alternative(NamedTuple):
    """A graph optimize() may return: where it comes from, the workload, the rules it uses, and for a
    graph greedy mode made, its recorded rewrites (:attr:`~gsl_eq.greedy.rewriter.GreedyResult.history`)."""

    label: str
    workload: Workload
    rules_used: list[str] | None
    history: list | None = None
    #: The workload as the search found it, once ``workload`` is its final build (:func:`built`).
    found: Workload | None = None


def reference_of(wl: Workload, report: OptimizeReport) -> Reference:
    """What candidates are checked against (:mod:`gsl_eq.optimizer.verify`); the notes say when it is not the input."""
    reference = Reference.of(wl)
    if reference.label != "input":
        report.notes.append(f"TVM cannot build the input: results are checked against the {reference.label}"
                            if reference.outputs is not None else
                            f"{reference.reason}: results are checked only to build and run")
    return reference


def checked(options: Iterable[Alternative], before: float, model: CostModel, reference: Reference,
             report: OptimizeReport, deadline: float = math.inf, prove: Prove | None = None,
             ready: Iterable[Alternative] = ()) -> Alternative | None:
    """The first of ``options`` that costs less than the input (``before``) and passes the check
    (:mod:`gsl_eq.optimizer.verify`), folded (:func:`final_build`), or None for the input; each one that fails is in
    ``report.fallbacks``. Past ``deadline`` no further option is tried. An option whose fold is predicted
    (:meth:`~gsl_eq.workload.Workload.predicted_fold_seconds`) to take longer than the time kept for it
    (``report.fold_reserve``) and to end past ``deadline`` less the check's time, as the reference's took
    (:meth:`~gsl_eq.optimizer.verify.Reference.predicted_check_seconds`; TASO's rules fold products of weight matrices,
    11 s for TENSAT's BERT), is passed over: only the options of ``ready``, made already, are tried after it
    (greedy mode's result, say, which folded as it went; making another, the ILP's next best, would take
    the time the fold lacks), until the check would no longer end by ``deadline``; one whose fold ends too
    late for its check is not checked. With ``prove``, each fallback's proof is made when asked for."""
    remaining, unfit, tried = iter(options), None, []
    while True:
        late = deadline - (reference.predicted_check_seconds() if unfit and not report.fallbacks else 0.0)
        if (report.fallbacks or unfit) and time.perf_counter() >= late:  # before making the next option, too
            report.notes.append(_none_left(report, unfit, f"the time limit ended the search for another after "
                                                          f"{len(report.fallbacks)} failed the check"))
            return None
        option = next(remaining, None)
        if option is None:
            break
        if any(option is t for t in tried):
            continue
        tried.append(option)
        if option.label != "result" and graph_cost(option.workload.folded_graph(), model) >= before * (1 - 1e-9):
            continue
        checking = reference.predicted_check_seconds()
        folding, left = option.workload.predicted_fold_seconds(), deadline - checking - time.perf_counter()
        if folding > max(left, report.fold_reserve):
            unfit = unfit or (f"folding the {option.label}'s parameter computations ({len(option.workload.fold_calls())} "
                              f"calls) is predicted to take {folding:.1f} s, past the time limit ({max(left, 0.0):.1f} "
                              f"s left before the check; a limit of {math.ceil(report.time_limit + folding - left)} s "
                              "would leave room for it)")
            remaining = iter(ready)
            continue
        option = built(option, report.timings)
        if unfit and time.perf_counter() + checking > deadline:  # its fold took longer than predicted
            report.notes.append(f"{unfit}: the {option.label} was folded instead, but past its prediction, leaving "
                                "its check no time before the limit: the input is returned")
            return None
        reason = reference.mismatch(option.workload)
        if reason is None:
            if report.fallbacks or unfit:
                why = f"the result failed the check ({report.fallbacks[0]})" if report.fallbacks else unfit
                report.notes.append(f"{why}: {option.label} is returned instead, the next cheapest that "
                                    + ("passes it" if report.fallbacks else "folds in time and passes the check"))
            return option
        report.fallbacks.append(fallback(option, reason, prove))
    if report.fallbacks or unfit:
        report.notes.append(_none_left(report, unfit, "no other extraction cheaper than the input passes it"))
    return None


def _none_left(report: OptimizeReport, unfit: str | None, why: str) -> str:
    """The note for a call that returns the input: the first fold that would not fit, or the first
    failed check, and why no other option was returned."""
    if report.fallbacks:
        return f"the result failed the check ({report.fallbacks[0]}) and {why}: the input is returned"
    return f"{unfit}: the input is returned"


#: The label of TVM's own passes' result among measured selection's candidates.
TVM_PASSES = "TVM's passes"


def select_measured(wl: Workload, found: Iterable[Alternative], candidates: int,
                     schedules: "ScheduleDatabase | None", model: CostModel, reference: Reference,
                     report: OptimizeReport, prove: Prove | None = None) -> Alternative | None:
    """The fastest of the input, TVM's own passes' result (:func:`~gsl_eq.optimizer.baseline.tvm_passes`)
    and the distinct ``found`` graphs that pass the check (``candidates`` of them with the input) as TVM
    runs them, or None for the input. The baseline is the input, or TVM's passes' result where that
    wins over it; another candidate replaces the baseline only if it wins over it too. A win is
    faster beyond the noise under ``schedules``, under an independently seeded draw of them and
    under TVM's default build (:func:`~gsl_eq.optimizer.selection.confirm`). Fills ``report.candidates``."""
    from ..measure.schedule_db import ScheduleDatabase
    from .selection import time_candidates

    t = time.perf_counter()
    options = _distinct_checked(wl, found, candidates, reference, report, prove, also=_tvm_passes(wl, report))
    if schedules is None:  # the tvm cost model's kernels are those the candidates are built with
        schedules = getattr(model, "schedules", None) or ScheduleDatabase()
    if not options:
        report.notes.append("measured selection: no candidate builds and passes the check, the input is returned")
        return None
    timed = time_candidates([(o.label, o.workload) for o in options], schedules)
    report.candidates = [{"label": c.label, "seconds": c.seconds, "rounds": c.rounds,
                          "cost": graph_cost(c.workload.graph, model)} for c in timed]
    chosen, verdict = _measured_winner(timed, schedules, report.candidates)
    for i, entry in enumerate(report.candidates):
        entry["returned"] = i == chosen
    report.timings["select"] = time.perf_counter() - t
    report.notes.append(f"measured selection: {verdict}")
    return None if chosen == 0 and options[0].label.startswith("input") else options[chosen]


def _tvm_passes(wl: Workload, report: OptimizeReport) -> list[Alternative]:
    """TVM's passes' result as a candidate, or none (noted) where TVM's passes fail on ``wl``."""
    from .baseline import tvm_passes

    try:
        return [Alternative(TVM_PASSES, tvm_passes(wl), [])]
    except Exception as error:  # noqa: BLE001  (any TVM failure: the baseline is then the input alone)
        report.notes.append(f"measured selection: TVM's own passes fail on the input ({type(error).__name__}: "
                            f"{str(error).splitlines()[0] if str(error) else ''}), so they are not a candidate")
        return []


def _measured_winner(timed: list, schedules: "ScheduleDatabase", entries: list[dict]) -> tuple[int, str]:
    """The index of the candidate measured selection returns, and why: the baseline (the input, or TVM's
    passes' result where it wins over the input), or the fastest where it wins over the baseline."""
    from .selection import confirm

    def wins(k: int, over: int) -> tuple[bool, str]:
        second = confirm(timed[k], timed[over], schedules)
        if second.times:
            entries[k].setdefault("confirmed", []).append({"against": timed[over].label, **second.times})
        return second.confirmed, f"{timed[k].label} against {timed[over].label}: {second.why}"

    has_input = timed[0].label.startswith("input")
    fastest = min(range(len(timed)), key=lambda i: timed[i].seconds)
    said = [f"{timed[fastest].label} runs fastest of {len(timed)} candidates ({timed[fastest].seconds * 1e6:.1f} us"
            + (f" against the input's {timed[0].seconds * 1e6:.1f} us)" if has_input and fastest else ")")]
    if not has_input:
        return fastest, said[0]
    baseline = 0
    passes = next((k for k in range(1, len(timed)) if timed[k].label == TVM_PASSES), None)
    if passes is not None and passes != fastest:
        won, why = wins(passes, 0)
        said.append(why)
        baseline = passes if won else 0
    if fastest != baseline:
        won, why = wins(fastest, baseline)
        said.append(why)
        if won:
            return fastest, "; ".join(said)
    said.append("the input is returned" if baseline == 0 else f"{TVM_PASSES}' result is returned")
    return baseline, "; ".join(said)


def _distinct_checked(wl: Workload, found: Iterable[Alternative], candidates: int, reference: Reference,
                      report: OptimizeReport, prove: Prove | None = None,
                      also: Iterable[Alternative] = ()) -> list[Alternative]:
    """The input (where it builds) and the ``found`` graphs that pass the check, folded, ``candidates`` in
    all, then those of ``also`` that do; a graph structurally equal to one before is that one, its label
    naming both."""
    import tvm_ffi

    key = functools.partial(tvm_ffi.structural_hash, map_free_vars=True)
    pool: dict[int, Alternative] = {}
    if reference.label == "input":
        pool[key(wl.mod)] = Alternative("input", wl, [])
    else:
        report.notes.append("measured selection: the input cannot be built, so it is not a candidate")
    def admit(option: Alternative) -> None:
        option = built(option, report.timings)
        k = key(option.workload.mod)
        if k in pool:
            same = pool[k]
            pool[k] = same._replace(label=f"{same.label} = {option.label}")
            return
        reason = reference.mismatch(option.workload)
        if reason is None:
            pool[k] = option
        else:
            report.fallbacks.append(fallback(option, reason, prove))

    for option in found:
        if len(pool) >= candidates:
            break
        admit(option)
    for option in also:
        admit(option)
    return list(pool.values())


def fallback(option: Alternative, reason: str, prove: Prove | None) -> Fallback:
    """The report's entry for ``option`` (built), which failed the check for ``reason``, its proof made when asked for."""
    return Fallback(f"{option.label}: {reason}", None if prove is None else functools.partial(prove, option))


def greedy_rival(wl: Workload, rule_list: list[Subst], iter_limit: int, node_limit: int,
                  deadline: float) -> GreedyResult | None:
    """Greedy mode's result with the rules it can run, by ``deadline``: saturate mode's rival."""
    runnable = [rule for rule in rule_list if rule.connected]
    left = deadline - time.perf_counter()
    if not runnable or left <= 0:
        return None
    return greedy(wl, runnable, max_rounds=iter_limit, node_limit=node_limit, time_limit=left, record=True)


def against_greedy(out: Workload, others: Iterator[Alternative], rival: GreedyResult, model: CostModel,
                    report: OptimizeReport) -> tuple[Workload, Iterator[Alternative], dict[Node, frozenset[str]],
                                                     list | None, tuple[Alternative, ...]]:
    """The extraction, or greedy mode's result where that costs less (the other then a candidate after
    it); greedy's result is a candidate after the extraction's others in any case. Last, the one of the
    two that is not the result, made already."""
    folded = rival.workload.folded_graph()
    report.greedy_cost = graph_cost(folded, model)
    greedy_option = Alternative("greedy mode's result", rival.workload, rival.used, rival.history)
    if report.greedy_cost >= report.cost_after * (1 - 1e-9):
        return out, itertools.chain(others, [greedy_option]), {}, None, (greedy_option,)
    report.notes.append(f"greedy mode's result with the same rules costs {report.greedy_cost:.6g} {report.cost_unit}, "
                        f"less than the extraction's {report.cost_after:.6g}: it is the result")
    extracted = Alternative("saturation's extraction", out, report.rules_used)
    report.greedy_result, report.rules_used = True, rival.used
    report.cost_after, report.calls_after = report.greedy_cost, calls(folded)
    return rival.workload, itertools.chain([extracted], others), rival.origins, rival.history, (extracted,)


def greedy_runnable(rule_list: list[Subst], report: OptimizeReport) -> list[Subst]:
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


def built(option: Alternative, timings: dict[str, float]) -> Alternative:
    """``option`` with its workload's final build (:func:`final_build`), the workload as found kept."""
    return option._replace(workload=final_build(option.workload, timings), found=option.workload)


def final_build(out: Workload, timings: dict[str, float]) -> Workload:
    """``out`` with its parameter computations folded, timed as the final build (rewrites leave them
    unfolded: their folds are kept within the time limit, :func:`checked`)."""
    t = time.perf_counter()
    built = out.fold_params()
    timings["final build"] = timings.get("final build", 0.0) + time.perf_counter() - t
    return built


def calls(graph: Graph) -> int:
    return sum(1 for n in graph.rpo() if n.kind is Kind.CALL)
