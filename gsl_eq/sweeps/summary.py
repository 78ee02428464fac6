"""What a sweep gives back: its results lines, as a table, a chart and a page.

    result = gsl_eq.sweep(["nasrnn"], ["default", "tensat"], ["greedy", "saturate"], quick=True)
    print(result)                 # one row per cell: costs, speedup, e-nodes, stop reason, node, error
    result.plot("sweep.png")      # each cell's speedup (matplotlib)
    result.to_html("sweep.html")  # the summary page of gsl_eq.pages, with the cost model and extractor
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cost.model import display_unit
from ..pages import COLUMNS, Page, summary_page
from .cells import Cell

#: The summary page's columns for a sweep: the cost model and extractor after the mode, the error last.
SWEEP_COLUMNS = {**{k: v for k, v in COLUMNS.items() if k in ("model", "rules", "mode")},
                 "cost_model": "cost model", "extractor": "extractor",
                 **{k: v for k, v in COLUMNS.items() if k not in ("model", "rules", "mode")},
                 "error": "error"}


@dataclass
class SweepResult:
    """A sweep's lines, one per cell of its grid in grid order (see
    :func:`~gsl_eq.sweeps.task.run_cell` for the fields): ``ran`` cells ran now, on the Ray nodes
    ``ran_on`` (ids), ``resumed`` were read back from ``path``; ``seconds`` is the sweep's wall time."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    ran: int = 0
    resumed: int = 0
    path: Path | None = None
    seconds: float = 0.0
    ran_on: set[str] = field(default_factory=set)

    @property
    def failed(self) -> list[dict[str, Any]]:
        """The lines of cells that failed (their ``error`` says why)."""
        return [line for line in self.lines if line.get("error")]

    def nodes(self) -> set[str]:
        """The Ray nodes that ran cells (ids)."""
        return {line["node"] for line in self.lines if line.get("node")}

    def table(self) -> Any:
        """The lines as a rich table: costs in the unit tables use (seconds as us), speedup = before / after."""
        from rich.markup import escape
        from rich.table import Table

        t = Table(title=f"gsl_eq sweep: {len(self.lines)} cells ({self.ran} run now, {self.resumed} read back), "
                        f"{len(self.failed)} failed; speedup = before / after (>1 is faster)")
        for column in ("model", "rules", "mode", "cost model", "extractor", "before", "after", "speedup", "e-nodes",
                       "stop", "extraction", "seconds", "node", "error"):
            t.add_column(column, justify="right" if column in ("before", "after", "speedup", "e-nodes", "seconds")
                         else "left", overflow="fold")
        for line in self.lines:
            unit, factor = display_unit(str(line.get("cost_unit") or "s"))
            cost = (lambda key: "-" if line.get(key) is None else f"{line[key] * factor:.6g} {unit}")
            extraction = "-" if line.get("extraction_status") is None else (
                f"{line['extraction_status']}" + ("" if line.get("gap") is None else f", gap {line['gap']:.2%}"))
            model = Path(line["model"]).name if str(line.get("model", "")).endswith(".py") else str(line.get("model"))
            mode = Cell.of_line(line).mode_label()
            t.add_row(escape(model), escape(str(line.get("rules"))), mode, str(line.get("cost_model")),
                      str(line.get("extractor") or "-"), cost("cost_before"), cost("cost_after"),
                      "-" if line.get("speedup") is None else f"{line['speedup']:.3f}x",
                      "-" if line.get("enodes") is None else str(line["enodes"]), str(line.get("stop_reason") or "-"),
                      extraction, "-" if line.get("seconds") is None else f"{line['seconds']:.2f}",
                      str(line.get("node") or "-")[:8], escape(str(line.get("error") or "")))
        return t

    def __str__(self) -> str:
        from rich.console import Console

        console = Console(width=200, force_terminal=False)
        with console.capture() as capture:
            console.print(self.table())
        return capture.get()

    def page(self, title: str = "gsl_eq sweep") -> Page:
        """The summary page of :mod:`gsl_eq.pages` for these lines (with the cost model and extractor)."""
        cost_models = sorted({str(line.get("cost_model")) for line in self.lines})
        intro = (f"{len(self.lines)} cells: {len({line.get('model') for line in self.lines})} models, "
                 f"{len({line.get('rules') for line in self.lines})} rule sets, cost models {', '.join(cost_models)}; "
                 f"{len(self.failed)} failed, on {len(self.nodes()) or 'no'} Ray node(s).")
        rows = [{**line, "model": Path(line["model"]).name if str(line.get("model", "")).endswith(".py")
                 else line.get("model"), "mode": Cell.of_line(line).mode_label()} for line in self.lines]
        return summary_page(rows, title=title, intro=intro, columns=SWEEP_COLUMNS,
                            cost_model=cost_models[0] if len(cost_models) == 1 else None)

    def to_html(self, path: str | Path, title: str = "gsl_eq sweep") -> Path:
        """Write :meth:`page` to ``path``; returns the path."""
        return self.page(title).write(path)

    def plot(self, path: str | Path) -> Path:
        """Save a bar chart of each cell's speedup (before / after; failed cells left out) to ``path``."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        shown = [line for line in self.lines if line.get("speedup") is not None and math.isfinite(line["speedup"])]
        labels = [Cell.of_line(line).label() for line in shown]
        fig, ax = plt.subplots(figsize=(9, 1.2 + 0.3 * max(1, len(shown))))
        colours = ["tab:blue" if line.get("mode") == "saturate" else "tab:orange" for line in shown]
        ax.barh(range(len(shown)), [line["speedup"] for line in shown], color=colours)
        ax.set_yticks(range(len(shown)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.axvline(1.0, color="gray", linestyle="--", linewidth=1)
        ax.set_xlabel("speedup = cost before / cost after (>1 is faster); blue: saturate, orange: greedy")
        ax.set_title(f"gsl_eq sweep: {len(shown)} cells" + (f" ({len(self.failed)} failed, not shown)"
                                                            if self.failed else ""))
        fig.tight_layout()
        path = Path(path)
        fig.savefig(path)
        plt.close(fig)
        return path
