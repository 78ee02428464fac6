"""One cell's work, as a Ray task runs it (or a loop in this process): build the model and the rules
from their names, run :func:`~gsl_eq.optimizer.optimize`, return the results line as plain data.

    line = run_cell(Cell("nasrnn", "default", "greedy", "roofline", quick=True))
    line["cost_after"], line["speedup"], line["error"]   # error: None, or "Type: message"

Nothing big crosses between processes: the driver sends names, the task returns numbers. A cell
whose model, rules or optimize call raises returns its line with the error; it does not raise.
"""

from __future__ import annotations

import functools
import math
import os
import time
import traceback
from typing import Any

from ..frontend import Subst
from ..models.registry import load_model
from ..optimizer import optimize
from ..rules.sets import rule_set
from ..workload import Workload
from .cells import Cell, greedy_rules

#: The longest error message and traceback a line keeps (characters).
ERROR_CHARS = 2_000


def run_cell(cell: Cell) -> dict[str, Any]:
    """The results line of ``cell``: its identity (:meth:`Cell.identity`) and key, the costs before and
    after (in ``cost_unit``), speedup, op calls, e-nodes, stop reason, extraction status and gap,
    seconds (``optimize``'s, and the whole cell's with building the model), the rules run (``rules_run``;
    greedy mode's ``note`` says which were left out) and ``error`` (None, or ``"Type: message"``)."""
    start = time.perf_counter()
    line: dict[str, Any] = {"key": cell.key, **cell.identity(), "error": None}
    try:
        wl = _model(cell.model, cell.quick)
        rules, left_out = _rules(cell.rules, cell.mode)
        line["rules_run"] = len(rules)
        if left_out:
            line["note"] = (f"greedy mode runs the {len(rules)} rules of {cell.rules} with a connected source; "
                            f"{left_out} with disconnected outputs are left out (saturate mode pairs them)")
        result = optimize(wl, list(rules), mode=cell.mode, cost=cell.cost_model, extractor=cell.extractor or "ilp",
                          order=cell.ordering, **dict(cell.options))
        report = result.report
        line.update(cost_before=report.cost_before, cost_after=report.cost_after, cost_unit=report.cost_unit,
                    speedup=report.speedup, calls_before=report.calls_before, calls_after=report.calls_after,
                    enodes=report.enodes, stop_reason=report.stop_reason,
                    extraction_status=report.extraction_status, gap=report.gap, solver=report.solver,
                    input_returned=report.input_returned, seconds=report.timings.get("total"))
    except Exception as err:  # the line records it: the sweep goes on
        line["error"] = f"{type(err).__name__}: {err}"[:ERROR_CHARS]
        line["traceback"] = traceback.format_exc()[-ERROR_CHARS:]
    line["cell_seconds"] = time.perf_counter() - start
    line["pid"] = os.getpid()
    return plain(line)


def plain(value: Any) -> Any:
    """``value`` as JSON writes it exactly: non-finite floats as None, NumPy scalars as Python's,
    tuples as lists."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@functools.lru_cache(maxsize=8)
def _model(spec: str, quick: bool) -> Workload:
    """Each worker builds a model once for all its cells (optimize never changes its input)."""
    return load_model(spec, quick=quick)


@functools.lru_cache(maxsize=16)
def _rules(spec: str, mode: str) -> tuple[tuple[Subst, ...], int]:
    if mode == "greedy":
        rules, left_out = greedy_rules(spec)
        return tuple(rules), left_out
    return tuple(rule_set(spec)), 0
