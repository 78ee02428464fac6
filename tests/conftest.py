"""Shared test helpers: numeric comparison of workloads built and run with TVM."""

from __future__ import annotations

import numpy as np
import pytest

from gsl_eq import Workload


def run_both(a: Workload, b: Workload, seed: int = 0):
    inputs = a.random_inputs(seed)
    return a(**inputs), b(**inputs)


def assert_same_outputs(a: Workload, b: Workload, rtol: float = 1e-5, atol: float = 1e-6, seed: int = 0) -> None:
    """Both workloads compute the same outputs on the same random inputs."""
    ya, yb = run_both(a, b, seed)
    ya, yb = (ya,) if isinstance(ya, np.ndarray) else ya, (yb,) if isinstance(yb, np.ndarray) else yb
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
