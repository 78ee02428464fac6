"""Variadic, alternative and op-trait rules compiled for saturation; types of what rules create."""

import pytest
from tvm import relax

from gsl_eq import Subst, Workload, op, pat, rules
from gsl_eq.egraph import Runner, StopReason, compile_rule
from gsl_eq.graph import Kind, Node
from gsl_eq.models import bert_encoder, diamond_conv, inception_block, inception_network, resnet_bottleneck
from gsl_eq.models import transformer_encoder_layer

R = relax.op


def var(name, *shape):
    return relax.Var(name, relax.TensorType(shape, "float32"))


def saturate(wl, rule_list, **limits):
    runner = Runner(wl.graph, rule_list, **limits)
    report = runner.run()
    return runner, report, runner.egraph.snapshot()


def class_of(runner, snap, node):
    return snap.handles[runner.handles[node]]


def test_variadic_outputs_merge_every_number_of_parallel_matmuls_up_to_the_limit():
    x = var("x", 4, 8)
    mms = [R.matmul(x, var(f"w{k}", 8, 2 + k)) for k in range(3)]
    wl = Workload.from_expr(relax.Tuple([R.nn.relu(m) for m in mms]), {"x"})
    runner, report, snap = saturate(wl, [rules.parallel_matmul_variadic()])
    assert report.stop_reason is StopReason.SATURATED
    # the rule is symmetric: 3 pairs and the three together, each in one order (12 orders without)
    assert report.applied() == {"parallel_matmul_variadic": 4}
    x_class = class_of(runner, snap, wl.graph.inputs[0])
    for mm in (n for n in wl.graph.rpo() if n.op == "relax.matmul"):
        merged_widths = set()
        for item in (n for n in snap.classes[class_of(runner, snap, mm)] if n.kind is Kind.GETITEM):
            (split,) = snap.classes[item.children[0]]
            (merged,) = snap.classes[split.children[0]]
            assert merged.op == "relax.matmul" and merged.children[0] == x_class
            merged_widths.add(runner.egraph.types[snap.types[split.children[0]]].shape[1])
        width = mm.type.shape[1]
        assert merged_widths == {width + other for other in (2, 3, 4) if other != width} | {9}


def test_variadic_tuple_rule_matches_tuples_of_every_size_present():
    a, b, c = var("a", 2, 3), var("b", 2, 3), var("c", 2, 3)
    pair, triple = relax.Tuple([a, b]), relax.Tuple([a, b, c])
    y = R.add(R.add(relax.TupleGetItem(pair, 1), relax.TupleGetItem(triple, 2)), relax.TupleGetItem(triple, 0))
    wl = Workload.from_expr(y, {"a", "b", "c"})
    assert len(compile_rule(rules.dispatch_tuple(), 0, Runner(wl.graph, []).egraph)) == 2 * 3  # tuple sizes x outputs
    runner, report, snap = saturate(wl, [rules.dispatch_tuple()])
    assert report.stop_reason is StopReason.SATURATED
    items = [n for n in wl.graph.rpo() if n.kind is Kind.GETITEM]
    for item in items:
        field = item.inputs[0].inputs[item.attrs["index"]]
        assert class_of(runner, snap, item) == class_of(runner, snap, field)


def test_alternatives_each_rewrite_with_their_own_target():
    x = pat.Wildcard()
    alt = pat.Alt(op.ReLU(x), op.Abs(x))
    rule = Subst(op.ReLU(alt), pat.Match(alt, [op.ReLU(x), op.Abs(x)]), name="relu_of_nonnegative")
    u = var("u", 2, 3)
    outer_relu, outer_abs = R.nn.relu(R.nn.relu(u)), R.nn.relu(R.abs(u))
    wl = Workload.from_expr(R.add(outer_relu, outer_abs), {"u"})
    runner, report, snap = saturate(wl, [rule])
    assert report.stop_reason is StopReason.SATURATED
    outer = [n for n in wl.graph.rpo() if n.op == "relax.nn.relu" and n.inputs[0].kind is Kind.CALL]
    for node in outer:
        assert class_of(runner, snap, node) == class_of(runner, snap, node.inputs[0])
    # one query per alternative, each accepting its one key with its own target shape
    queries = runner.queries[0]
    assert len(queries) == 2 and [len(q.variants) for q in queries] == [1, 1]
    assert sum(it.accepted_keys["relu_of_nonnegative"] for it in report.iterations) == 2


