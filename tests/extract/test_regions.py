"""The exact extractor region by region (gsl_eq.extract.regions): where it cuts, and that the
answer is the one the whole program gives, on chains of blocks like TENSAT's e-graphs."""

from __future__ import annotations

import random
import time
from dataclasses import replace

import pytest

from gsl_eq.extract import ENodeCost as N, Extraction, dag_cost, ilp_extract
from gsl_eq.extract import ilp
from gsl_eq.extract.extractors import Indexed, greedy_dag_extract
from gsl_eq.extract.kept import kept_nodes
from gsl_eq.extract.regions import MIN_REGION_SECONDS, _census, problem, repeated, solve_regions, split

from .test_extractors import brute_force, check


def block_chain(blocks: int, seed: int, *, cyclic: bool = False, fusing: bool = False, skip: bool = False,
                bypass: bool = False, alike: bool = False):
    """Blocks that each read the one before through its head ``h{b}``: three branches, each computed
    alone or as a part of one merged e-node they share (TASO's merges), joined by the head in
    one of two orders. ``cyclic``: a branch also equals a form of its own head (a cycle inside
    the block); ``fusing``: e-nodes open kernels and take epilogues inside a block, and the
    first branch of each block may run in the previous head's kernel; ``skip``: block 2 also
    reads block 0's merged e-node, so block 1's head no longer cuts the chain; ``bypass``: each head
    may also be read from a constant, so that what the head below costs matters. ``alike``: every
    block costs as the first (as a recurrent cell's do), its e-nodes listed in an order of its own."""
    rng = random.Random(seed)
    egraph = {"x": [N(0.0)]}
    previous = "x"
    for b in range(blocks):
        if alike:
            rng = random.Random(seed)
        merged = f"m{b}"
        egraph[merged] = [N(rng.uniform(2, 6), (previous,), "merged", opens=fusing)]
        branches = []
        for j in range(3):
            own = f"b{b}_{j}"
            reads = (previous, "m0") if skip and b == 2 and j == 0 else (previous,)
            cost = rng.uniform(1, 4)
            fusible = ((previous, cost / 2),) if fusing and j == 0 and b > 0 else ()
            egraph[own] = [N(cost, reads, "conv", opens=fusing, fusible=fusible),
                           N(rng.uniform(0, 1), (merged,), "split")]
            if fusing:
                relu = f"r{b}_{j}"
                cost = rng.uniform(0.5, 1.5)
                egraph[relu] = [N(cost, (own,), "relu", opens=True, fusible=((own, cost * 0.8),), prologue=cost * 0.5)]
                own = relu
            branches.append(own)
        head = f"h{b}"
        egraph[head] = [N(rng.uniform(0.5, 2), tuple(branches), "concat"),
                        N(rng.uniform(0.5, 2), tuple(reversed(branches)), "concat")]
        if cyclic:
            egraph[branches[1]].append(N(rng.uniform(0, 3), (head,), "slice"))
        if bypass:
            egraph[f"k{b}"] = [N(0.0)]
            egraph[head].append(N(rng.uniform(5, 9) * (1 if alike else b + 1), (f"k{b}",), "direct"))
        if alike:
            order = random.Random(b)
            for cls in egraph:
                if cls.startswith(("m", "b", "r", "h")) and cls[1:].split("_")[0] == str(b):
                    order.shuffle(egraph[cls])
        previous = head
    egraph["out"] = [N(1.0, (previous,), "relu")]
    return egraph, ["out"]


def regions_of(egraph, roots, min_nodes=1):
    graph = Indexed(egraph)
    positions = graph.root_positions(roots)
    parts = split(graph, kept_nodes(graph, positions), positions, min_nodes)
    name = graph.classes.__getitem__
    return [(None if p.head is None else name(p.head), sorted(map(name, p.classes)), sorted(map(name, p.below)))
            for p in parts]


def test_a_chain_is_cut_at_each_head():
    egraph, roots = block_chain(4, 0)
    parts = regions_of(egraph, roots)
    assert [head for head, _, _ in parts] == ["x", "h0", "h1", "h2", "h3", None]
    assert [below for _, _, below in parts] == [[], ["x"], ["h0"], ["h1"], ["h2"], ["h3"]]
    assert parts[2][1] == ["b1_0", "b1_1", "b1_2", "h1", "m1"]
    assert parts[-1][1] == ["out"]  # a root is never a cut


