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



def test_an_e_class_hash_is_the_lowest_of_its_e_nodes():
    """Buckets follow the e-classes' hashes: a hash that depended on which e-node came first would
    depend on the order egglog's threads apply rules in, and the matches a share of buckets
    applies would differ from run to run."""
    import itertools

    from gsl_eq.graph import Graph, Node
    from gsl_eq.graph.types import TensorType

    x = Node.var("x", TensorType((4,), "float32"))
    calls = [Node.call(f"relax.{op}", [x]) for op in ("nn.relu", "sigmoid", "tanh", "exp", "negative")]

    def hashes(eg: EGraph) -> dict[int, int]:
        frozen = eg.egg.freeze()
        num = {row.inputs[0]: eg.egg.value_to_i64(row.output) for row in frozen.functions["num"].rows}
        return {eg.egg.value_to_i64(row.inputs[0]): num[row.output] for row in frozen.functions["Id"].rows}

    for a, b in itertools.permutations(calls, 2):
        eg = EGraph()
        h = eg.add_graph(Graph([x], calls))
        eg.number()
        apart = hashes(eg)
        eg.run(f"(union (Id {h[a]}) (Id {h[b]}))")
        eg.number()
        assert hashes(eg)[h[a]] == hashes(eg)[h[b]] == min(apart[h[a]], apart[h[b]]) < max(apart[h[a]], apart[h[b]])
