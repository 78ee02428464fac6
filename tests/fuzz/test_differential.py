"""Differential fuzzing: random graphs through every rule group and TASO's rules (greedy) and
through saturation (greedy DAG and ILP extraction) compute what they computed before,
well-formed, input untouched.

Each graph goes through:

* greedy mode with each group of the library (:data:`GROUPS`) and with the connected rules of
  ``rules.tensat()`` (greedy mode refuses a source whose outputs share no node);
* saturate mode with ``default() + algebraic()``, extracted by the greedy DAG and by the ILP
  extractor, and with ``default() + tensat()``, ILP extraction.

The long run (``pytest tests/fuzz --fuzz-long``, GSL_FUZZ_EXAMPLES=N, ``benchmarks/fuzz.py``) adds
greedy mode with the 614 connected rules of ``rules.taso()``; ``benchmarks/fuzz.py --taso-saturate``
also saturates with ``default() + taso()`` (about 10 s a graph instead of 4: compiling 618 rules
for the e-graph takes 3 s of it). ``optimize()`` checks its result itself and falls back to another
candidate when it fails, which would hide a wrong rewrite: a fallback fails here.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest
import tvm
from hypothesis import HealthCheck, given, settings

from gsl_eq import Subst, Workload, optimize, rules
from gsl_eq.greedy import greedy
from tests.fuzz.graphs import workloads

pytestmark = pytest.mark.slow

GROUPS = ("legalize", "structure", "fusion", "lowering", "default", "all")
SATURATE_RULES = [*rules.default(), *rules.algebraic()]
TOLERANCE = {"float32": 1e-4, "float16": 2e-2}  # rewrites reassociate and fuse: rounding differs
GREEDY_LIMITS = dict(node_limit=20_000, time_limit=60)
# TASO's symmetric rules (commutativity, ...) never stop greedily: the time limit stops them
TASO_GREEDY_LIMITS = dict(node_limit=20_000, time_limit=10)
SATURATE_LIMITS = dict(node_limit=5_000, iter_limit=8, time_limit=30)
TASO_LIMITS = dict(node_limit=5_000, iter_limit=6, time_limit=30)


@functools.cache
def taso_rules(name: str) -> tuple[list[Subst], list[Subst]]:
    """``rules.<name>()`` (taso or tensat): its connected rules (greedy mode), and all of them with
    ``default()`` (saturate mode). Built once: 618 rules take a second to translate."""
    every = getattr(rules, name)()
    return [r for r in every if r.connected], [*rules.default(), *every]


def long_run(config: pytest.Config | None = None) -> bool:
    return "GSL_FUZZ_EXAMPLES" in os.environ or (config is not None and config.getoption("--fuzz-long"))


def examples(config: pytest.Config | None = None) -> int:
    if "GSL_FUZZ_EXAMPLES" in os.environ:
        return int(os.environ["GSL_FUZZ_EXAMPLES"])
    return 1000 if long_run(config) else 6


def outputs(wl: Workload, inputs: dict) -> tuple[np.ndarray, ...]:
    value = wl(**inputs)
    return (value,) if isinstance(value, np.ndarray) else tuple(value)


def check_equal(original: Workload, new: Workload, inputs: dict, expected: tuple, what: str) -> None:
    assert tvm.relax.analysis.check_well_formed(new.mod), f"{what}: ill-formed module"
    got = outputs(new, inputs)
    assert len(got) == len(expected), what
    for k, (u, v) in enumerate(zip(expected, got)):
        assert u.shape == v.shape and u.dtype == v.dtype, f"{what}: output {k} is {v.shape} {v.dtype}, not {u.shape} {u.dtype}"
        tolerance = TOLERANCE.get(str(u.dtype), 0.0)  # integers and booleans: exactly
        np.testing.assert_allclose(v, u, rtol=tolerance, atol=tolerance, err_msg=f"{what}: output {k}")


def check_optimized(wl: Workload, rule_list: list[Subst], inputs: dict, expected: tuple, what: str, **options) -> None:
    result = optimize(wl, rule_list, mode="saturate", **options)
    fallbacks = getattr(result.report, "fallbacks", [])  # optimize's own check of its result
    assert not fallbacks, f"{what}: optimize() fell back, its result failed its check: {fallbacks}"
    check_equal(wl, result.workload, inputs, expected, what)


def check_workload(wl: Workload, greedy_sets: tuple[str, ...] = ("tensat",),
                   saturate_sets: tuple[str, ...] = ("tensat",)) -> None:
    """The whole differential check of one random workload; ``greedy_sets`` and ``saturate_sets``:
    TASO's rule sets (``"tensat"``, ``"taso"``) run greedily (their connected rules) and saturated."""
    before = wl.mod.script()
    inputs = wl.random_inputs(seed=1)
    expected = outputs(wl, inputs)
    for group in GROUPS:
        result = greedy(wl, getattr(rules, group)(), **GREEDY_LIMITS)
        check_equal(wl, result.workload, inputs, expected, f"greedy {group}")
    for name in greedy_sets:
        result = greedy(wl, taso_rules(name)[0], **TASO_GREEDY_LIMITS)
        check_equal(wl, result.workload, inputs, expected, f"greedy {name}() (connected rules)")
    for extractor in ("greedy", "ilp"):
        check_optimized(wl, SATURATE_RULES, inputs, expected,
                        f"saturate default() + algebraic(), {extractor} extraction", extractor=extractor, **SATURATE_LIMITS)
    for name in saturate_sets:
        check_optimized(wl, taso_rules(name)[1], inputs, expected, f"saturate default() + {name}(), ilp extraction",
                        **TASO_LIMITS)
    assert wl.mod.script() == before, "the input workload was changed"


def test_random_graphs_keep_their_values(request):
    greedy_sets = ("tensat", "taso") if long_run(request.config) else ("tensat",)

    @settings(max_examples=examples(request.config), deadline=None, derandomize=not request.config.getoption("--fuzz-long"),
              suppress_health_check=list(HealthCheck), print_blob=True)
    @given(workloads())
    def differential(wl):
        check_workload(wl, greedy_sets=greedy_sets)

    differential()