def test_small_regions_join_the_region_above():
    egraph, roots = block_chain(4, 0)
    graph = Indexed(egraph)
    sizes = [len(p.classes) for p in split(graph, kept_nodes(graph, [graph.position["out"]]),
                                           [graph.position["out"]], 12)]
    assert sizes == [11, 10, 1]  # x and blocks 0-1 (19 e-nodes); blocks 2-3; the root's region
    assert len(split(graph, kept_nodes(graph, [graph.position["out"]]), [graph.position["out"]], 10**6)) == 1


def test_a_head_read_from_above_or_fused_into_its_reader_is_no_cut():
    egraph, roots = block_chain(4, 1, skip=True)
    heads = [head for head, _, _ in regions_of(egraph, roots)]
    assert "h0" not in heads and "h1" not in heads and "h2" in heads  # block 2 reads m0, inside block 0
    egraph, roots = block_chain(4, 1, fusing=True)
    heads = [head for head, _, _ in regions_of(egraph, roots)]
    assert not {"h0", "h1", "h2"} & set(heads) and "h3" in heads  # b{b}_0 may run in h{b-1}'s kernel


@pytest.fixture
def whole_and_split(monkeypatch):
    """ilp_extract solving the whole program, then region by region (the fork inherits the patch)."""

    def solve(egraph, roots):
        monkeypatch.setattr(ilp, "REGION_NODES", 1)
        whole, by_regions = ilp_extract(egraph, roots, regions=False), ilp_extract(egraph, roots)
        # regions posing one problem (the constants of ``bypass``) are solved once
        assert whole.regions == 1 and 1 < by_regions.regions <= len(regions_of(egraph, roots))
        return whole, by_regions

    return solve


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", [{}, {"cyclic": True}, {"fusing": True}, {"skip": True}, {"bypass": True}])
def test_by_regions_the_whole_programs_optimum(whole_and_split, seed, shape):
    egraph, roots = block_chain(6, seed, **shape)
    whole, by_regions = whole_and_split(egraph, roots)
    assert whole.status == by_regions.status == "optimal" and by_regions.gap == 0.0
    assert by_regions.cost == pytest.approx(whole.cost, rel=1e-9)
    assert by_regions.cost == pytest.approx(dag_cost(egraph, roots, by_regions.choice))
    if not shape.get("fusing"):
        check(egraph, roots, by_regions)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shape", [{}, {"cyclic": True}])
def test_like_regions_are_solved_once(whole_and_split, seed, shape):
    """Six blocks alike, their e-nodes listed in orders of their own: one program for all six (and
    one each for the input and the root), the whole program's optimum, each block choosing alike."""
    egraph, roots = block_chain(6, seed, alike=True, **shape)
    whole, by_regions = whole_and_split(egraph, roots)
    assert by_regions.regions == 3 and by_regions.status == "optimal"
    assert by_regions.cost == pytest.approx(whole.cost, rel=1e-9)
    check(egraph, roots, by_regions)
    heads = {egraph[f"h{b}"][by_regions.choice[f"h{b}"]].cost for b in range(6)}
    assert len(heads) == 1  # the same concat in every block, wherever its block lists it


def test_a_problem_is_its_regions_up_to_names_and_order():
    """Two like blocks, each with the class it reads as a leaf: one key, each block numbered from its
    head; a cost other by 1e-9 is another problem."""
    egraph, _ = block_chain(2, 0, alike=True)

    def block(b, leaf):
        return {**{cls: nodes for cls, nodes in egraph.items() if cls[1:].split("_")[0] == str(b)}, leaf: [N(0.0)]}

    first, second = block(0, "x"), block(1, "h0")
    assert [n.cost for n in first["m0"] + first["h0"]] != [n.cost for n in second["m1"] + second["h1"]]  # other orders
    key, order = problem(first, ["h0"])
    again, other = problem(second, ["h1"])
    assert again == key
    assert order[0][0] == "h0" and other[0][0] == "h1" and len(order) == len(first)
    for (cls, indices), (cls_b, indices_b) in zip(order, other):
        assert [first[cls][i].cost for i in indices] == [second[cls_b][i].cost for i in indices_b]
    second["m1"] = [replace(second["m1"][0], cost=second["m1"][0].cost + 1e-9)]
    assert problem(second, ["h1"])[0] != key


