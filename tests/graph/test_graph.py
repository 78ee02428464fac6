"""The computation graph: reverse post-order and successor lists as seed 003 defines them."""

import pytest

from gsl_eq.graph import Graph, Kind, Node, TensorType, TupleType

T = TensorType((2, 8), "float32")


def relu(x):
    return Node.call("relax.nn.relu", [x])


def add(a, b):
    return Node.call("relax.add", [a, b])


def seed000_graph():
    """The 10-vertex computation graph of seed 000's multi-output example (图 多输出模式匹配示例)."""
    v1 = Node.var("v1", T)
    v2, v3, v7 = relu(v1), relu(v1), relu(v1)
    v4, v5, v6 = relu(v2), relu(v3), relu(v3)
    v8 = add(v4, v5)
    v9 = relu(v6)
    v10 = Node.call("relax.concat", [Node.tuple([v8, v9, v7])], {"axis": 0})
    names = dict(v1=v1, v2=v2, v3=v3, v4=v4, v5=v5, v6=v6, v7=v7, v8=v8, v9=v9, v10=v10)
    return Graph([v1], [v10]), names


def test_rpo_visits_predecessors_in_order():
    g, v = seed000_graph()
    tup = v["v10"].inputs[0]
    expected = [v["v1"], v["v2"], v["v4"], v["v3"], v["v5"], v["v8"], v["v6"], v["v9"], v["v7"], tup, v["v10"]]
    assert list(g.rpo()) == expected


def test_successor_lists_follow_rpo():
    g, v = seed000_graph()
    succ = g.successors()
    # v1 has three successors; rpo puts v2 before v3 before v7.
    assert succ[v["v1"]] == [v["v2"], v["v3"], v["v7"]]
    assert succ[v["v3"]] == [v["v5"], v["v6"]]
    assert succ[v["v4"]] == [v["v8"]]
    assert succ[v["v10"]] == []
    rank = {n: i for i, n in enumerate(g.rpo())}
    for node, users in succ.items():
        assert [rank[u] for u in users] == sorted(rank[u] for u in users)
        assert all(node in u.inputs for u in users)
    edges = sum(len(set(n.inputs)) for n in g.rpo())
    assert sum(len(s) for s in succ.values()) == edges


def test_successor_lists_order_is_rpo_not_creation_order():
    x = Node.var("x", T)
    late = relu(x)  # created first, but reached last from the outputs
    early = Node.call("relax.exp", [x])
    g = Graph([x], [early, late])
    assert g.successors()[x] == [early, late]
    assert list(g.rpo()) == [x, early, late]


def test_repeated_input_is_one_successor():
    x = Node.var("x", T)
    sq = Node.call("relax.multiply", [x, x])
    g = Graph([x], [sq])
    assert g.successors()[x] == [sq]
    assert sq.inputs == (x, x)


def test_multiple_outputs_and_shared_nodes_visited_once():
    x = Node.var("x", T)
    h = relu(x)
    a, b = relu(h), Node.call("relax.exp", [h])
    g = Graph([x], [a, b, h])
    assert g.returns_tuple
    assert list(g.rpo()) == [x, h, a, b]
    assert g.successors()[h] == [a, b]


def test_deep_graph_has_no_recursion_limit():
    x = Node.var("x", T)
    node = x
    for _ in range(20_000):
        node = relu(node)
    assert len(Graph([x], [node]).rpo()) == 20_001


def test_call_types_come_from_tvm():
    x = Node.var("x", TensorType((1, 3, 8, 8), "float32"))
    w = Node.var("w", TensorType((4, 3, 3, 3), "float32"))
    conv = Node.call("relax.nn.conv2d", [x, w], {"padding": (1, 1)})
    assert conv.type == TensorType((1, 4, 8, 8), "float32")
    parts = Node.call("relax.split", [conv], {"indices_or_sections": 2, "axis": 1})
    assert parts.type == TupleType((TensorType((1, 2, 8, 8), "float32"),) * 2)
    item = Node.getitem(parts, 1)
    assert item.kind is Kind.GETITEM and item.attr("index") == 1 and item.attr("shape") == (1, 2, 8, 8)
    with pytest.raises(TypeError, match="not broadcastable"):
        Node.call("relax.add", [x, Node.var("v", TensorType((5,), "float32"))])
    with pytest.raises(TypeError, match="cannot take item 2"):
        Node.getitem(parts, 2)


def test_replace_copies_downstream_and_keeps_the_rest():
    g, v = seed000_graph()
    new_v5 = Node.call("relax.exp", [v["v3"]])
    g2 = g.replace({v["v5"]: new_v5})
    nodes = set(g2.rpo())
    assert new_v5 in nodes and v["v5"] not in nodes
    assert v["v8"] not in nodes and v["v10"] not in nodes  # rebuilt downstream
    assert v["v4"] in nodes and v["v9"] in nodes  # untouched nodes are shared
    assert len(g2) == len(g)
    assert set(g.rpo()) >= {v["v5"], v["v8"]}  # the original graph is unchanged
    with pytest.raises(TypeError, match="replacing"):
        g.replace({v["v5"]: Node.call("relax.sum", [v["v3"]])})


def test_replace_applies_chained_rewrites_in_one_pass():
    x = Node.var("x", T)
    a = relu(x)
    b = Node.call("relax.exp", [a])
    c = Node.call("relax.sqrt", [b])
    g = Graph([x], [c])
    new_a = Node.call("relax.negative", [x])
    new_c = Node.call("relax.tanh", [b])  # reads b, which reads the replaced a
    g2 = g.replace({a: new_a, c: new_c})
    (out,) = g2.outputs
    assert out.op == "relax.tanh" and out.inputs[0].op == "relax.exp"
    assert out.inputs[0].inputs[0] is new_a
    assert [n.op for n in g2.rpo()[1:]] == ["relax.negative", "relax.exp", "relax.tanh"]


def test_replace_refuses_a_cycle():
    x = Node.var("x", T)
    a = relu(x)
    b = Node.call("relax.exp", [a])
    with pytest.raises(ValueError, match="depend on itself"):
        Graph([x], [b]).replace({a: Node.call("relax.negative", [b])})


def test_structural_key_is_what_the_graph_computes_not_its_nodes():
    from gsl_eq.graph.diff import structural_key

    def build(swapped: bool = False, name: str = "x") -> Graph:
        x, y = Node.var(name, T), Node.var("y", T)
        s = add(y, x) if swapped else add(x, y)
        return Graph([x, y], [relu(s)])

    assert structural_key(build()) == structural_key(build())  # built apart, alike
    assert structural_key(build()) != structural_key(build(swapped=True))
    assert structural_key(build()) != structural_key(build(name="z"))
    assert structural_key(seed000_graph()[0]) == structural_key(seed000_graph()[0])


def test_merge_common_computes_each_thing_once():
    from gsl_eq.graph.diff import merge_common

    x, y = Node.var("x", T), Node.var("y", T)
    a1, a2 = add(relu(x), y), add(relu(x), y)  # built apart, alike
    b = add(relu(y), y)
    g = Graph([x, y], [add(a1, a2), b])
    merged = merge_common(g)
    assert len(g) == 9 and len(merged) == 7  # one relu(x) and one add(relu(x), y) fewer
    top = merged.outputs[0]
    assert top.inputs[0] is top.inputs[1]
    assert merged.outputs[1] is b  # nothing above it changed
    assert merge_common(merged) is merged
    assert len(merge_common(Graph([x, y], [add(x, y), add(y, x)]))) == 4  # operand order counts
