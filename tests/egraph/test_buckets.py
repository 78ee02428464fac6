"""Opening buckets: every bucket, a span of them, or a few, puts exactly those in ``Open``."""

import pytest
from egglog import bindings as egg

from gsl_eq.egraph.egraph import BUCKETS, SPAN, STRIDE, EGraph, BucketSpan


def opened(eg: EGraph) -> set[int]:
    (out,) = eg.egg.run_program(egg.PrintFunction(SPAN, "Open", None, None, egg.CSVPrintFunctionMode()))
    return {int(line.split(",")[1]) for line in str(out).splitlines() if line}


@pytest.mark.parametrize("start,count", [(0, 1), (7, 63), (0, 64), (4000, 100), (123, 4095), (4095, 2048),
                                         (9000, 1000), (0, BUCKETS)])
def test_a_span_opens_its_buckets_and_close_empties_them(start, count):
    eg = EGraph()
    for _ in range(2):  # the same span again, after a close, opens again
        span = BucketSpan(start, count)
        expected = {(start + i) * STRIDE % BUCKETS for i in range(count)}
        assert set(span) == expected and len(span) == count
        eg.open_buckets(span)
        assert opened(eg) == expected
        eg.run("(run close 1)")
        assert opened(eg) == set()


def test_the_first_buckets_of_a_span_and_a_list_of_buckets():
    span = BucketSpan(100, 1000)
    assert list(span.first(10)) == list(span)[:10] and len(span.first(5000)) == 1000
    eg = EGraph()
    eg.open_buckets([3, 5, 3])
    assert opened(eg) == {3, 5}
    eg.run("(run close 1)")
    eg.open_buckets(range(BUCKETS))
    assert opened(eg) == set(range(BUCKETS))
