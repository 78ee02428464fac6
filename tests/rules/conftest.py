"""Helpers of the rule-library tests: apply a rule with and without parameter folding, check what it did."""

from __future__ import annotations

from collections import Counter
from typing import Mapping

import pytest
import tvm

from gsl_eq import Workload
from gsl_eq.greedy import rewrite

from .support import ops


@pytest.fixture
def applies(same_outputs):
    """``applies(wl, rule, folded, unfolded, fired=1)``: the rule fires ``fired`` times, with parameter
    folding and without; each result is well formed, has the expected op counts and computes what
    ``wl`` computes. Returns the two results (folded, unfolded)."""

    def check(wl: Workload, rule, folded: Mapping[str, int], unfolded: Mapping[str, int] | None = None, fired: int = 1):
        results = []
        for fold, expected in ((True, folded), (False, unfolded if unfolded is not None else folded)):
            new, count = rewrite(wl, rule, fold_params=fold)
            assert count == fired, f"{rule.name} fired {count} times (fold_params={fold}), expected {fired}"
            assert tvm.relax.analysis.check_well_formed(new.mod)
            assert ops(new) == dict(expected), f"fold_params={fold}"
            same_outputs(wl, new)
            results.append(new)
        return tuple(results)

    return check


@pytest.fixture
def rejects():
    """``rejects(wl, rule)``: the rule does not fire and the graph keeps its ops."""

    def check(wl: Workload, rule) -> None:
        before = Counter(ops(wl))
        for fold in (True, False):
            new, count = rewrite(wl, rule, fold_params=fold)
            assert count == 0, f"{rule.name} fired {count} times where it must not"
            assert Counter(ops(new)) == before

    return check
