"""Target constants computed from the match: ``pat.Const(fill=fn, **attributes)``."""

import numpy as np
import pytest
from tvm import relax

from gsl_eq import GSLError, Subst, Workload, check_rule, op, optimize, pat
from gsl_eq.greedy import rewrite
from tests.conftest import assert_same_outputs

R = relax.op


def identity_kernel(channels, kh, kw):
    """A depthwise kernel that copies its input (TASO's Iconv)."""
    k = np.zeros((channels, 1, kh, kw))
    k[:, 0, kh // 2, kw // 2] = 1
    return k


def conv_identity() -> Subst:
    """abs(x) -> max(c, -c) with c = depthwise_conv(x, identity kernel, SAME): a target needing a kernel
    shaped by the match."""
    x = pat.Wildcard(ndim=4)
    iconv = pat.Const(fill=identity_kernel, channels=x.shape[1], kh=3, kw=3, dtype=x.dtype, shape=(x.shape[1], 1, 3, 3))
    c = op.Conv2D(x, iconv, padding=(1, 1, 1, 1), groups=x.shape[1])
    return Subst(op.Abs(x), op.Maximum(c, op.Negative(c)), name="conv_identity")


def tvar(name, *shape):
    return relax.Var(name, relax.TensorType(shape, "float32"))


def test_greedy_builds_the_constant_from_the_match():
    wl = Workload.from_expr(R.abs(tvar("x", 1, 3, 5, 5)), {"x"})
    new, count = rewrite(wl, conv_identity(), fold_params=False)
    assert count == 1 and new.graph.op_counts()["relax.nn.conv2d"] == 1
    (kernel,) = [n for n in new.graph.rpo() if n.kind.value == "const"]
    assert kernel.value.shape == (3, 1, 3, 3) and kernel.value.dtype == np.float32 and kernel.value.sum() == 3
    assert_same_outputs(wl, new)


def test_saturate_builds_it_too():
    wl = Workload.from_expr(R.abs(tvar("x", 1, 2, 4, 4)), {"x"})
    report = optimize(wl, [conv_identity()], mode="saturate", cost="opcount").report
    assert report.applications["conv_identity"] >= 1 and report.rejected == {}


def test_the_checker_finds_it_sound():
    result = check_rule(conv_identity(), trials=4)
    assert result.verdict.value == "sound", result.summary()


def test_fill_errors_are_named():
    x = pat.Wildcard()
    with pytest.raises(GSLError, match="a value or a fill function, not both"):
        pat.Const(1.0, fill=identity_kernel)
    with pytest.raises(GSLError, match="cannot set attribute 'kernel'"):
        pat.Const(fill=identity_kernel, kernel=3)
    with pytest.raises(GSLError, match="only a target can do"):
        Subst(op.Add(x, pat.Const(fill=identity_kernel, channels=1, kh=1, kw=1)), x)
    with pytest.raises(GSLError, match="fill=a function of the match's attributes"):
        Subst(op.ReLU(x), op.Add(x, pat.Const()))
