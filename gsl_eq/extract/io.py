"""E-graphs as files, in the JSON format of extraction-gym and the egraph-serialize crate.

The extractors (:mod:`gsl_eq.extract.extractors`) take an e-graph as a mapping from
e-class ids to their e-nodes (:class:`ENodeCost`), whose children are e-class ids.
This module writes such an e-graph to a file and reads it back, so that e-graphs can
be kept as benchmark data, exchanged with extraction-gym
(https://github.com/egraphs-good/extraction-gym), and its data read here.

The format (egraph-serialize's ``EGraph``, serialized with serde)::

    {"nodes": {"<node id>": {"op": "<label>",
                             "children": ["<node id>", ...],   # optional, default []
                             "eclass": "<class id>",
                             "cost": <number>},                # optional, default 1.0
               ...},
     "root_eclasses": ["<class id>", ...],                     # optional, default []
     "class_data": {...}}                                      # optional, ignored here

All ids are strings. An e-node's children are *node* ids: each names some e-node of
the child e-class, and only its ``eclass`` matters (extraction-gym reads children
with ``nid_to_cid``). An e-class is the set of e-nodes with that ``eclass``.

Choices made here, where the format says nothing:

- :func:`save_egraph` writes class ids as ``str(cls)``, node ids as ``f"{cls}.{i}"``
  for the ``i``-th e-node of a class (egraph-serialize's own snippet for egg does the
  same), and each child e-class as the id of its first e-node, ``f"{child}.0"``;
- JSON has no infinity and egraph-serialize's cost is a plain ``f64``, so an infinite
  cost (never extract) is written as the largest finite double, ``1.7976931348623157e308``
  (:data:`INF_COST`), which egraph-serialize reads as a huge cost; :func:`load_egraph`
  reads that number back as ``math.inf``, and also takes ``Infinity`` and the strings
  ``"inf"``/``"infinity"`` (any case, optional ``+``) as infinite costs, as well as
  ``"subsumed": true`` (newer egraph-serialize: egglog's subsumed e-nodes may not be
  extracted);
- :func:`load_egraph` keeps the classes in the order of their first e-node in the
  file, and the e-nodes of a class in file order; other keys (``class_data``,
  ``comment``...) are ignored;
- a path ending in ``.gz`` is gzip-compressed.

Example::

    >>> from gsl_eq.extract.extractors import ENodeCost, tree_extract
    >>> egraph = {"x": [ENodeCost(1.0, ("y", "y"), "mul"), ENodeCost(3.0, op="x2")],
    ...           "y": [ENodeCost(1.0, op="y")]}
    >>> text = dumps_egraph(egraph, ["x"])
    >>> text[:80]
    '{"nodes":{"x.0":{"op":"mul","children":["y.0","y.0"],"eclass":"x","cost":1.0},"x'
    >>> loaded, roots = loads_egraph(text)
    >>> loaded == egraph, roots
    (True, ['x'])
    >>> tree_extract(loaded, roots).cost
    2.0
"""

from __future__ import annotations

import gzip
import json
import math
import os
import sys
import zlib
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ..errors import GslEqError
from .extractors import ENodeCost, ExtractGraph

__all__ = ["INF_COST", "EGraphFileError", "dumps_egraph", "load_egraph", "loads_egraph", "save_egraph"]

INF_COST = sys.float_info.max
"""How an infinite cost is written: the largest finite double (JSON has no infinity)."""

_INF_STRINGS = frozenset({"inf", "+inf", "infinity", "+infinity"})


class EGraphFileError(GslEqError, ValueError):
    """An e-graph file (or string) that is not a valid e-graph; the message names the
    problem and where it is."""


# --- writing ---------------------------------------------------------------------------------


