"""What :func:`~gsl_eq.optimizer.optimize` returns: the optimized workload and the report of what was done.

    result = optimize(wl)
    result.report.speedup          # cost before / after
    print(result.report)           # a table: costs, phases, iterations, stop reason
    result.to_html("report.html")  # the page of gsl_eq.pages.result
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import tvm

from ..cost import MEASURING, CostModel, display_unit, speedup
from ..graph import Node
from ..workload import Workload

if TYPE_CHECKING:
    from ..proof import Proof


@dataclass
class OptimizeReport:
    """What :func:`~gsl_eq.optimizer.optimize` did, with costs in ``cost_unit`` under ``cost_model`` (lower is better).

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
    #: With ``select="measured"``: each candidate's label (the input, TVM's own passes' result, the
    #: graphs found), median seconds, round times, cost, whether it was returned, and for one that was
    #: timed against another (``confirmed``: a list of ``{"against": label, "second draw": ...,
    #: "default build": ...}``) both sides' seconds and rounds under those builds.
    candidates: list[dict[str, Any]] = field(default_factory=list)
    #: The graphs that failed the final check (``"label: reason"``), in the order they were tried; each
    #: a :class:`Fallback`, whose ``proof`` shows the steps that made it.
    fallbacks: list[str] = field(default_factory=list)
    #: With ``search="restart"``: each round's number, e-nodes, iterations, stop reason, extracted cost and
    #: extraction status, in order (:mod:`gsl_eq.optimizer.guided`).
    rounds: list[dict[str, Any]] = field(default_factory=list)

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


class Fallback(str):
    """A graph that failed optimize()'s check, as the report names it (``"label: reason"``), with the
    proof of how the search made it (made when first read; None where none can be made), so the
    step that went wrong can be found: ``report.fallbacks[0].proof.check()``."""

    def __new__(cls, text: str, prove: Callable[[], "Proof"] | None = None) -> "Fallback":
        entry = super().__new__(cls, text)
        entry._prove, entry._proof = prove, None
        return entry

    def __reduce__(self) -> tuple[type, tuple[str]]:  # copied, pickled or made plain data: the text alone
        return str, (str(self),)

    def __deepcopy__(self, memo: dict) -> str:
        return str(self)

    @property
    def proof(self) -> "Proof | None":
        if self._proof is None and self._prove is not None:
            self._proof = self._prove()
        return self._proof


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
    prove: Callable[[], "Proof"] | None = field(default=None, repr=False, compare=False)
    _proof: "Proof | None" = field(default=None, init=False, repr=False, compare=False)

    @property
    def mod(self) -> tvm.IRModule:
        return self.workload.mod

    @property
    def proof(self) -> "Proof | None":
        """The steps from the input optimize() was given to :attr:`workload`, each a rule's rewrite, a
        merge or a fold (:class:`gsl_eq.proof.Proof`): recorded by greedy mode, found afterwards
        toward the extracted graph in saturate mode; made when first read."""
        if self._proof is None and self.prove is not None:
            self._proof = self.prove()
        return self._proof

    def to_html(self, path: str | Path, title: str | None = None, max_nodes: int | None = 300) -> Path:
        """Write a self-contained page of this optimization to ``path`` and return it: the input and
        the result drawn side by side with the changed nodes marked, the rules used, the cost
        of each op kind before and after, the e-graph's growth, the extraction and the timings
        (see :mod:`gsl_eq.pages.result`). Graphs larger than ``max_nodes`` are drawn reduced:
        repeated blocks folded, then only what lies near a change (None: every node)."""
        from ..pages import result_page

        return result_page(self, title=title, max_nodes=max_nodes).write(path)


def _fmt_gap(gap: float | None) -> str:
    return "n/a" if gap is None else f"{gap:.2%}"


def _fmt_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in sorted(counts.items()) if v) or "none"
