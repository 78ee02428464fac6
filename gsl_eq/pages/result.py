"""The page of one optimization: what changed in the model, where, at what cost, and how.

    result = optimize(wl, rules.default(), mode="saturate")
    result.to_html("report.html")          # calls result_page(result).write(...)

The input and the result are drawn side by side (:mod:`gsl_eq.graph.drawing`), the nodes the
rewrite made or rewired marked in the result and those it removed marked in the input
(:mod:`gsl_eq.graph.diff`); hovering a node gives its op, shape and cost. Then the
rules the result uses and what each did, the proof's steps (:mod:`gsl_eq.proof`), each rule
step linked to the nodes it made in the result's drawing, the cost of each op kind before and
after under the run's cost model, the e-graph's growth per iteration and why it stopped
(saturate mode), the extraction and the time of each phase.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from ..graph.drawing import MARKS, Drawing, draw
from ..cost.model import CostModel, display_unit, get_cost_model, speedup
from ..graph import Graph, Kind, Node
from ..graph.diff import GraphDiff, compare
from .html import Page, bar_chart, cards, esc, fmt, inline_svg, table

if TYPE_CHECKING:
    from ..proof import Proof

__all__ = ["MAX_NODES", "MAX_STEPS", "Optimized", "op_costs", "result_page"]


class Optimized(Protocol):
    """What a result page reads: an :class:`~gsl_eq.optimizer.OptimizeResult` (pages come before the
    optimizer, so they name its shape, not its class). ``input``, ``cost``, ``origins`` and ``proof``
    are read where present."""

    report: Any  # an OptimizeReport
    workload: Any  # the Workload returned
    proof: "Proof | None"  # made when first read

#: The most proof steps a page lists.
MAX_STEPS = 200

#: Graphs with more nodes than this are drawn reduced: repeated blocks folded, then only the
#: changed neighbourhoods (see :mod:`gsl_eq.graph.drawing`).
MAX_NODES = 300


def op_costs(graph: Graph, model: CostModel) -> dict[str, tuple[int, float]] | None:
    """Per op kind (the op's name without ``relax.``): how many calls ``graph`` has and what they
    cost under ``model``, in the model's unit; None when the model prices whole graphs only
    (it fuses ops into kernels, as ``"tvm"`` does)."""
    if callable(getattr(model, "graph_cost", None)):
        return None
    out: dict[str, tuple[int, float]] = {}
    for node in graph.rpo():
        if node.kind is Kind.CALL:
            count, total = out.get(_kind(node), (0, 0.0))
            out[_kind(node)] = (count + 1, total + _price(node, model))
    return out


def result_page(result: Optimized, title: str | None = None, cost: CostModel | str | None = None,
                max_nodes: int | None = MAX_NODES) -> Page:
    """The page of ``result`` (see the module's docstring). Costs are priced with ``cost``, by
    default the model the run used. Graphs larger than ``max_nodes`` are drawn reduced (None:
    every node). Nothing in ``result`` is changed."""
    report = result.report
    before = getattr(result, "input", None)
    after = result.workload
    model = _model(cost if cost is not None else getattr(result, "cost", None), report.cost_model)
    unit, factor = display_unit(report.cost_unit)
    diff = compare(before.graph, after.graph) if before is not None else None
    origins: Mapping[Node, frozenset[str]] = getattr(result, "origins", None) or {}
    page = Page(title or f"gsl_eq optimize: {report.mode} mode",
                f"{report.cost_model} cost model, costs in {unit}; speedup = before / after")
    page.add("", _cards(report, unit, factor, diff))
    parts, drawing = _drawings(before, after, diff, model, unit, factor, origins, max_nodes)
    page.add("The model before and after", *parts)
    page.add("Rules", *_rules(report, origins, diff))
    try:
        proof = getattr(result, "proof", None)
    except Exception:  # a proof that cannot be derived leaves its section out
        proof = None
    if proof is not None:
        page.add("Proof", *_proof(proof, after.graph, drawing))
    page.add("Cost per op kind", *_costs(before, after, model, report, unit, factor))
    if report.mode == "saturate":
        page.add("The e-graph's growth", *_growth(report))
        page.add("Extraction", _extraction(report, unit, factor))
    page.add("Time", *_timings(report))
    if report.notes or report.fallbacks:
        page.add("Notes", "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in
                                           [*(f"failed the check: {f}" for f in report.fallbacks), *report.notes])
                 + "</ul>")
    return page


# --------------------------------------------------------------------------- sections


def _cards(report: Any, unit: str, factor: float, diff: GraphDiff | None) -> str:
    items = [("cost before → after (" + unit + ")",
              f"{fmt(report.cost_before * factor)} → {fmt(report.cost_after * factor)}"),
             ("speedup (before / after)", f"{speedup(report.cost_before, report.cost_after):.3f}×"),
             ("op calls before → after", f"{report.calls_before} → {report.calls_after}"),
             ("mode", report.mode)]
    if report.stop_reason:
        items.append(("stopped by", str(report.stop_reason)))
    if diff is not None:
        items.append(("nodes new / rewired / removed", f"{len(diff.new)} / {len(diff.rewired)} / {len(diff.removed)}"))
    if "total" in report.timings:
        items.append(("seconds in all", f"{report.timings['total']:.2f}"))
    return cards(items)


def _drawings(before: Any, after: Any, diff: GraphDiff | None, model: CostModel | None, unit: str, factor: float,
              origins: Mapping[Node, frozenset[str]], max_nodes: int | None) -> tuple[list[str], Drawing]:
    legend = '<p class="legend">' + "".join(
        f'<span><i style="background:{fill};border-color:{border}"></i>{esc(mark)}: {esc(text)}</span>'
        for mark, (fill, border, text) in MARKS.items()) + \
        '<span><i style="background:#e7f5ff;border-color:#1971c2"></i>folded: repeated blocks</span></p>'
    parts = [legend]
    if diff is None:
        parts.append('<p class="note">The result does not keep its input (it was not made by optimize()): '
                     "only the result is drawn, with nothing marked.</p>")
    elif not (diff.new or diff.rewired or diff.removed):
        parts.append('<p class="note">Nothing changed: the result is the input.</p>')
    else:
        parts.append(f'<p class="note">Found by comparing the two graphs node by node ({esc(diff.summary())}): '
                     "a node is new when nothing in the input computes it the same way, rewired when it reads "
                     "other inputs than its counterpart. Hover a node for its op, shape and cost.</p>")
    panels = []
    if before is not None:
        marks = {n: "removed" for n in diff.removed} if diff is not None else {}
        drawing = draw(before.graph, before.params, marks=marks, notes=_notes(before.graph, model, unit, factor, {}),
                       max_nodes=max_nodes, name="input", prefix="in")
        panels.append(_panel("input", drawing))
    marks = {n: m for n in after.graph.rpo() if (m := diff.mark(n)) is not None} if diff is not None else {}
    drawing = draw(after.graph, after.params, marks=marks, notes=_notes(after.graph, model, unit, factor, origins),
                   max_nodes=max_nodes, name="result", prefix="out")
    panels.append(_panel("result", drawing))
    parts.append(f'<div class="pair">{"".join(panels)}</div>')
    return parts, drawing


def _panel(name: str, drawing: Drawing) -> str:
    return (f'<div class="panel" id="panel-{name}"><h3>{esc(name)}</h3>'
            f'<p class="caption">{esc(drawing.caption())}</p>{inline_svg(drawing.svg())}</div>')


def _rules(report: Any, origins: Mapping[Node, frozenset[str]], diff: GraphDiff | None) -> list[str]:
    made = Counter(rule for node, rules in origins.items() for rule in rules)
    rejected = {rule: sum(reasons.values()) for rule, reasons in report.rejected.items()}
    done = "e-graph applications" if report.mode == "saturate" else "rewrites done"
    used = report.rules_used
    names = [r for r in report.rules if r in report.applications or r in (used or ()) or r in rejected]
    rows = [(r, "not known" if used is None else "yes" if r in used else "no", report.applications.get(r, 0),
             made.get(r, "-") if report.mode == "greedy" else "-", rejected.get(r, 0)) for r in names]
    quiet = len(report.rules) - len(names)
    parts = [table(["rule", "in the result", done, "result nodes it made", "matches rejected"], rows,
                   numeric=(2, 3, 4), cls="rules")]
    if quiet:
        parts.append(f'<p class="note">{quiet} other rule{"s" if quiet > 1 else ""} of the run never matched.</p>')
    if report.input_returned:
        parts.append('<p class="note">The input is returned: no rewrite is used '
                     f"({esc('; '.join(report.notes[-1:]))}).</p>")
    elif report.mode == "greedy":
        parts.append('<p class="note">Where: each node a rule made carries the rule\'s name in its hover text '
                     "(greedy mode's ledger follows each rewrite to the final graph).</p>")
    else:
        parts.append('<p class="note">Where: saturate mode knows which rules the extracted graph relies on '
                     "(\"in the result\"), not which node each rule built; the marked nodes come from comparing "
                     "the input and the result.</p>")
    return parts


def _proof(proof: "Proof", final: Graph, drawing: Drawing) -> list[str]:
    steps = proof.steps[:MAX_STEPS]
    ends = _ends_of_made(proof, final, len(steps))
    boxes = {node: _box_id(drawing, i) for i, node in enumerate(final.rpo())}
    items = []
    for k, step in enumerate(steps):
        if step.kind != "rule":
            items.append(f"<li>{esc(step.kind)}: " + ("computations done twice merged" if step.kind == "merge" else
                                                     "parameters no longer read dropped, parameter computations "
                                                     "folded") + "</li>")
            continue
        order, links, gone = step.after.rpo(), [], 0
        for j, i in enumerate(step.made):
            end = ends.get((k, j))
            gone += end is None
            box = boxes.get(end)
            what = esc(_what(order[i]))
            links.append(f'<a href="#{box}">{what}</a>' if box else what if end is None else f"{what} (not drawn)")
        made = ", made " + ", ".join(links) if links else ", made no node"
        if gone:
            made += f" ({'' if gone == len(links) else f'{gone} of {len(links)} '}rewritten by a later step)"
        items.append(f"<li>rule <b>{esc(step.name)}</b> ({esc(step.where)}){made}</li>")
    parts = [f'<p class="note">{esc(proof.summary())}. Each rule step links the nodes it made that are in the '
             "result to the result's drawing.</p>", '<ol class="proof">' + "".join(items) + "</ol>"]
    if len(proof.steps) > len(steps):
        parts.append(f'<p class="note">{len(proof.steps) - len(steps)} more steps not listed.</p>')
    return parts


def _costs(before: Any, after: Any, model: CostModel | None, report: Any, unit: str, factor: float) -> list[str]:
    graphs = [("before", before.graph)] if before is not None else []
    graphs.append(("after", after.graph))
    priced = [op_costs(g, model) for _, g in graphs] if model is not None else [None]
    if any(p is None for p in priced):
        counts = [Counter(_kind(n) for n in g.rpo() if n.kind is Kind.CALL) for _, g in graphs]
        kinds = sorted(set().union(*counts), key=lambda k: (-max(c.get(k, 0) for c in counts), k))
        groups = [(k, [float(c.get(k, 0)) for c in counts]) for k in kinds]
        why = ("no cost model to price single ops" if model is None else
               f"the {model.name} cost model prices whole graphs (fused kernels), not single ops")
        return [f'<p class="note">Op calls per kind: {esc(why)}.</p>',
                bar_chart(groups, [name for name, _ in graphs], "calls")]
    kinds = sorted(set().union(*priced), key=lambda k: (-max(p.get(k, (0, 0.0))[1] for p in priced), k))
    groups = [(k, [p.get(k, (0, 0.0))[1] * factor for p in priced]) for k in kinds]
    rows = [(k, *(p.get(k, (0, 0.0))[0] for p in priced), *(fmt(p.get(k, (0, 0.0))[1] * factor) for p in priced))
            for k in kinds]
    names = [name for name, _ in graphs]
    totals = [sum(c for _, c in p.values()) * factor for p in priced]
    note = (f'<p class="note">Each op kind\'s calls priced one by one with the {esc(model.name)} cost model, in '
            f"{esc(unit)} (total {' → '.join(fmt(t) for t in totals)}; the run's costs count computations on "
            "parameters only as free, as they are folded before deployment).</p>")
    return [note, bar_chart(groups, names, unit, cls="chart op-costs"),
            table(["op", *(f"calls {n}" for n in names), *(f"{n} ({unit})" for n in names)], rows,
                  numeric=range(1, 1 + 2 * len(names)), cls="op-costs")]


def _growth(report: Any) -> list[str]:
    rows = []
    for k, it in enumerate(report.iterations, start=1):
        rows.append((k, it.get("enodes", "-"), sum(it.get("matches", {}).values()), sum(it.get("applied", {}).values()),
                     f"{it.get('total_time', 0.0):.3f}"))
    stop = (f'<p class="note">Saturation stopped by <b>{esc(report.stop_reason)}</b> after '
            f"{len(report.iterations)} iteration{'s' if len(report.iterations) != 1 else ''}: "
            f"{fmt(report.enodes)} e-nodes in {fmt(report.eclasses)} e-classes.</p>")
    if not rows:
        return [stop]
    chart = bar_chart([(f"iteration {r[0]}", [float(r[1]) if r[1] != "-" else 0.0]) for r in rows], ["e-nodes"],
                      "e-nodes", colours=("#1971c2",), cls="chart growth")
    return [stop, chart, table(["iteration", "e-nodes", "matches", "applied", "seconds"], rows,
                               numeric=(0, 1, 2, 3, 4), cls="iterations")]


def _extraction(report: Any, unit: str, factor: float) -> str:
    rows = [("extractor", report.extractor_label()), ("status", report.extraction_status or "-"),
            ("gap", "n/a" if report.gap is None else f"{report.gap:.2%}")]
    if report.extracted_cost is not None:
        rows.append((f"extracted cost ({unit})", fmt(report.extracted_cost * factor)))
    if report.greedy_dag_cost is not None:
        rows.append((f"greedy DAG extraction's cost ({unit})", fmt(report.greedy_dag_cost * factor)))
    if report.left_out:
        rows.append(("e-nodes left out as closing cycles", report.left_out))
    if report.time_limit is not None and report.extraction_budget is not None:
        rows.append(("time budget", report.budget()))
    return table(["", ""], rows, cls="extraction")


def _timings(report: Any) -> list[str]:
    phases = [(k, v) for k, v in report.timings.items() if k != "total"]
    parts = []
    if phases:
        parts.append(bar_chart([(k, [v]) for k, v in phases], ["seconds"], "s", colours=("#2f9e44",),
                               cls="chart timings"))
    parts.append(table(["phase", "seconds"], [(k, f"{v:.3f}") for k, v in report.timings.items()], numeric=(1,),
                       cls="timings"))
    return parts


# --------------------------------------------------------------------------- helpers


def _model(cost: CostModel | str | None, name: str) -> CostModel | None:
    if cost is not None:
        return get_cost_model(cost)
    try:
        return get_cost_model(name)
    except ValueError:  # a model of the user's own, not kept with the result
        return None


def _kind(node: Node) -> str:
    return str(node.op).removeprefix("relax.")


def _price(node: Node, model: CostModel) -> float:
    return float(model(node.op, node.attrs, [i.type for i in node.inputs], node.type))


def _what(node: Node) -> str:
    return _kind(node) if node.kind is Kind.CALL else node.kind.value


def _box_id(drawing: Drawing, position: int, prefix: str = "out") -> str | None:
    """The id of the box that draws the node at ``position`` of the drawn graph's reverse post-order."""
    box = f"{prefix}{position}"
    for k, fold in enumerate(drawing.folds):
        if fold.start + fold.period <= position < fold.start + fold.period * fold.copies:
            box = f"{prefix}f{k}"
    return box if box in drawing.boxes else None


def _ends_of_made(proof: "Proof", final: Graph, count: int) -> dict[tuple[int, int], Node]:
    """The node of ``final`` that the ``j``-th node made by step ``k`` became, by ``(k, j)``, for the
    first ``count`` steps; a node a later step rewrote away has none."""
    ends: dict[tuple[int, int], Node] = {}
    last = proof.start.graph
    for k, (before, step) in enumerate(proof.befores()):
        if ends:
            made, old = step.after.rpo(), before.rpo()
            ends = _carry(ends, before, step.after, {made[i] for i in step.made}, {old[i] for i in step.at})
        if k < count:
            ends.update({(k, j): step.after.rpo()[i] for j, i in enumerate(step.made)})
        last = step.after
    return _carry(ends, last, final) if ends else ends


def _carry(ends: dict[Any, Node], old: Graph, new: Graph, made: set[Node] = frozenset(),
           replaced: set[Node] = frozenset()) -> dict[Any, Node]:
    """``ends`` moved from ``old``'s nodes to ``new``'s: a node kept as it is, or the copy ``new`` reads in
    its place, paired from the outputs down (a computation folded pairs with its parameter); nodes
    ``replaced`` by a rewrite, or paired with the nodes it ``made``, have none."""
    kept, pairs = set(new.rpo()), {}
    stack = list(zip(old.outputs, new.outputs))
    while stack:
        o, n = stack.pop()
        if o is n or o in pairs or o in replaced or n in made:
            continue
        folded = n.kind is Kind.VAR and o.kind is not Kind.VAR
        if folded or ((o.kind, o.op, len(o.inputs)) == (n.kind, n.op, len(n.inputs))):
            pairs[o] = n
            if not folded:
                stack.extend(zip(o.inputs, n.inputs))
    return {key: node if node in kept else pairs[node] for key, node in ends.items() if node in kept or node in pairs}


def _notes(graph: Graph, model: CostModel | None, unit: str, factor: float,
           origins: Mapping[Node, frozenset[str]]) -> dict[Node, str]:
    """Hover lines per node: its cost alone under ``model`` and the rules that made it."""
    notes: dict[Node, str] = {}
    single = model is not None and not callable(getattr(model, "graph_cost", None))
    for node in graph.rpo():
        lines = []
        if single and node.kind is Kind.CALL:
            lines.append(f"cost {fmt(_price(node, model) * factor)} {unit} ({model.name})")
        if node in origins:
            lines.append("made by " + ", ".join(sorted(origins[node])))
        if lines:
            notes[node] = "\n".join(lines)
    return notes