def dumps_egraph(egraph: ExtractGraph, roots: Sequence[Hashable]) -> str:
    """The e-graph and its roots as extraction-gym JSON (compact, one line).

    Parameters
    ----------
    egraph
        Each e-class's e-nodes (:class:`ENodeCost`), by e-class id.
    roots
        The root e-classes.

    Raises
    ------
    ValueError
        An e-class with no e-nodes, a child or root that is not an e-class of the e-graph, or
        two e-classes whose ids have the same ``str``.

    Examples
    --------
    ::

        egraph = {"a": [ENodeCost(1.0, ())], "b": [ENodeCost(2.0, ("a",)), ENodeCost(5.0, ())]}
        egraph2, roots = loads_egraph(dumps_egraph(egraph, ["b"]))
    """
    names: dict[Hashable, str] = {}
    owner: dict[str, Hashable] = {}
    for cls, enodes in egraph.items():
        name = str(cls)
        if name in owner:
            raise ValueError(f"e-classes {owner[name]!r} and {cls!r} would both be written as {name!r}")
        if not enodes:
            raise ValueError(f"e-class {cls!r} has no e-nodes: the format cannot hold an empty e-class")
        names[cls], owner[name] = name, cls

    def name_of(cls: Hashable, what: str) -> str:
        if cls not in names:
            raise ValueError(f"{what} {cls!r}, which is not an e-class of the e-graph")
        return names[cls]

    nodes: dict[str, dict[str, Any]] = {}
    for cls, enodes in egraph.items():
        for index, enode in enumerate(enodes):
            what = f"e-node {index} of e-class {cls!r} has child"
            children = [f"{name_of(child, what)}.0" for child in enode.children]
            cost = INF_COST if enode.cost == math.inf else float(enode.cost)
            nodes[f"{names[cls]}.{index}"] = {"op": enode.op, "children": children, "eclass": names[cls], "cost": cost}
    root_ids = [name_of(root, "the roots name") for root in roots]
    return json.dumps({"nodes": nodes, "root_eclasses": root_ids}, separators=(",", ":"), allow_nan=False)


def save_egraph(egraph: ExtractGraph, roots: Sequence[Hashable], path: str | os.PathLike[str]) -> None:
    """Write the e-graph and its roots to ``path`` as extraction-gym JSON (see
    :func:`dumps_egraph`); gzip-compressed if ``path`` ends in ``.gz``.

    Parameters
    ----------
    egraph, roots
        As in :func:`dumps_egraph`.
    path
        The file to write.

    Raises
    ------
    ValueError
        As :func:`dumps_egraph` does.
    """
    text = dumps_egraph(egraph, roots)
    if os.fspath(path).endswith(".gz"):
        # mtime=0: the same e-graph gives the same bytes
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
            packed.write(text.encode("utf-8"))
    else:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)


# --- reading ---------------------------------------------------------------------------------


