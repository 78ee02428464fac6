"""E-graph files in extraction-gym's JSON format: round trips, hand-written files, errors."""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gsl_eq.extract.extractors import ENodeCost as N, ExtractionError, dag_cost, greedy_dag_extract, tree_extract
from gsl_eq.extract.io import INF_COST, EGraphFileError, dumps_egraph, load_egraph, loads_egraph, save_egraph

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "extraction_gym"

# X = p(A, B) | 10, A = q(S) | 7, B = r(S): the tree pays S twice (11 > 10), the DAG once (7)
DIAMOND = {
    "X": [N(1, ("A", "B"), "p"), N(10, op="x")],
    "A": [N(1, ("S",), "q"), N(7, op="a")],
    "B": [N(1, ("S",), "r")],
    "S": [N(4, op="s")],
}

# integer class ids, a cycle 0 -> 1 -> 0 through cheap e-nodes, a self-loop, an infinite e-node
CYCLIC = {
    0: [N(0, (1,), "f"), N(5, op="leaf0")],
    1: [N(0, (0,), "g"), N(10, op="leaf1"), N(1, (1, 2), "self")],
    2: [N(math.inf, op="never"), N(2, op="two")],
}


def renamed(egraph, roots):
    """The e-graph with class ids as save_egraph writes them, str(cls)."""
    return {str(c): [N(n.cost, tuple(map(str, n.children)), n.op) for n in nodes] for c, nodes in egraph.items()}, [
        str(r) for r in roots
    ]


def costs(egraph, roots):
    """The DAG costs of the tree and greedy extractors' choices (None where there is no term)."""
    result = []
    for extract in (tree_extract, greedy_dag_extract):
        try:
            extraction = extract(egraph, roots)
        except ExtractionError:
            result.append(None)
        else:
            assert dag_cost(egraph, roots, extraction.choice) == extraction.cost
            result.append(extraction.cost)
    return result


def assert_round_trip(egraph, roots, path):
    save_egraph(egraph, roots, path)
    loaded, loaded_roots = load_egraph(path)
    assert (loaded, loaded_roots) == renamed(egraph, roots)
    assert list(loaded) == [str(c) for c in egraph]  # class order kept
    assert costs(loaded, loaded_roots) == costs(egraph, roots)


# --- round trips -----------------------------------------------------------------------------


def test_round_trip(tmp_path):
    assert_round_trip(DIAMOND, ["X"], tmp_path / "diamond.json")
    assert costs(DIAMOND, ["X"]) == [10.0, 7.0]
    data = json.loads((tmp_path / "diamond.json").read_text())
    assert data["root_eclasses"] == ["X"]
    assert data["nodes"]["X.0"] == {"op": "p", "children": ["A.0", "B.0"], "eclass": "X", "cost": 1.0}
    assert data["nodes"]["A.1"] == {"op": "a", "children": [], "eclass": "A", "cost": 7.0}


def test_round_trip_of_a_cyclic_egraph_with_infinite_cost(tmp_path):
    assert_round_trip(CYCLIC, [1, 0], tmp_path / "cyclic.json")
    assert costs(CYCLIC, [1, 0]) == [5.0, 5.0]


def test_infinite_cost_is_written_as_the_largest_double(tmp_path):
    save_egraph(CYCLIC, [0], tmp_path / "g.json")
    text = (tmp_path / "g.json").read_text()
    data = json.loads(text, parse_constant=pytest.fail)  # strict JSON: no Infinity or NaN
    assert data["nodes"]["2.0"]["cost"] == INF_COST
    assert "1.7976931348623157e+308" in text
    assert load_egraph(tmp_path / "g.json")[0]["2"][0].cost == math.inf


def test_gzip_round_trip(tmp_path):
    path = tmp_path / "cyclic.json.gz"
    assert_round_trip(CYCLIC, [2], path)
    packed = path.read_bytes()
    assert packed[:2] == b"\x1f\x8b"
    assert json.loads(gzip.decompress(packed)) == json.loads(dumps_egraph(CYCLIC, [2]))
    save_egraph(CYCLIC, [2], path)
    assert path.read_bytes() == packed  # no time stamp: same e-graph, same bytes


