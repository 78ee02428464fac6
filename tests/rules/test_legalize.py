"""The legalizing rules: what TVM cannot compile becomes an equal computation it can."""

import numpy as np
import pytest
from tvm import relax

from gsl_eq import Workload, rules
from gsl_eq.models.blocks import var


def masked(build) -> Workload:
    a, b = var("a", 3, 6), var("b", 3, 6)
    bb = relax.BlockBuilder()
    with bb.function("main", [a, b]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.astype(build(bb, relax.op.not_equal(a, relax.const(0.0)),
                                                      relax.op.not_equal(b, relax.const(0.0))), "float32"))
        bb.emit_func_output(out)
    return Workload(bb.get())


A = np.array([[0, 0, 1, 0, 1, 1], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]], dtype="float32")
B = np.array([[0, 1, 1, 0, 0, 1], [1, 0, 1, 0, 1, 0], [0, 0, 0, 0, 0, 1]], dtype="float32")


@pytest.mark.parametrize("rule, build, expected", [
    (rules.bool_cumsum, lambda bb, m, _: bb.emit(relax.op.cumsum(m, axis=-1)),
     np.maximum.accumulate(A != 0, axis=-1)),  # a boolean running sum: true from the first true on
    (rules.bool_equal, lambda bb, m, n: bb.emit(relax.op.equal(m, n)), (A != 0) == (B != 0)),
])
def test_the_rewritten_graph_builds_and_computes_the_boolean_op(rule, build, expected):
    wl = masked(build)
    with pytest.raises(Exception):
        wl.build()  # TVM's LLVM code generator cannot compile the boolean form
    new = rule()(wl)
    assert rule().name in {r.name for r in rules.legalize()}
    np.testing.assert_array_equal(new(a=A, b=B), expected.astype("float32"))
