"""optimize keeps the caller's objects out of the cycle collector's way, and hands them back."""

import gc
import weakref

import pytest

from gsl_eq import optimize, rules
from gsl_eq.run.limits import callers_heap_frozen
from gsl_eq.models import diamond_conv


class Cyclic:
    def __init__(self):
        self.me = self


@pytest.fixture
def no_frozen_objects():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_old_objects_are_frozen_within_and_handed_back_after(no_frozen_objects):
    with callers_heap_frozen():
        assert gc.get_freeze_count() > 0
        garbage = Cyclic()
        dead = weakref.ref(garbage)
        del garbage
        gc.collect()
        assert dead() is None, "a cycle made within the block is still collected"
    assert gc.get_freeze_count() == 0


def test_a_callers_own_freeze_is_left_alone(no_frozen_objects):
    mine = Cyclic()
    gc.freeze()
    with callers_heap_frozen():
        pass
    # still frozen: the collector's generations do not hold it (the count of frozen objects
    # may drop meanwhile, as frozen objects are freed by reference counting)
    assert gc.get_freeze_count() > 0 and not any(o is mine for o in gc.get_objects())


def test_optimize_runs_with_the_callers_heap_frozen(no_frozen_objects):
    seen = []
    result = optimize(diamond_conv(), rules.default(), on_iteration=lambda it: seen.append(gc.get_freeze_count()))
    assert seen and all(count > 0 for count in seen)
    assert gc.get_freeze_count() == 0
    assert result.report.calls_after < result.report.calls_before
