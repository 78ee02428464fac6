"""The phase-ordering problem, measured: greedy mode under many rule orders against one saturation.

    table = gsl_eq.compare_orderings(wl, rules.default(), orderings=24, cost="opcount")
    print(table)                     # one row per ordering, and saturate mode
    table.plot("orderings.png")      # cost of each ordering against saturation's
    table.to_html("orderings.html")  # the same as a page, with the table
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from numbers import Integral
from typing import Any, Sequence

import tvm

from .errors import GslEqError
from .cost import CostModel, get_cost_model
from .frontend import Subst
from .run.limits import check_count
from .optimizer import OptimizeReport, optimize
from .cost import cost_unit, display_unit, speedup
from .optimizer.arguments import as_rule_list, as_workload
from .workload import Workload


@dataclass
class OrderingComparison:
    """Greedy mode's report under each ordering (rule names in order) and saturate mode's report;
    costs in ``cost_unit`` (see :func:`~gsl_eq.cost.cost_unit`).

    Attributes
    ----------
    cost_model
        The cost model's name.
    cost_before
        The workload's cost before any rewrite.
    greedy
        Each ordering (its rule names, in order) with greedy mode's report under it.
    saturate
        Saturate mode's report (:func:`compare_orderings` always sets it).
    cost_unit
        The unit of the costs.
    """

    cost_model: str
    cost_before: float
    greedy: list[tuple[list[str], OptimizeReport]] = field(default_factory=list)
    saturate: OptimizeReport | None = None
    cost_unit: str = "s"

    @property
    def best_greedy(self) -> float:
        """The cheapest cost greedy mode reached, over the orderings."""
        return min(r.cost_after for _, r in self.greedy)

    @property
    def worst_greedy(self) -> float:
        """The dearest cost greedy mode reached, over the orderings."""
        return max(r.cost_after for _, r in self.greedy)

    def rows(self) -> list[dict[str, Any]]:
        rows = [{"mode": "greedy", "ordering": " > ".join(order), "cost": r.cost_after, "calls": r.calls_after,
                 "time": r.timings["total"]} for order, r in self.greedy]
        if self.saturate is not None:
            s = self.saturate
            rows.append({"mode": f"saturate ({s.stop_reason})", "ordering": "all at once", "cost": s.cost_after,
                         "calls": s.calls_after, "time": s.timings["total"]})
        return rows

    def table(self) -> Any:
        from rich.table import Table

        unit, factor = display_unit(self.cost_unit)
        t = Table(title=f"rule orderings: costs in {unit}, {self.cost_model} model (before: "
                        f"{self.cost_before * factor:.6g}); speedup = before / after")
        for name in ("mode", "ordering", f"cost ({unit})", "speedup", "op calls", "time (s)"):
            t.add_column(name)
        for row in self.rows():
            t.add_row(row["mode"], row["ordering"], f"{row['cost'] * factor:.6g}",
                      f"{speedup(self.cost_before, row['cost']):.3f}x", str(row["calls"]), f"{row['time']:.2f}")
        return t

    def __str__(self) -> str:
        from rich.console import Console

        console = Console(width=160, force_terminal=False)
        with console.capture() as capture:
            console.print(self.table())
        return capture.get()

    def to_html(self, path: str | Path, model: str = "", rules: str = "") -> Path:
        """Write a self-contained page of this comparison to ``path`` and return it: the speedup of
        each ordering and of saturation as a chart, and their table (the summary page of
        :mod:`gsl_eq.pages.summary`). ``model`` and ``rules`` name what was compared, for the page."""
        from .pages import orderings_page

        return orderings_page(self, model=model, rules=rules).write(path)

    def plot(self, path: str | Path) -> Path:
        """Save a bar chart of each ordering's cost, with saturation's as a line; returns the path."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        unit, factor = display_unit(self.cost_unit)
        costs = sorted(r.cost_after * factor for _, r in self.greedy)
        fig, ax = plt.subplots(figsize=(8, 4))
        ax.bar(range(len(costs)), costs, color="tab:blue", label="greedy, one bar per ordering (sorted)")
        if self.saturate is not None:
            ax.axhline(self.saturate.cost_after * factor, color="tab:red", label="saturate")
        ax.axhline(self.cost_before * factor, color="gray", linestyle="--", label="before")
        ax.set_xlabel("ordering")
        ax.set_ylabel(f"cost ({unit}, {self.cost_model})")
        ax.legend()
        fig.tight_layout()
        path = Path(path)
        fig.savefig(path)
        plt.close(fig)
        return path


def orderings_of(n: int, count: int | Sequence[Sequence[int]], seed: int = 0) -> list[tuple[int, ...]]:
    """Rule orders to try: every permutation of ``n`` rules when there are at most ``count``,
    else ``count`` distinct ones drawn with ``seed``; a list of orders is taken as it is."""
    if isinstance(count, (str, bytes)) or not isinstance(count, (Integral, Sequence)):
        raise OrderingError(f"orderings must be a positive int or a list of rule orders; got {count!r}")
    if not isinstance(count, Integral):
        return [tuple(o) for o in count]
    count = check_count("orderings", count)
    if math.factorial(n) <= count:
        return list(itertools.permutations(range(n)))
    rng, chosen = random.Random(seed), dict.fromkeys([tuple(range(n))])
    while len(chosen) < count:
        order = list(range(n))
        rng.shuffle(order)
        chosen[tuple(order)] = None
    return list(chosen)