def test_only_regions_that_may_be_alike_are_refined():
    """Like blocks share a census (their e-nodes as a multiset), so they are keyed canonically, and
    find one key. A key without the refinement still describes its problem whole: a cost other by
    1e-9 is another key."""
    egraph, _ = block_chain(3, 0, alike=True)

    def block(b, leaf):
        return {**{cls: nodes for cls, nodes in egraph.items() if cls[1:].split("_")[0] == str(b)}, leaf: [N(0.0)]}

    first, second = block(1, "h0"), block(2, "h1")
    assert _census(first) == _census(second) != _census(egraph)
    assert problem(first, ["h1"])[0] == problem(second, ["h2"])[0]
    second["m2"] = [replace(second["m2"][0], cost=second["m2"][0].cost + 1e-9)]
    assert _census(first) != _census(second)
    assert problem(first, ["h1"], canonical=False)[0] != problem(second, ["h2"], canonical=False)[0]


@pytest.mark.parametrize("cyclic, fusing", [(True, False), (False, True), (True, True)])
def test_like_blocks_with_cycles_or_fusion_find_one_key(cyclic, fusing):
    """Acyclic regions are coloured in two passes (below, then above), a cyclic one by refinement:
    like blocks listing their e-nodes in orders of their own find one key either way, and a cost
    other by 1e-9 is another problem."""
    egraph, _ = block_chain(3, 0, alike=True, cyclic=cyclic, fusing=fusing)

    def block(b, leaf):
        return {**{cls: nodes for cls, nodes in egraph.items() if cls[1:].split("_")[0] == str(b)}, leaf: [N(0.0)]}

    first, second = block(1, "h0"), block(2, "h1")
    assert problem(first, ["h1"])[0] == problem(second, ["h2"])[0]
    second["m2"] = [replace(second["m2"][0], cost=second["m2"][0].cost + 1e-9)]
    assert problem(first, ["h1"])[0] != problem(second, ["h2"])[0]


def _random_region(seed: int, cyclic: bool):
    """A region of 5-25 classes with costs from three values (so that colours tie), children below a
    class, or anywhere if ``cyclic``."""
    rng = random.Random(seed)
    classes = [f"c{i}" for i in range(rng.randint(5, 25))]
    egraph = {}
    for i, cls in enumerate(classes):
        below = [c for c in classes if c != cls] if cyclic else classes[i + 1:]
        egraph[cls] = [N(float(rng.choice([1, 2, 3])), tuple(rng.sample(below, rng.randint(0, min(2, len(below))))), "op")
                       for _ in range(rng.randint(1, 3))]
    return egraph, [classes[0]]


@pytest.mark.parametrize("cyclic", [False, True])
def test_a_region_renamed_and_reordered_is_one_problem(cyclic):
    """A region with its classes renamed and listed in another order, each class's e-nodes shuffled,
    finds the key of the original (50 random regions each way)."""
    for seed in range(50):
        egraph, roots = _random_region(seed, cyclic)
        rng = random.Random(seed + 1000)
        names = list(egraph)
        renamed = dict(zip(names, rng.sample([f"r{k}" for k in range(len(names))], len(names))))
        copy = {}
        for cls in sorted(egraph, key=renamed.get):
            nodes = [N(n.cost, tuple(renamed[c] for c in n.children), n.op) for n in egraph[cls]]
            rng.shuffle(nodes)
            copy[renamed[cls]] = nodes
        assert problem(copy, [renamed[roots[0]]])[0] == problem(egraph, roots)[0], seed


@pytest.mark.parametrize("seed", range(4))
def test_by_regions_against_brute_force(monkeypatch, seed):
    egraph, roots = block_chain(2, seed, cyclic=True)
    monkeypatch.setattr(ilp, "REGION_NODES", 1)
    assert len(regions_of(egraph, roots)) == 4
    assert ilp_extract(egraph, roots).cost == pytest.approx(brute_force(egraph, roots))


def test_regions_share_the_time_limit(monkeypatch):
    """With no time, every region keeps its greedy choice: still a whole, acyclic extraction."""
    egraph, roots = block_chain(30, 3, cyclic=True)
    monkeypatch.setattr(ilp, "REGION_NODES", 1)
    _, [(chosen, status, _, _)], programs = ilp._solve(egraph, roots, {}, deadline=0.0)
    assert programs == len(regions_of(egraph, roots)) == 32
    classes = list(egraph)
    choice = {classes[position]: index for position, index in chosen}
    assert status == "time limit"
    check(egraph, roots, Extraction(choice, dag_cost(egraph, roots, choice), "ilp", 0.0))


