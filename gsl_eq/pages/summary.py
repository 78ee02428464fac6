"""Pages of many runs: a table of results with a chart of their speedups, for a sweep over
models, rule sets and modes, and for greedy mode's rule orderings against saturation.

    rows = [summary_row("bert_encoder", "default", result.report), ...]
    summary_page(rows).write("sweep.html")
    orderings_page(compare_orderings(wl, rules.default())).write("orderings.html")
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from ..cost.model import display_unit, speedup
from .html import Page, bar_chart, cards, esc, fmt, table

__all__ = ["COLUMNS", "LABELS", "NUMERIC", "orderings_page", "summary_page", "summary_row"]

#: The fields of a summary row and their headings, in the table's order. ``speedup`` is
#: worked out from the costs when a row has none; a row may add ``cost_unit`` (default: the page's).
COLUMNS = {"model": "model", "rules": "rules", "mode": "mode", "cost_before": "cost before",
           "cost_after": "cost after", "speedup": "speedup", "enodes": "e-nodes", "stop_reason": "stop reason",
           "seconds": "seconds"}
#: The fields a row's label in the chart is made of, of those the page's columns have.
LABELS = ("model", "rules", "mode", "cost_model", "extractor", "ordering")
#: The fields shown as numbers (right-aligned).
NUMERIC = ("cost_before", "cost_after", "speedup", "enodes", "gap", "seconds")


def summary_row(model: str, rules: str, report: Any) -> dict[str, Any]:
    """The summary row of one run of :func:`~gsl_eq.optimizer.optimize` on ``model`` with the rule set
    named ``rules``: ``report`` is its :class:`~gsl_eq.optimizer.OptimizeReport` (pages come before the
    optimizer, so they read its fields without naming its class)."""
    return {"model": model, "rules": rules, "mode": report.mode, "cost_before": report.cost_before,
            "cost_after": report.cost_after, "speedup": report.speedup, "enodes": report.enodes,
            "stop_reason": report.stop_reason, "seconds": report.timings.get("total"), "cost_unit": report.cost_unit}


def summary_page(rows: Sequence[Mapping[str, Any]], title: str = "gsl_eq: results", cost_unit: str = "s",
                 cost_model: str | None = None, intro: str = "", columns: Mapping[str, str] = COLUMNS) -> Page:
    """A page of ``rows`` (fields in ``columns``, by default :data:`COLUMNS`; missing ones shown as
    "-"): a chart of each row's speedup, then the table, costs shown in the unit tables use (seconds
    as us). ``cost_unit`` is the unit of rows that do not name theirs. ``columns`` maps fields to
    headings (a sweep adds the cost model and the extractor); each bar is labelled by the row's
    fields of :data:`LABELS` among them. The rows are not changed."""
    shown, factor = display_unit(cost_unit)
    lines = [_cells(row, cost_unit, columns) for row in rows]
    units = sorted({display_unit(str(row.get("cost_unit") or cost_unit))[0] for row in rows
                    if row.get("cost_after") is not None}) or [shown]
    subtitle = (f"{cost_model} cost model, " if cost_model else "") + f"costs in {', '.join(units)}; " \
        "speedup = before / after (above 1 is faster)"
    page = Page(title, subtitle)
    speedups = [s for s in (_speedup(row) for row in rows) if math.isfinite(s)]
    page.add("", cards([("runs", str(len(rows))),
                        ("best speedup", f"{max(speedups):.3f}×" if speedups else "-"),
                        ("median speedup", f"{sorted(speedups)[len(speedups) // 2]:.3f}×" if speedups else "-")]),
             f'<p class="note">{esc(intro)}</p>' if intro else "")
    label_keys = [k for k in LABELS if k in columns]
    labels = [" · ".join(str(row.get(k)) for k in label_keys if row.get(k) not in (None, "")) for row in rows]
    page.add("Speedup per run", bar_chart([(label or f"run {k + 1}", [_speedup(row)])
                                           for k, (label, row) in enumerate(zip(labels, rows))],
                                          ["speedup (before / after)"], "×", colours=("#1971c2",),
                                          cls="chart speedups"))
    headers = [f"{h} ({', '.join(units)})" if k in ("cost_before", "cost_after") else h for k, h in columns.items()]
    numeric = [k for k, key in enumerate(columns) if key in NUMERIC]
    page.add("Runs", table(headers, lines, numeric=numeric, cls="summary"))
    return page


def orderings_page(comparison: Any, model: str = "", rules: str = "") -> Page:
    """The page of :func:`~gsl_eq.orderings.compare_orderings` (its
    :class:`~gsl_eq.orderings.OrderingComparison`): one summary row per rule ordering of greedy mode
    and one for saturate mode, on the summary page's machinery."""
    rows = []
    for order, report in comparison.greedy:
        rows.append({"model": model, "rules": " > ".join(order), "mode": "greedy", "cost_before": comparison.cost_before,
                     "cost_after": report.cost_after, "enodes": None, "stop_reason": report.stop_reason,
                     "seconds": report.timings.get("total")})
    if comparison.saturate is not None:
        s = comparison.saturate
        rows.append({"model": model, "rules": f"all at once ({rules})" if rules else "all at once",
                     "mode": "saturate", "cost_before": comparison.cost_before, "cost_after": s.cost_after,
                     "enodes": s.enodes, "stop_reason": s.stop_reason, "seconds": s.timings.get("total")})
    shown, factor = display_unit(comparison.cost_unit)
    greedy = [r.cost_after for _, r in comparison.greedy]
    intro = (f"Greedy mode under {len(greedy)} orderings of the rules: costs from "
             f"{fmt(min(greedy) * factor)} to {fmt(max(greedy) * factor)} {shown}" if greedy else "No greedy run")
    if comparison.saturate is not None:
        intro += f"; saturate mode, every rule at once: {fmt(comparison.saturate.cost_after * factor)} {shown}"
    title = f"gsl_eq rule orderings{': ' + model if model else ''}"
    return summary_page(rows, title=title, cost_unit=comparison.cost_unit, cost_model=comparison.cost_model,
                        intro=intro + f" (before: {fmt(comparison.cost_before * factor)} {shown}).")


def _speedup(row: Mapping[str, Any]) -> float:
    if row.get("speedup") is not None:
        return float(row["speedup"])
    if row.get("cost_before") is None or row.get("cost_after") is None:
        return math.nan
    return speedup(float(row["cost_before"]), float(row["cost_after"]))


def _cells(row: Mapping[str, Any], cost_unit: str, columns: Mapping[str, str] = COLUMNS) -> list[str]:
    _, factor = display_unit(str(row.get("cost_unit") or cost_unit))
    cells = []
    for key in columns:
        value = row.get(key)
        if key in ("cost_before", "cost_after") and value is not None:
            cells.append(fmt(float(value) * factor))
        elif key == "speedup":
            s = _speedup(row)
            cells.append(f"{s:.3f}×" if math.isfinite(s) else "-")
        elif key == "seconds" and value is not None:
            cells.append(f"{float(value):.2f}")
        elif key == "gap" and value is not None:
            cells.append(f"{float(value):.2%}")
        else:
            cells.append("-" if value is None or value == "" else str(value))
    return cells