def test_empty_egraph_and_no_roots(tmp_path):
    assert_round_trip({}, [], tmp_path / "empty.json")
    assert loads_egraph('{"nodes": {}}') == ({}, [])


# e-graphs of 1-5 classes (ints) of 1-3 e-nodes, with any children (cycles included)
@st.composite
def egraphs(draw):
    n = draw(st.integers(1, 5))
    cost = st.sampled_from([0.0, 1.0, 2.5, 0.1, 1e-9, 3e12, math.inf])
    egraph = {
        cls: draw(
            st.lists(
                st.builds(N, cost, st.lists(st.integers(0, n - 1), max_size=3).map(tuple), st.text(max_size=5)),
                min_size=1,
                max_size=3,
            )
        )
        for cls in range(n)
    }
    roots = draw(st.lists(st.integers(0, n - 1), max_size=3))
    return egraph, roots


@settings(max_examples=150, deadline=None)
@given(egraphs())
def test_random_round_trips(tmp_path_factory, graph):
    egraph, roots = graph
    assert_round_trip(egraph, roots, tmp_path_factory.mktemp("random") / "g.json.gz")
    assert loads_egraph(dumps_egraph(egraph, roots)) == renamed(egraph, roots)


# --- files written elsewhere -----------------------------------------------------------------

# children name non-first e-nodes of their classes; "b.x" has neither cost (1) nor children;
# the ids are not "<class>.<i>"; "c.big" is infinite three ways; other keys are ignored
GYM = """{
  "nodes": {
    "root": {"op": "add", "children": ["b.x", "c.cheap"], "eclass": "a", "cost": 2},
    "b.leaf": {"op": "b0", "children": [], "eclass": "b", "cost": 0.5},
    "b.x": {"op": "b1", "eclass": "b"},
    "c.big": {"op": "c0", "children": [], "eclass": "c", "cost": "inf"},
    "c.huge": {"op": "c1", "children": [], "eclass": "c", "cost": Infinity},
    "c.sub": {"op": "c2", "children": [], "eclass": "c", "cost": 0.0, "subsumed": true},
    "c.cheap": {"op": "c3", "children": ["b.leaf", "b.leaf"], "eclass": "c", "cost": 3.0, "subsumed": false}
  },
  "root_eclasses": ["a"],
  "class_data": {"a": {"type": "T"}},
  "comment": "# hand-written"
}"""


def test_load_an_extraction_gym_file(tmp_path):
    path = tmp_path / "gym.json"
    path.write_text(GYM)
    egraph, roots = load_egraph(path)
    assert roots == ["a"]
    assert egraph == {
        "a": [N(2.0, ("b", "c"), "add")],
        "b": [N(0.5, op="b0"), N(1.0, op="b1")],
        "c": [N(math.inf, op="c0"), N(math.inf, op="c1"), N(math.inf, op="c2"), N(3.0, ("b", "b"), "c3")],
    }
    assert costs(egraph, roots) == [5.5, 5.5]
    assert loads_egraph(GYM.encode()) == (egraph, roots)


def test_bundled_tensat_vgg_acyclic():
    path = DATA / "vgg_acyclic.json.gz"
    if not path.exists():
        pytest.skip("benchmarks/data is not here")
    egraph, roots = load_egraph(path)
    assert (len(egraph), sum(map(len, egraph.values())), roots) == (96, 112, ["95"])
    assert costs(egraph, roots) == [pytest.approx(4.866775, abs=1e-6)] * 2


# --- errors ----------------------------------------------------------------------------------


def node(**fields):
    return {"op": "f", "children": [], "eclass": "a", "cost": 1.0, **fields}


