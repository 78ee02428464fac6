"""Differential fuzzing: random graphs through every rule group (greedy) and through saturation
(greedy DAG and ILP extraction) compute what they computed before, well-formed, input untouched.

CI runs a few examples; ``pytest tests/fuzz --fuzz-long`` (or GSL_FUZZ_EXAMPLES=N) runs many,
and ``benchmarks/fuzz.py`` records a long run in BENCHMARKS.md.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import tvm
from hypothesis import HealthCheck, given, settings

from gsl_eq import Workload, optimize, rules
from gsl_eq.greedy import greedy
from tests.fuzz.graphs import workloads

GROUPS = ("legalize", "structure", "fusion", "lowering", "default", "all")
SATURATE_RULES = [*rules.default(), *rules.algebraic()]
TOLERANCE = {"float32": 1e-4, "float16": 2e-2}  # rewrites reassociate and fuse: rounding differs


def examples(config: pytest.Config | None = None) -> int:
    if "GSL_FUZZ_EXAMPLES" in os.environ:
        return int(os.environ["GSL_FUZZ_EXAMPLES"])
    return 1000 if config is not None and config.getoption("--fuzz-long") else 6


def outputs(wl: Workload, inputs: dict) -> tuple[np.ndarray, ...]:
    value = wl(**inputs)
    return (value,) if isinstance(value, np.ndarray) else tuple(value)


def check_equal(original: Workload, new: Workload, inputs: dict, expected: tuple, what: str) -> None:
    assert tvm.relax.analysis.check_well_formed(new.mod), f"{what}: ill-formed module"
    got = outputs(new, inputs)
    assert len(got) == len(expected), what
    for k, (u, v) in enumerate(zip(expected, got)):
        assert u.shape == v.shape and u.dtype == v.dtype, f"{what}: output {k} is {v.shape} {v.dtype}, not {u.shape} {u.dtype}"
        tolerance = TOLERANCE.get(str(u.dtype), 0.0)  # integers: exactly
        np.testing.assert_allclose(v, u, rtol=tolerance, atol=tolerance, err_msg=f"{what}: output {k}")


def check_workload(wl: Workload) -> None:
    """The whole differential check of one random workload."""
    before = wl.mod.script()
    inputs = wl.random_inputs(seed=1)
    expected = outputs(wl, inputs)
    for group in GROUPS:
        result = greedy(wl, getattr(rules, group)(), node_limit=20_000, time_limit=60)
        check_equal(wl, result.workload, inputs, expected, f"greedy {group}")
    for extractor in ("greedy", "ilp"):
        result = optimize(wl, SATURATE_RULES, extractor=extractor, node_limit=5_000, iter_limit=8, time_limit=30)
        check_equal(wl, result.workload, inputs, expected, f"saturate, {extractor} extraction")
    assert wl.mod.script() == before, "the input workload was changed"


def test_random_graphs_keep_their_values(request):
    @settings(max_examples=examples(request.config), deadline=None, derandomize=not request.config.getoption("--fuzz-long"),
              suppress_health_check=list(HealthCheck), print_blob=True)
    @given(workloads())
    def differential(wl):
        check_workload(wl)

    differential()