def test_every_library_rule_compiles():
    eg = Runner(inception_network().graph, []).egraph  # holds tuples (the concats' inputs) of several sizes
    for k, rule in enumerate([*rules.all(), *rules.algebraic(), *rules.tvm_equivalents()]):
        assert len(compile_rule(rule, k, eg)) >= 1, rule.name


MODELS = [diamond_conv, resnet_bottleneck, inception_block, inception_network, transformer_encoder_layer,
          lambda: bert_encoder(layers=2)]


@pytest.mark.slow
@pytest.mark.parametrize("build", MODELS)
def test_eclass_types_agree_with_tvm_on_every_enode(build):
    """Each e-node, read as a call on values of its children's e-class types, has the type TVM
    infers for it, which is its e-class's type: every expression extracted from the e-graph is
    typed as its e-class says."""
    wl = build()
    names = set()
    rule_list = [r for r in [*rules.default(), *rules.algebraic()] if not (r.name in names or names.add(r.name))]
    runner, report, snap = saturate(wl, rule_list, node_limit=20_000, iter_limit=6)
    types = runner.egraph.types
    assert report.iterations[-1].enodes > len(wl.graph)
    checked = 0
    for cls, enodes in snap.classes.items():
        ty = types[snap.types[cls]]
        for e in enodes:
            children = [Node.var(f"c{i}", types[snap.types[c]]) for i, c in enumerate(e.children)]
            if e.kind is Kind.CALL:
                node = Node.call(e.op, children, dict(runner.egraph.attrs[e.attrs]))
            elif e.kind is Kind.TUPLE:
                node = Node.tuple(children)
            elif e.kind is Kind.GETITEM:
                node = Node.getitem(Node(Kind.VAR, types[snap.types[e.children[0]]], name="t"), e.attrs)
            elif e.kind is Kind.CONST:
                node = Node.const(runner.egraph.consts[e.attrs])
            else:
                continue
            assert node.type == ty, (e, ty)
            checked += 1
    assert checked >= report.iterations[-1].enodes - len(wl.graph.inputs)


def test_a_rule_is_given_to_egglog_once_the_ops_it_matches_may_be_there():
    """Until every op a rule's source matches has e-nodes, nothing matches it, and egglog need not
    compile it (most of compiling TASO's rules). The split a merge creates wakes the rule matching
    its parts; a rule on multiplies, which nothing creates, is never compiled."""
    x = var("x", 4, 8)
    wl = Workload.from_expr(relax.Tuple([R.nn.relu(R.matmul(x, var(f"w{k}", 8, 2 + k))) for k in range(3)]), {"x"})
    rule_list = [rules.parallel_matmul_variadic(), rules.split_of_element_wise(), rules.mul_commutative()]
    runner = Runner(wl.graph, rule_list)
    assert runner.queries[0] and not runner.queries[1] and not runner.queries[2]
    report = runner.run()
    assert report.stop_reason is StopReason.SATURATED and runner.queries[1] and not runner.queries[2]
    assert report.applied()["split_of_element_wise"] >= 1  # relu on the merged matmul, split after
    tables = runner.egraph.table_sizes()
    assert f"Key_{runner.queries[1][0].name}" in tables
    assert not any(f"Key_{q.name}" in tables for q in runner._asleep[2])
    relus = [n for nodes in runner.egraph.snapshot().classes.values() for n in nodes
             if n.kind is Kind.CALL and n.op == "relax.nn.relu"]
    assert len(relus) == 3 + 4  # one on each merged matmul too: the three pairs and the three together
