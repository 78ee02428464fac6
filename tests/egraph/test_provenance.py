"""Where a saturated e-graph's e-nodes come from: the rules that built them, the input nodes they are."""

from tvm import relax

from gsl_eq import Subst, Workload, op, pat, rules
from gsl_eq.egraph import Runner
from gsl_eq.graph import Kind

R = relax.op


def var(name, *shape, dtype="float32"):
    return relax.Var(name, relax.TensorType(shape, dtype))


def test_the_snapshot_says_which_rules_built_each_e_node_and_which_input_node_it_is():
    u = var("u", 2, 3)
    wl = Workload.from_expr(R.nn.relu(R.abs(R.permute_dims(R.permute_dims(u)))), {"u"})
    y = pat.Wildcard()
    abs_as_max = Subst(op.Abs(y), op.Maximum(y, op.Negative(y)), name="abs_as_max")
    runner = Runner(wl.graph, [rules.transpose_transpose(), abs_as_max])
    runner.run()
    snap = runner.egraph.snapshot()
    origin = snap.provenance
    handle = runner.handles
    for node in wl.graph.rpo():  # every input node's e-node knows it
        cls = snap.handles[handle[node]]
        assert any(handle[node] in origin.loaded_from(e) for e in snap.classes[cls])
    created = {(e.op, frozenset(origin.built_by(e))) for enodes in snap.classes.values() for e in enodes
               if e.kind is Kind.CALL and not origin.loaded_from(e)}
    assert created == {("relax.maximum", frozenset({1})), ("relax.negative", frozenset({1}))}
    # transpose_transpose builds nothing: its target is the matched u; the union is recorded on u's e-class
    (outer,) = [n for n in wl.graph.rpo() if n.op == "relax.permute_dims" and n.inputs[0].kind is Kind.CALL]
    u_class = snap.handles[handle[wl.graph.inputs[0]]]
    assert snap.handles[handle[outer]] == u_class and origin.merged[u_class] == {0}
