"""Graphs encoded into egglog and read back."""

from gsl_eq.egraph import EGraph
from gsl_eq.graph import Graph, Kind, Node, TensorType
from gsl_eq.models import diamond_conv, inception_block, resnet_bottleneck, transformer_encoder_layer

T = TensorType((2, 3), "float32")


def test_every_node_is_an_eclass_with_its_type():
    for build in (diamond_conv, resnet_bottleneck, inception_block, transformer_encoder_layer):
        graph = build().graph
        eg = EGraph()
        handle = eg.add_graph(graph)
        snap = eg.snapshot()
        classes = {snap.handles[handle[n]] for n in graph.rpo()}
        assert len(classes) == len(snap.classes) == len(graph)  # no two nodes of these models are equal
        assert snap.num_enodes == len(graph)
        for node in graph.rpo():
            cls = snap.handles[handle[node]]
            assert eg.types[snap.types[cls]] == node.type
            (enode,) = snap.classes[cls]
            assert enode.kind is node.kind and enode.op == node.op
            assert tuple(enode.children) == tuple(snap.handles[handle[i]] for i in node.inputs)
            if node.kind is Kind.CALL:
                assert dict(eg.attrs[enode.attrs]) == node.attrs


def test_equal_nodes_share_an_eclass_and_equal_attributes_an_id():
    x = Node.var("x", T)
    a, b = Node.call("relax.nn.relu", [x]), Node.call("relax.nn.relu", [x])
    s1, s2 = Node.call("relax.sum", [a], {"axis": (1,)}), Node.call("relax.sum", [b], {"axis": (1,)})
    eg = EGraph()
    handle = eg.add_graph(Graph([x], [s1, s2]))
    snap = eg.snapshot()
    assert snap.handles[handle[a]] == snap.handles[handle[b]]
    assert snap.handles[handle[s1]] == snap.handles[handle[s2]]
    assert len(snap.classes) == 3 and len(eg.attrs.values) == 2  # relu's {} and sum's attributes


def test_size_counts_what_a_snapshot_holds():
    eg = EGraph()
    eg.add_graph(inception_block().graph)
    snap = eg.snapshot()
    assert eg.size() == snap.num_enodes
