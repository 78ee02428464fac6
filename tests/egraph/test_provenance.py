"""Where a chosen term's e-nodes come from: the rules that build them, the input nodes they are."""

from tvm import relax

from gsl_eq import Subst, Workload, op, pat, rules
from gsl_eq.egraph import Runner
from gsl_eq.graph import Kind

R = relax.op


def var(name, *shape, dtype="float32"):
    return relax.Var(name, relax.TensorType(shape, dtype))


def choose(snap, prefer):
    """A choice of e-node per e-class: the first one ``prefer`` accepts, else the first."""
    return {cls: next((i for i, e in enumerate(enodes) if prefer(e)), 0) for cls, enodes in snap.classes.items()}


def test_attribution_names_the_rules_that_build_each_chosen_e_node_and_which_input_node_it_is():
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
    # choose the rewritten term: maximum over the variable itself (the transposes merged away)
    choice = choose(snap, lambda e: e.kind is Kind.VAR or e.op in ("relax.maximum", "relax.negative", "relax.nn.relu"))
    root = snap.handles[handle[wl.graph.outputs[0]]]
    found = runner.attribute(snap, choice, [root])
    chosen = {snap.classes[cls][choice[cls]].op: rules for cls, rules in found.built.items()}
    assert chosen == {"relax.maximum": {1}, "relax.negative": {1}}
    # transpose_transpose builds nothing: its target is the matched u; the union is on u's e-class
    (outer,) = [n for n in wl.graph.rpo() if n.op == "relax.permute_dims" and n.inputs[0].kind is Kind.CALL]
    u_class = snap.handles[handle[wl.graph.inputs[0]]]
    assert snap.handles[handle[outer]] == u_class and found.merged == {u_class: {0}}
    assert runner.egraph.size() == snap.num_enodes  # naming the chosen e-classes added no e-node


def test_a_rule_counts_only_where_its_target_builds_the_chosen_e_node():
    u = var("u", 2, 3)
    wl = Workload.from_expr(R.abs(u), {"u"})
    y = pat.Wildcard()
    abs_as_max = Subst(op.Abs(y), op.Maximum(y, op.Negative(y)), name="abs_as_max")
    runner = Runner(wl.graph, [abs_as_max])
    runner.run()
    snap = runner.egraph.snapshot()
    root = snap.handles[runner.handles[wl.graph.outputs[0]]]
    keep_abs = runner.attribute(snap, choose(snap, lambda e: e.op == "relax.abs"), [root])
    assert keep_abs.built == {} and keep_abs.merged == {}