def loads_egraph(text: str | bytes, source: str = "<string>") -> tuple[dict[str, list[ENodeCost]], list[str]]:
    """The e-graph (e-class id -> e-nodes, children as e-class ids) and root e-classes
    of extraction-gym JSON.

    Parameters
    ----------
    text
        The JSON, as text or UTF-8 bytes.
    source
        What names the text in error messages.

    Raises
    ------
    EGraphFileError
        A ValueError naming the problem and where: invalid JSON, a duplicate or missing key, a
        value of the wrong type, a child node id that is not in the file, a negative or
        non-numeric cost, a root e-class with no e-nodes.
    """

    def fail(message: str) -> EGraphFileError:
        return EGraphFileError(f"{source}: {message}")

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    raise fail(f"duplicate key {key!r} in a JSON object")
                seen.add(key)
        return obj

    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")  # JSON files are UTF-8 (RFC 8259), as serde_json reads them
        except UnicodeDecodeError as error:
            raise fail(f"not UTF-8 text: {error}") from None
    try:
        data = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as error:
        raise fail(f"not valid JSON: {error}") from None

    if not isinstance(data, dict):
        raise fail(f"the top level must be a JSON object, got {_kind(data)}")
    if "nodes" not in data:
        raise fail("missing key 'nodes'")
    nodes = data["nodes"]
    if not isinstance(nodes, dict):
        raise fail(f"'nodes' must be an object (node id -> node), got {_kind(nodes)}")

    eclass_of: dict[str, str] = {}
    for node_id, node in nodes.items():
        where = f"node {node_id!r}"
        if not isinstance(node, dict):
            raise fail(f"{where} must be an object, got {_kind(node)}")
        for key in ("op", "eclass"):
            if key not in node:
                raise fail(f"{where}: missing key {key!r}")
            if not isinstance(node[key], str):
                raise fail(f"{where}: {key!r} must be a string, got {_kind(node[key])}")
        eclass_of[node_id] = node["eclass"]

    egraph: dict[str, list[ENodeCost]] = {}
    for node_id, node in nodes.items():
        where = f"node {node_id!r}"
        children = node.get("children", [])
        if not isinstance(children, list):
            raise fail(f"{where}: 'children' must be a list of node ids, got {_kind(children)}")
        child_classes = []
        for child in children:
            if not isinstance(child, str):
                raise fail(f"{where}: a child must be a node id (a string), got {_kind(child)}")
            if child not in eclass_of:
                raise fail(f"{where}: child node {child!r} is not in the file")
            child_classes.append(eclass_of[child])
        cost = _read_cost(node.get("cost", 1.0), node.get("subsumed", False), where, fail)
        egraph.setdefault(node["eclass"], []).append(ENodeCost(cost, tuple(child_classes), node["op"]))

    roots = data.get("root_eclasses", [])
    if not isinstance(roots, list):
        raise fail(f"'root_eclasses' must be a list of e-class ids, got {_kind(roots)}")
    for root in roots:
        if not isinstance(root, str):
            raise fail(f"a root e-class must be an e-class id (a string), got {_kind(root)}")
        if root not in egraph:
            raise fail(f"root e-class {root!r} has no e-nodes in the file")
    return egraph, roots


def load_egraph(path: str | os.PathLike[str]) -> tuple[dict[str, list[ENodeCost]], list[str]]:
    """The e-graph and root e-classes in the extraction-gym JSON file at ``path``
    (gzip-compressed if it ends in ``.gz``); see :func:`loads_egraph`.

    Parameters
    ----------
    path
        The file to read.

    Raises
    ------
    EGraphFileError
        A ValueError naming the file, for a file that is not a valid e-graph.
    OSError
        The file cannot be read.

    Examples
    --------
    ::

        save_egraph(egraph, roots, "nasrnn.json.gz")
        egraph, roots = load_egraph("nasrnn.json.gz")
        greedy_dag_extract(egraph, roots).cost
    """
    name = os.fspath(path)
    if name.endswith(".gz"):
        try:
            with gzip.open(path, "rb") as file:
                data = file.read()
        except (gzip.BadGzipFile, EOFError, zlib.error) as error:
            raise EGraphFileError(f"{name}: not a valid gzip file: {error}") from None
    else:
        with open(path, "rb") as file:
            data = file.read()
    return loads_egraph(data, source=name)


def _read_cost(value: Any, subsumed: Any, where: str, fail: Callable[[str], EGraphFileError]) -> float:
    """A node's cost from its JSON value (see the module docstring for infinity)."""
    if not isinstance(subsumed, bool):
        raise fail(f"{where}: 'subsumed' must be true or false, got {_kind(subsumed)}")
    if isinstance(value, str) and value.strip().lower() in _INF_STRINGS:
        cost = math.inf
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            cost = float(value)
        except OverflowError:  # an integer beyond the doubles
            cost = math.inf
    else:
        raise fail(f"{where}: 'cost' must be a number or \"inf\", got {_kind(value)}")
    if math.isnan(cost) or cost < 0:
        raise fail(f"{where}: 'cost' must be >= 0, got {value!r}")
    return math.inf if subsumed or cost >= INF_COST else cost


def _kind(value: Any) -> str:
    """A JSON value, shortly, for error messages."""
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    if type(value) in kinds:
        shown = repr(value) if isinstance(value, (str, bool)) and len(repr(value)) <= 40 else ""
        return f"{kinds[type(value)]} {shown}".rstrip()
    return repr(value)

