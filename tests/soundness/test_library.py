"""Every rule of the library passes the soundness checker on a small sample (the full check is
``benchmarks/soundness.py``)."""

from __future__ import annotations

import pytest

from gsl_eq import rules
from gsl_eq.soundness import Verdict, check_rule

LIBRARY = {r.name: r for group in (rules.all(), rules.algebraic(), rules.ring(), rules.tvm_equivalents()) for r in group}
LEGALIZING = {r.name for r in rules.legalize()}
#: Rules whose guards few random draws satisfy (every part of a split matched, biases agreeing off
#: the axis and broadcast, per-channel biases of convs): more draws to find their three instances.
HARD_TO_DRAW = {"split_of_broadcast_variadic": 120, "parallel_conv_bias_variadic": 120,
                "parallel_conv_bias_act_variadic": 120, "concat_of_broadcast_variadic": 1000}
#: Rules of which the draws find fewer instances: a broadcast b_i for every part of a split, each
#: lined up with its part, is one draw in several hundred (tests/rules/test_broadcast.py checks
#: the rule's results numerically on built graphs).
FEW_DRAWN = {"split_of_broadcast_variadic": 1}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(LIBRARY) - LEGALIZING))
def test_library_rule_is_sound_on_its_sample(name):
    result = check_rule(LIBRARY[name], trials=3, seed=0, tries=HARD_TO_DRAW.get(name))
    assert result.verdict is Verdict.SOUND and result.ok, result.summary()
    assert result.instances == FEW_DRAWN.get(name, 3)


@pytest.mark.parametrize("name", sorted(LEGALIZING))
def test_legalizing_rule_sources_are_what_tvm_cannot_build(name):
    """A legalizing rule rewrites what TVM cannot compile: the checker has no reference to compare
    with and says so (tests/rules/test_legalize.py checks these rules against NumPy)."""
    result = check_rule(LIBRARY[name], trials=2, seed=0)
    assert result.verdict is Verdict.UNBUILDABLE and "cannot build" in result.summary()
