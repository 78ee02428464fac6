"""The runner counts the keys it rejects per rule and reason, in each iteration and over the run."""

from tvm import relax

from gsl_eq import Subst, Workload, op, pat
from gsl_eq.egraph import Runner
from gsl_eq.egraph.compile import SOURCE_GUARD_FALSE
from gsl_eq.greedy.rewriter import Refusal

R = relax.op


def var(name, *shape, dtype="float32"):
    return relax.Var(name, relax.TensorType(shape, dtype))


def test_rejected_keys_are_counted_per_rule_and_reason_in_each_iteration():
    # relu(relu(x)) -> relu(reshape(x, (16,))) for float32 x, on four chains: one rewritten, one whose
    # type would change (4x4), one whose reshape cannot be typed (3x4), one the guard refuses (float16)
    x = pat.Wildcard(dtype="float32")
    rule = Subst(op.ReLU(op.ReLU(x)), op.ReLU(op.Reshape(x, shape=(16,))), name="flatten16")
    shapes = {"a": ((16,), "float32"), "b": ((4, 4), "float32"), "c": ((3, 4), "float32"), "d": ((16,), "float16")}
    wl = Workload.from_expr(relax.Tuple([R.nn.relu(R.nn.relu(var(n, *s, dtype=d))) for n, (s, d) in shapes.items()]),
                            set(shapes))
    report = Runner(wl.graph, [rule]).run()
    first = report.iterations[0]
    expected = {SOURCE_GUARD_FALSE: 1, Refusal.TYPE_CHANGE.value: 1, Refusal.UNTYPED.value: 1}
    assert first.new_keys == {"flatten16": 4} and first.accepted_keys == {"flatten16": 1}
    assert first.rejected == {"flatten16": expected}
    assert all(not it.rejected for it in report.iterations[1:])  # a key is decided once
    assert report.rejected() == {"flatten16": expected} and report.applied() == {"flatten16": 1}

