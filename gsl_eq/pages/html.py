"""The parts every gsl_eq page is made of: a self-contained HTML document, tables, and charts
drawn as inline SVG.

A page loads nothing: its style is inline, its charts and drawings are SVG elements in
the document, and hover texts are SVG ``<title>`` elements, so it needs no script. It
opens the same from a file, a mail attachment or a machine with no network.
"""

from __future__ import annotations

import datetime
import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

__all__ = ["Page", "bar_chart", "cards", "esc", "fmt", "inline_svg", "table"]

STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0; color: #212529;
       background: #f8f9fa; }
header { background: #1c2833; color: #f8f9fa; padding: 14px 24px; }
header h1 { margin: 0; font-size: 20px; font-weight: 600; }
header p { margin: 4px 0 0; font-size: 13px; color: #ced4da; }
main { padding: 12px 24px 32px; }
section { background: #fff; border: 1px solid #dee2e6; border-radius: 6px; padding: 12px 16px; margin: 12px 0; }
section h2 { font-size: 16px; margin: 0 0 8px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; }
.card { background: #fff; border: 1px solid #dee2e6; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.card b { display: block; font-size: 18px; }
.card span { font-size: 12px; color: #495057; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.panel { border: 1px solid #dee2e6; border-radius: 4px; overflow: auto; max-height: 78vh; background: #fff; }
.panel h3 { position: sticky; top: 0; left: 0; margin: 0; padding: 6px 10px; font-size: 14px;
            background: #f1f3f5; border-bottom: 1px solid #dee2e6; }
.panel svg { display: block; margin: 6px auto; }
.caption { font-size: 12px; color: #495057; margin: 4px 10px 8px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border-bottom: 1px solid #e9ecef; padding: 3px 10px; text-align: left; vertical-align: top; }
th { background: #f1f3f5; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 12px; height: 12px; border: 2px solid; border-radius: 3px;
            vertical-align: -3px; margin-right: 4px; }
.note { font-size: 13px; color: #495057; }
.muted { color: #868e96; }
ol.proof { font-size: 13px; margin: 6px 0; padding-left: 36px; }
g.node:target polygon, g.node:target ellipse, g.node:target path { stroke: #d6336c; stroke-width: 4px; }
"""


def esc(value: Any) -> str:
    """``value`` as text safe inside HTML or SVG."""
    return html.escape(str(value), quote=True)


def fmt(value: float | None, digits: int = 4) -> str:
    """A number as tables show it: ``digits`` significant digits, "-" for none or not a number."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "∞"
    if abs(value) >= 10 ** digits:
        return f"{value:.0f}"
    return f"{value:.{digits}g}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[int] = (),
          cls: str = "") -> str:
    """An HTML table; cells are escaped, the columns at ``numeric`` positions right-aligned; no header
    row when every header is empty."""
    right = set(numeric)
    head = "".join(f'<th{" class=num" if i in right else ""}>{esc(h)}</th>' for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td{" class=num" if i in right else ""}>{esc(c)}</td>'
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    thead = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    return f'<table class="{esc(cls)}">{thead}<tbody>{body}</tbody></table>'


def bar_chart(groups: Sequence[tuple[str, Sequence[float]]], series: Sequence[str], unit: str,
              colours: Sequence[str] = ("#adb5bd", "#1971c2", "#e8590c", "#2f9e44"), width: int = 720,
              cls: str = "chart") -> str:
    """A horizontal bar chart as inline SVG: one group of bars per ``(label, values)`` in
    ``groups``, one bar per series (named in ``series``, in a legend), lengths to scale;
    each group is a ``<g class="bar-group">`` whose ``<title>`` gives its values in ``unit``."""
    bar, gap, left, right = 12, 10, 190, 90
    top = 22
    height = top + len(groups) * (bar * len(series) + gap) + 6
    largest = max((v for _, values in groups for v in values if v == v and v != math.inf), default=0.0) or 1.0
    scale = (width - left - right) / largest
    parts = [f'<svg class="{esc(cls)}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11">']
    x = left
    for name, colour in zip(series, colours):
        parts.append(f'<rect x="{x}" y="4" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{x + 14}" y="13">{esc(name)}</text>')
        x += 14 + 7 * len(name) + 20
    y = top
    for label, values in groups:
        hover = f"{label}: " + ", ".join(f"{s} {fmt(v)} {unit}" for s, v in zip(series, values))
        parts.append(f'<g class="bar-group" data-label="{esc(label)}"><title>{esc(hover)}</title>')
        middle = y + bar * len(series) / 2 + 4
        parts.append(f'<text x="{left - 6}" y="{middle:.1f}" text-anchor="end">{esc(label[:30])}</text>')
        for k, (value, colour) in enumerate(zip(values, colours)):
            length = max(0.0, value * scale) if value == value and value != math.inf else 0.0
            parts.append(f'<rect class="bar" x="{left}" y="{y + k * bar}" width="{length:.1f}" height="{bar - 2}" '
                         f'fill="{colour}"/><text x="{left + length + 4:.1f}" y="{y + k * bar + bar - 3}" '
                         f'fill="#495057">{esc(fmt(value, 3))}</text>')
        parts.append("</g>")
        y += bar * len(series) + gap
    parts.append("</svg>")
    return "".join(parts)


@dataclass
class Page:
    """A self-contained HTML page: a title, a line under it, and sections of HTML."""

    title: str
    subtitle: str = ""
    sections: list[tuple[str, str]] = field(default_factory=list)

    def add(self, heading: str, *parts: str) -> "Page":
        """Append a section with ``heading`` and the HTML ``parts``; returns the page."""
        self.sections.append((heading, "\n".join(parts)))
        return self

    def html(self) -> str:
        """The whole document."""
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        body = "\n".join(f'<section><h2>{esc(h)}</h2>\n{content}\n</section>' if h else
                         f"<section>{content}</section>" for h, content in self.sections)
        return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                f"<title>{esc(self.title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
                f"<header><h1>{esc(self.title)}</h1><p>{esc(self.subtitle)} · made by gsl_eq, {stamp}</p></header>\n"
                f"<main>\n{body}\n</main>\n</body>\n</html>\n")

    def write(self, path: str | Path) -> Path:
        """Write the document to ``path`` (UTF-8); returns the path."""
        path = Path(path)
        path.write_text(self.html(), encoding="utf-8")
        return path


def cards(items: Sequence[tuple[str, str]]) -> str:
    """A row of figures, each a big value over a small label."""
    return '<div class="cards">' + "".join(f'<div class="card"><b>{esc(v)}</b><span>{esc(k)}</span></div>'
                                           for k, v in items) + "</div>"


def inline_svg(svg: str) -> str:
    """An SVG document as an element of a page: without its XML declaration, doctype and comments."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg
