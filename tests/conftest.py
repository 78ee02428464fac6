"""Shared test helpers: numeric comparison of workloads built and run with TVM."""

from __future__ import annotations

import numpy as np
import pytest

from gsl_eq import Workload
from gsl_eq.optimizer.verify import Reference


def run_both(a: Workload, b: Workload):
    """``a``'s outputs and ``b``'s on the same random inputs. ``a``'s come from
    :class:`gsl_eq.optimizer.verify.Reference`: ``a`` built apart to run once, remembered by content, so the
    original a test passed to optimize() is not built again (optimize's check built it). ``b`` runs
    with its build (an optimize() result's, which its check ran), or one made to run once here."""
    reference = Reference.of(a)
    assert reference.label == "input", reference.reason or f"{reference.label}: the original does not build"
    got = (b if b.built else Workload(b.mod, b.params).build(once=True))(**reference.inputs)
    return reference.outputs, (got,) if isinstance(got, np.ndarray) else tuple(got)


def assert_same_outputs(a: Workload, b: Workload, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Both workloads compute the same outputs on the same random inputs."""
    ya, yb = run_both(a, b)
    assert len(ya) == len(yb)
    for u, v in zip(ya, yb):
        assert u.shape == v.shape and u.dtype == v.dtype
        assert np.isfinite(u).all()
        np.testing.assert_allclose(v, u, rtol=rtol, atol=atol)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fuzz-long", action="store_true", help="run the differential fuzzer on 1000 random graphs")


@pytest.fixture
def same_outputs():
    return assert_same_outputs