class OrderingError(GslEqError, ValueError):
    """An ``orderings`` argument that names no rule order."""


def _indices(order: Sequence[int | str], names: list[str]) -> list[int]:
    """One order given by rule indices or names, as indices; an OrderingError names what is not a rule."""
    if isinstance(order, (str, bytes)) or not isinstance(order, Sequence):
        raise OrderingError(f"an order must be a list of rule indices or names; got {order!r}")
    indices = []
    for rule in order:
        if isinstance(rule, str) and rule in names:
            indices.append(names.index(rule))
        elif isinstance(rule, Integral) and not isinstance(rule, bool) and 0 <= rule < len(names):
            indices.append(int(rule))
        else:
            raise OrderingError(f"order {list(order)!r}: {rule!r} is not one of the {len(names)} rules "
                                f"(an index below {len(names)} or a name: {', '.join(names)})")
    return indices


def compare_orderings(
    workload: Workload | tvm.IRModule,
    rules: Sequence[Subst],
    orderings: int | Sequence[Sequence[int | str]] = 24,
    cost: str | CostModel = "roofline",
    seed: int = 0,
    plot: str | Path | None = None,
    address: str | None = None,
    **saturate_options: Any,
) -> OrderingComparison:
    """Greedy mode under each ordering of ``rules`` and saturate mode once, same rules, same cost model:
    how much greedy mode's result depends on the order its rules run in (the phase-ordering problem).

    Parameters
    ----------
    workload
        The workload (or a Relax module).
    rules
        The rules.
    orderings
        How many orders to try (all permutations when there are few rules, else a sample drawn
        from ``seed``), or the orders themselves (indices or names).
    cost
        The cost model, or its name (:func:`~gsl_eq.cost.get_cost_model`).
    seed
        The seed of the sample of orders.
    plot
        A file to save a chart into too.
    address
        Run the orderings and the saturation as Ray tasks at once, on the cluster at ``address``
        (``"auto"``, ``"ray://HOST:PORT"``, a head's ``"HOST:PORT"``) or on a local instance
        started for the call (``"local"``); see :class:`~gsl_eq.run.cluster.Cluster`. The workload
        and the rules go to the object store once; each task returns its report. The costs are
        those of the serial run. None (the default): one run after another in this process.
    **saturate_options
        Go to :func:`gsl_eq.optimize` for the saturation (limits, extractor).

    Examples
    --------
    ::

        comparison = compare_orderings(wl, rules.default(), orderings=12, plot="orders.png")
    """
    model = get_cost_model(cost)
    rules = as_rule_list(rules)
    names = [r.name for r in rules]
    orders = [_indices(order, names) for order in orderings_of(len(rules), orderings, seed)]
    result = OrderingComparison(model.name, math.nan, cost_unit=cost_unit(model))
    jobs: list[tuple[str, list[int] | None, dict[str, Any]]] = [("greedy", order, {}) for order in orders]
    jobs.append(("saturate", None, saturate_options))
    if address is None:
        reports = [_report(workload, rules, mode, model, order, options) for mode, order, options in jobs]
    else:
        reports = _on_ray(address, workload, rules, model, jobs)
    for order, report in zip(orders, reports):
        result.greedy.append(([names[i] for i in order], report))
    result.saturate = reports[-1]
    result.cost_before = result.saturate.cost_before
    if plot is not None:
        result.plot(plot)
    return result


def _report(workload: Workload | tvm.IRModule, rules: list[Subst], mode: str, cost: CostModel,
            order: list[int] | None, options: dict[str, Any]) -> OptimizeReport:
    """One run of the comparison (in this process or in a Ray task): its report."""
    return optimize(workload, rules, mode=mode, cost=cost, order=order, **options).report


def _on_ray(address: str, workload: Workload | tvm.IRModule, rules: list[Subst], cost: CostModel,
            jobs: list[tuple[str, list[int] | None, dict[str, Any]]]) -> list[OptimizeReport]:
    """The reports of ``jobs`` run as Ray tasks, in the order of ``jobs``; a task's error is raised."""
    from .run.cluster import Cluster

    reports: list[OptimizeReport | None] = [None] * len(jobs)
    with Cluster(address) as cluster:  # an IRModule does not pickle; its workload does (see Workload.__reduce__)
        shared_workload, shared_rules = cluster.put(as_workload(workload)), cluster.put(rules)
        for done in cluster.run(_report, [(shared_workload, shared_rules, mode, cost, order, options)
                                          for mode, order, options in jobs]):
            if done.error is not None:
                mode, order, _ = jobs[done.index]
                raise GslEqError(f"the {mode} run" + (f" under order {order}" if order else "") +
                                 f" failed on the Ray cluster: {done.error}")
            reports[done.index] = done.value
    return [r for r in reports if r is not None]