def doc(nodes, roots=("a",)):
    return json.dumps({"nodes": nodes, "root_eclasses": list(roots)})


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"nodes": {', "not valid JSON"),
        ("[]", "top level must be a JSON object, got a list"),
        ('{"root_eclasses": []}', "missing key 'nodes'"),
        ('{"nodes": []}', "'nodes' must be an object"),
        (doc({"n": 3}), "node 'n' must be an object, got 3"),
        (doc({"n": {"eclass": "a"}}), "node 'n': missing key 'op'"),
        (doc({"n": {"op": "f"}}), "node 'n': missing key 'eclass'"),
        (doc({"n": node(eclass=7)}), "node 'n': 'eclass' must be a string, got 7"),
        (doc({"n": node(op=None)}), "node 'n': 'op' must be a string, got null"),
        (doc({"n": node(children="m")}), "node 'n': 'children' must be a list of node ids"),
        (doc({"n": node(children=[0])}), "node 'n': a child must be a node id"),
        (doc({"n": node(children=["m"])}), "node 'n': child node 'm' is not in the file"),
        (doc({"n": node(cost="cheap")}), "node 'n': 'cost' must be a number or \"inf\", got a string 'cheap'"),
        (doc({"n": node(cost=None)}), "node 'n': 'cost' must be a number or \"inf\", got null"),
        (doc({"n": node(cost=True)}), "node 'n': 'cost' must be a number or \"inf\", got a boolean True"),
        (doc({"n": node(cost=-1)}), "node 'n': 'cost' must be >= 0, got -1"),
        (doc({"n": node(cost=math.nan)}), "node 'n': 'cost' must be >= 0, got nan"),
        (doc({"n": node(subsumed="yes")}), "node 'n': 'subsumed' must be true or false"),
        (doc({"n": node()}, roots=["b"]), "root e-class 'b' has no e-nodes in the file"),
        (doc({"n": node()}, roots=[1]), "a root e-class must be an e-class id"),
        ('{"nodes": {}, "root_eclasses": "a"}', "'root_eclasses' must be a list"),
        ('{"nodes": {"n": {"op": "f", "eclass": "a"}, "n": {"op": "g", "eclass": "a"}}}', "duplicate key 'n'"),
    ],
)
def test_broken_files(tmp_path, text, message):
    path = tmp_path / "broken.json"
    path.write_text(text)
    with pytest.raises(EGraphFileError, match=f"^{re.escape(str(path))}: ") as error:
        load_egraph(path)
    assert message in str(error.value)
    assert isinstance(error.value, ValueError)
    with pytest.raises(ValueError, match="^<string>: "):
        loads_egraph(text)


def test_broken_gzip_files(tmp_path):
    path = tmp_path / "g.json.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(EGraphFileError, match="g.json.gz: not a valid gzip file"):
        load_egraph(path)
    save_egraph(DIAMOND, ["X"], path)
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(EGraphFileError, match="g.json.gz: not a valid gzip file"):
        load_egraph(path)
    path.write_bytes(gzip.compress(b"\xff\xfe"))
    with pytest.raises(EGraphFileError, match="g.json.gz: not UTF-8"):
        load_egraph(path)
    with pytest.raises(FileNotFoundError):
        load_egraph(tmp_path / "missing.json.gz")


@pytest.mark.parametrize(
    "egraph, roots, message",
    [
        ({"A": [N(1)], "B": []}, [], "e-class 'B' has no e-nodes"),
        ({"A": [N(1, ("Q",))]}, ["A"], "e-node 0 of e-class 'A' has child 'Q', which is not an e-class"),
        ({"A": [N(1)]}, ["Z"], "the roots name 'Z', which is not an e-class"),
        ({1: [N(1)], "1": [N(2)]}, [1], "e-classes 1 and '1' would both be written as '1'"),
    ],
)
def test_unwritable_egraphs(tmp_path, egraph, roots, message):
    with pytest.raises(ValueError, match=message):
        save_egraph(egraph, roots, tmp_path / "g.json")