@pytest.mark.parametrize("bypass", [False, True], ids=["at once", "in order"])
def test_no_region_is_given_less_than_a_solver_needs(bypass):
    """A share of the time by size gives each of 32 like regions (and 30 constants) a tenth of a
    3 s limit; a solver that needs most of a second (as HiGHS's start does on a loaded machine)
    would time out on each. Each region gets MIN_REGION_SECONDS, but none runs past the deadline."""
    egraph, roots = block_chain(30, 3, bypass=bypass)
    graph = Indexed(egraph)
    positions = graph.root_positions(roots)
    nodes = kept_nodes(graph, positions)
    parts = split(graph, nodes, positions, 1)
    assert len(parts) >= 32
    deadline = time.perf_counter() + 3.0

    def search(sub, heads, until):
        given = until - time.perf_counter()
        assert until <= deadline
        choice = greedy_dag_extract(sub, heads).choice
        return list(choice.items()), "optimal" if given > 0.9 * MIN_REGION_SECONDS else "time limit", 0.0, 0, "fake"

    status = solve_regions(egraph, graph, nodes, parts, roots, deadline, search).status
    assert status == "optimal"
    status = solve_regions(egraph, graph, nodes, parts, roots, time.perf_counter() + 0.5, search).status
    assert status == "time limit"


@pytest.mark.slow
def test_tensats_nasrnn_by_regions_builds_the_whole_programs_graph(monkeypatch):
    """Through optimize, on TENSAT's NasRNN under its rules and settings: its program (some 2,000
    kept e-nodes) is cut into its cells by default, as like regions (LIKE_REGION_NODES), and gives
    the whole program's cost, outputs equal. The cells after the first pose one problem, solved
    once: two programs."""
    from gsl_eq import models, optimize, rules
    from tests.conftest import assert_same_outputs

    wl = models.tensat_model("nasrnn")
    settings = dict(node_limit=50_000, iter_limit=15, multi_iterations=1, cycles="filter", cost="gpu")
    by_regions = optimize(wl, rules.tensat(), **settings)
    monkeypatch.setattr(ilp, "REGION_NODES", 10**9)
    monkeypatch.setattr(ilp, "LIKE_REGION_NODES", 10**9)
    monkeypatch.setattr(ilp, "UNLIKE_REGION_NODES", 10**9)
    whole = optimize(wl, rules.tensat(), **settings)
    assert whole.report.regions == 1 and by_regions.report.regions == 2
    assert by_regions.report.extraction_status == whole.report.extraction_status == "optimal"
    assert by_regions.report.cost_after == pytest.approx(whole.report.cost_after, rel=1e-9)
    assert by_regions.report.cost_after < 0.7 * by_regions.report.cost_before
    assert_same_outputs(wl, by_regions.workload, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_a_middling_program_is_cut_into_like_regions_a_larger_one_into_any(monkeypatch, seed):
    """Between LIKE_REGION_NODES and UNLIKE_REGION_NODES kept e-nodes, a program is cut only where two
    regions may pose one problem (a program of its own costs more than it saves otherwise): six
    blocks alike are cut, six unlike ones are not; past UNLIKE_REGION_NODES, and past REGION_NODES,
    both are, with the whole program's optimum."""
    monkeypatch.setattr(ilp, "LIKE_REGION_NODES", 1)
    monkeypatch.setattr(ilp, "UNLIKE_REGION_NODES", 10**9)
    monkeypatch.setattr(ilp, "REGION_NODES", 10**9)

    def cut(egraph, roots):
        graph = Indexed(egraph)
        positions = graph.root_positions(roots)
        nodes = kept_nodes(graph, positions)
        parts = ilp._regions(egraph, graph, nodes, positions)
        return parts, repeated(egraph, graph, nodes, split(graph, nodes, positions, 1))

    alike, unlike = block_chain(6, seed, alike=True), block_chain(6, seed)
    assert [len(parts) for parts, _ in (cut(*alike), cut(*unlike))] == [len(regions_of(*alike)), 0] == [8, 0]
    assert [like for _, like in (cut(*alike), cut(*unlike))] == [True, False]
    whole = ilp_extract(*unlike)
    monkeypatch.setattr(ilp, "UNLIKE_REGION_NODES", 1)
    assert len(cut(*unlike)[0]) == len(regions_of(*unlike)) == 8
    by_regions = ilp_extract(*unlike)
    assert whole.regions == 1 and by_regions.regions == 8 and by_regions.cost == pytest.approx(whole.cost, rel=1e-9)
    monkeypatch.setattr(ilp, "UNLIKE_REGION_NODES", 10**9)
    monkeypatch.setattr(ilp, "REGION_NODES", 1)
    assert len(cut(*unlike)[0]) == len(regions_of(*unlike)) == 8
    assert ilp_extract(*alike).regions == 3 and ilp_extract(*unlike).regions == 8
