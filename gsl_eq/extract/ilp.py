"""The exact extractor: the choice of least DAG cost, by an integer linear program solved by HiGHS.

The program is made small and tight before HiGHS sees it:

- only e-nodes that can be part of an acyclic term of finite cost, reachable from the
  roots, get a variable;
- in an e-class, an e-node is dropped if another costs no more and uses a subset of its
  child e-classes (commutative twins such as ``a + b`` and ``b + a`` are the common case):
  any solution using it can use the other instead; for a single extraction, also if another
  costs strictly less and uses a subset but for classes that cost nothing to read (parameters
  and what folds from them: a conv of TASO's merged-groups kernel, twice the FLOPs, for the conv
  of the kernel itself) (:mod:`.kept`);
- "a chosen e-node uses its children" is written once per (parent e-class, child
  e-class) pair — the parent's e-nodes that use the child, summed, are at most the
  child's e-nodes, summed — rather than once per e-node, so the LP relaxation cannot
  use a child fractionally because its parent is split across several e-nodes;
- one connectivity row: the chosen graph connects the leaves every term of the roots
  must contain, so its e-nodes, each weighted by its children minus one, sum to at
  least that many leaves minus the roots (on a sum of k terms: at least k - 1
  additions, which the LP otherwise spreads over many orders sharing their parts);
- a used tuple's parts are taken from it (:mod:`.parts`): where a split is used, each class
  one of its ``getitem`` parts belongs to takes that part, so no graph computes a part of a used
  split again some other way. Without these rows the relaxation covers a class by thirds of
  several partly used splits (Inception-v3's classes have up to 18 such parts);
- acyclicity is added lazily, as cuts: the program starts without it; when a solution
  chooses a cycle of e-classes ``c1 -> c2 -> ... -> ck -> c1``, the cut "at most k - 1
  of these k class edges are used" is added for each such cycle found, and HiGHS
  solves again (every solution is a lower bound; the first acyclic one is optimal).
  Topological-order constraints with a big M, the usual alternative, make the LP
  bound useless on TENSAT's cyclic e-graphs;
- the next best graphs (:func:`ilp_candidates`) come from no-good cuts: after each acyclic
  solution, "not all of its e-nodes reachable from the roots again" (their variables sum
  to at most their number minus one) is added, the warm start's bound is lifted, and
  HiGHS solves again (cycle cuts as before): each answer is the cheapest graph not found yet.

A single extraction of a large e-graph is solved region by region (:mod:`.regions`): where a
class alone leads to the classes below it, its cheapest term is found first, by a program of
its own, and the program above sees it as a leaf of that cost; the answer is the same.

HiGHS starts from the warm start (the greedy DAG choice by default) and its cost bounds
the objective, so the answer is never worse. HiGHS may overrun its own time limit
(presolve, the first relaxation), so everything runs in a child process that is stopped
at the limit (:func:`~gsl_eq.run.bounded.run_bounded`), but on e-graphs of at most
1,000 e-nodes, whose programs are built and solved within milliseconds of the limit.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import math
import os
import sys
import time
from collections.abc import Hashable, Mapping, Sequence

import highspy
import numpy as np
from scipy import sparse

from ..run.bounded import run_bounded
from .cpsat import CpSatProgram
from .cyclic import is_cyclic
from .extractors import (
    Extraction, ExtractGraph, Indexed, _extraction, _walk, dag_cost, greedy_dag_extract,
    is_acyclic, without_gc,
)
from .fusion import fusion_rows, fusion_terms, taken
from .implied import Contained, contained, implied_rows, tracks_all
from .kept import kept_nodes
from .parts import part_nodes, with_parts
from .regions import Region, repeated, solve_regions, split

__all__ = ["ilp_candidates", "ilp_extract"]

#: Off on saturated e-graphs: symmetry detection and the enumeration presolve rule (bit 16) took most of
#: some extractions' time, without effect on the result (BENCHMARKS.md, extraction).
HIGHS_OPTIONS = {"mip_detect_symmetry": False, "presolve_rule_off": 1 << 16}

def _silent_highs() -> highspy.Highs:
    """A HiGHS instance that prints nothing. Since highspy 1.16 the first instance of a process
    prints HiGHS's banner from C, before any option can be set: stdout's descriptor points to
    /dev/null meanwhile, C's buffers flushed on both sides."""
    with _stdout_to_devnull():
        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
    return highs


@contextlib.contextmanager
def _stdout_to_devnull():
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


SOLVERS = ("auto", "highs", "cp-sat")

#: The share of a program's time HiGHS has, with ``solver="auto"``, to presolve it; if it has not,
#: CP-SAT solves the program instead. (Only presolve is looked at: a search stopped to look at it would
#: start over, as HiGHS keeps its best between runs, not its tree.) HiGHS is the faster on most
#: programs of TENSAT's graphs and presolves them quickly, but probing the binaries of the e-graphs of
#: Hugging Face models under TASO's rules takes it long, where CP-SAT proves them optimal sooner; this
#: share tells the two kinds apart. Side by side: BENCHMARKS.md, extraction-solvers.
HIGHS_SHARE = 0.2
#: A program of fewer kept e-nodes goes to HiGHS without that look at its presolve: such programs
#: presolve quickly, so the look would only cost a second presolve; the programs whose presolve overran
#: the share were several times larger.
UNPROBED_NODES = 3000


def ilp_extract(
    egraph: ExtractGraph, roots: Sequence[Hashable], time_limit: float = 60.0, warm_start: Extraction | None = None,
    solver: str = "auto", regions: bool = True, parts: bool = True,
) -> Extraction:
    """The extraction of least DAG cost, or the best HiGHS finds within ``time_limit`` seconds.
    The search leaves out graphs that compute a part of a used split a second time (:mod:`.parts`).
    The returned choice is never worse than the warm start.

    Parameters
    ----------
    egraph
        The e-graph: each e-class's e-nodes (:class:`~gsl_eq.extract.ENodeCost`), by e-class.
    roots
        The e-classes to extract.
    time_limit
        Seconds for the whole search; past them the best choice found so far is returned.
    warm_start
        A choice for the same roots, HiGHS's starting point and a bound on the objective; by
        default :func:`~gsl_eq.extract.extractors.greedy_dag_extract`'s.
    solver
        ``"highs"`` (this module's program, cycles cut lazily), ``"cp-sat"`` (:mod:`.cpsat`:
        acyclicity in the model) or ``"auto"``: CP-SAT where the kept e-nodes put e-classes on a
        cycle, HiGHS otherwise, fusion rows (:mod:`.fusion`) or not, and CP-SAT for a program (of
        :data:`UNPROBED_NODES` kept e-nodes or more) HiGHS cannot presolve within
        :data:`HIGHS_SHARE` of its time. On TENSAT's graphs under its rules and the gpu model, both
        solvers find the same optima (BENCHMARKS.md, extraction-gpu).
    regions
        Solve a large e-graph region by region where it has regions (:mod:`.regions`), with the
        same optimum: often faster, sometimes the only way to finish within the time (BENCHMARKS.md,
        extraction-gpu). False solves it whole.
    parts
        Take a used split's parts from it (:mod:`.parts`); False searches every graph, those that
        compute a part twice too (BENCHMARKS.md's extraction-gpu section sets the two
        side by side).

    Returns
    -------
    Extraction
        ``status`` is ``"optimal"`` (``gap`` 0.0) when the solver proved optimality; otherwise it
        starts with ``"time limit"`` and ``gap`` is the relative gap between the returned cost and
        the lower bound (None if there is none). ``cycle_cuts`` counts the cycle cuts HiGHS needed
        (None if it did not answer); ``solver`` says which solver ran (``"highs, cp-sat"``: both, in
        turn); ``regions`` counts the programs solved (1: one for the whole; like regions are
        solved once).

    Examples
    --------
    >>> from gsl_eq.extract import ENodeCost as N
    >>> ilp_extract({"r": [N(1, ("a", "b"))], "a": [N(1, ("s",)), N(3)],
    ...              "b": [N(1, ("s",)), N(3)], "s": [N(3)]}, ["r"]).cost
    6.0
    """
    return ilp_candidates(egraph, roots, 1, time_limit, warm_start, solver, regions, parts)[0]


def ilp_candidates(
    egraph: ExtractGraph, roots: Sequence[Hashable], k: int, time_limit: float = 60.0,
    warm_start: Extraction | None = None, solver: str = "auto", regions: bool = True, parts: bool = True,
) -> list[Extraction]:
    """Up to ``k`` extractions with distinct chosen graphs in non-decreasing DAG cost:
    :func:`ilp_extract`'s, then the next best ones, all found within ``time_limit`` seconds.

    For measured selection: a cost model only estimates run time, so the K cheapest
    distinct graphs are timed with TVM and the fastest is kept. Each next graph is the
    cheapest not found yet (a no-good cut, see the module's notes), among the e-nodes the
    program keeps: a dominated e-node (another in its class costs no more and uses a
    subset of its children) is never chosen. Fewer than ``k`` come back when fewer
    distinct graphs exist there, or when time runs out; at least one always does: the
    warm start if HiGHS found nothing, or overran the limit (its process is stopped, and
    what it found is lost).

    Parameters
    ----------
    egraph, roots, time_limit, warm_start, solver, parts
        As in :func:`ilp_extract`; ``time_limit`` is for the whole search.
    k
        How many graphs at the most (at least 1).
    regions
        As in :func:`ilp_extract`, for the first graph only: the others are found whole.

    Returns
    -------
    list[Extraction]
        Sorted by cost. ``status`` ("optimal": proved cheapest of the graphs not found before),
        ``gap`` and ``cycle_cuts`` are as in :func:`ilp_extract`, per graph; ``time`` is the
        whole search's.

    Raises
    ------
    ValueError
        ``k`` below 1, an unknown ``solver``, or a cyclic ``warm_start``.

    Examples
    --------
    >>> from gsl_eq.extract import ENodeCost as N
    >>> egraph = {"r": [N(1, ("a",))], "a": [N(1, ("x",)), N(2, ("y",)), N(5)], "x": [N(1)], "y": [N(1)]}
    >>> [(c.cost, c.choice["a"]) for c in ilp_candidates(egraph, ["r"], 5)]
    [(3.0, 0), (4.0, 1), (6.0, 2)]
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k!r}")
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    start = time.perf_counter()
    if warm_start is None:
        warm_start, fallback_name = greedy_dag_extract(egraph, roots), "greedy DAG extraction"
    else:
        fallback_name = "warm start"
        if not is_acyclic(egraph, roots, warm_start.choice):
            raise ValueError("the warm start's choice is cyclic")
    fallback = warm_start.choice
    if not roots:
        return [_extraction("ilp", egraph, roots, {}, start, gap=0.0, status="optimal")]

    deadline = start + time_limit
    # told to finish a little early, so that its answer arrives before the deadline
    solved = run_bounded(lambda: _solve(egraph, roots, fallback, deadline - 0.1 * time_limit, k, solver, regions,
                                         parts),
                         deadline - time.perf_counter(), enodes=sum(map(len, egraph.values())))
    used_solver, outcomes, programs = solved if solved is not None else (
        "" if solver == "auto" else solver, [(None, "time limit", None, None)], None)
    classes = list(egraph)

    def extraction(choice: Mapping[Hashable, int], status: str, lower_bound: float | None,
                   cuts: int | None) -> Extraction:
        result = _extraction("ilp", egraph, roots, choice, start, status=status, cycle_cuts=cuts, solver=used_solver,
                             regions=programs)
        result.gap = 0.0 if status == "optimal" else _relative_gap(result.cost, lower_bound)
        return result

    found = [extraction({classes[position]: index for position, index in chosen}, status, lower_bound, cuts)
             for chosen, status, lower_bound, cuts in outcomes if chosen is not None]
    if not found:
        _, status, lower_bound, cuts = outcomes[0]
        return [extraction(fallback, f"{status}, no ILP solution: kept the {fallback_name}", lower_bound, cuts)]
    # the ILP's cost may exceed the warm start's by its tolerance
    if dag_cost(egraph, roots, fallback) < found[0].cost:
        _, status, lower_bound, cuts = outcomes[0]
        first = extraction(fallback, status, lower_bound, cuts)
        found = [first, *(candidate for candidate in found if candidate.choice != first.choice)]
    return sorted(found, key=lambda candidate: candidate.cost)[:k]


def _relative_gap(cost: float, lower_bound: float | None) -> float | None:
    if lower_bound is None or not math.isfinite(lower_bound):
        return None
    return max(cost - lower_bound, 0.0) / cost if cost > 0 else 0.0


# --- the program ---------------------------------------------------------------------------------


class _Program:
    """The extraction ILP over the kept e-nodes of an indexed e-graph, held by a HiGHS instance.

    Columns: ``chosen`` (binary) per kept e-node, then ``used`` (continuous, integral
    through the rows) per e-class. Rows: a class is used iff one of its e-nodes is
    chosen (a root is used); per (parent class, child class) pair, the parent's e-nodes
    that use the child, summed, are at most the child's ``used``; the connectivity row;
    a binary ``fused`` column and its rows per fusion term (:mod:`.fusion`); then the cycle
    and no-good cuts. Costs are scaled so that the warm start costs 10^4, well above HiGHS's
    tolerances.
    """

    def __init__(self, graph: Indexed, nodes: list[int], roots: list[int], bound: float, parts: bool = True):
        self.graph = graph
        self.nodes = nodes
        self.column = {node: col for col, node in enumerate(self.nodes)}
        node_class = np.asarray(graph.node_class, dtype=np.int64)[np.asarray(self.nodes, dtype=np.int64)]
        self.classes, self.class_of = np.unique(node_class, return_inverse=True)  # class rows, per column
        n_nodes, n_classes = len(self.nodes), len(self.classes)
        self.used = n_nodes  # first "used" column
        self.row_of_class = {int(cls): k for k, cls in enumerate(self.classes)}

        # the (parent class row, child class row) pair of every (e-node column, child)
        edge_col, edge_child = [], []
        for col, node in enumerate(self.nodes):
            for child in graph.node_children[node]:
                edge_col.append(col)
                edge_child.append(self.row_of_class[child])
        edge_col_array = np.asarray(edge_col, dtype=np.int64)
        edges = np.stack([self.class_of[edge_col_array], np.asarray(edge_child, dtype=np.int64)], axis=1)
        self.pairs, edge_pair = np.unique(edges.reshape(-1, 2), axis=0, return_inverse=True)
        edge_pair = edge_pair.ravel()
        n_pairs = len(self.pairs)
        self.pair_columns = np.split(edge_col_array[np.argsort(edge_pair, kind="stable")],
                                     np.cumsum(np.bincount(edge_pair, minlength=n_pairs))[:-1]) if n_pairs else []

        # rows 0..n_classes-1: chosen e-nodes of the class - used = 0; then per pair: using e-nodes - used(child) <= 0
        class_rows = np.arange(n_classes)
        rows = np.concatenate([self.class_of, class_rows, n_classes + edge_pair, n_classes + np.arange(n_pairs)])
        cols = np.concatenate([np.arange(n_nodes), n_nodes + class_rows, edge_col_array, n_nodes + self.pairs[:, 1]])
        values = np.concatenate([np.ones(n_nodes), -np.ones(n_classes), np.ones(len(edge_col)), -np.ones(n_pairs)])
        self.roots, self.terms = roots, fusion_terms(graph, nodes, roots)
        self.fused = n_nodes + n_classes  # first "fused" column
        n_cols, n_rows = n_nodes + n_classes + len(self.terms), n_classes + n_pairs
        matrix = sparse.csc_matrix((values, (rows, cols)), shape=(n_rows, n_cols))

        col_lower = np.zeros(n_cols)
        col_lower[[n_nodes + self.row_of_class[root] for root in roots]] = 1.0  # the roots are used
        self.scale = 1e4 / bound if bound > 0 else 1.0
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = n_cols, n_rows
        lp.col_cost_ = np.concatenate([np.asarray([graph.node_cost[node] for node in self.nodes]) * self.scale,
                                       np.zeros(n_classes), [-term.saving * self.scale for term in self.terms]])
        self.col_cost = np.asarray(lp.col_cost_)
        lp.col_lower_, lp.col_upper_ = col_lower, np.ones(n_cols)
        lp.row_lower_ = np.concatenate([np.zeros(n_classes), np.full(n_pairs, -highspy.kHighsInf)])
        lp.row_upper_ = np.zeros(n_rows)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = matrix.indptr, matrix.indices, matrix.data
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n_cols, n_rows
        lp.integrality_ = ([highspy.HighsVarType.kInteger] * n_nodes + [highspy.HighsVarType.kContinuous] * n_classes
                           + [highspy.HighsVarType.kInteger] * len(self.terms))
        self.highs = _silent_highs()
        self.highs.setOptionValue("mip_rel_gap", 0.0)
        for key, value in HIGHS_OPTIONS.items():
            self.highs.setOptionValue(key, value)
        self.highs.setOptionValue("objective_bound", 1e4 * (1 + 1e-9) + 1e-9 if bound > 0 else 1e-9)
        self.highs.passModel(lp)

        self.pair_of = {(int(parent), int(child)): k for k, (parent, child) in enumerate(self.pairs)}
        self.cuts = 0
        found = contained(graph, nodes) if tracks_all(graph, nodes) else None
        self._connect(roots, found)
        self._imply(found)
        self._fuse()
        self.parts = self._take_parts() if parts else []

    def _connect(self, roots: list[int], found: Contained | None) -> None:
        """The connectivity row: Σ (children - 1) · chosen ≥ leaves - roots.

        A leaf class (all its e-nodes have no children) that every term of a root must
        contain is a vertex of the chosen graph; that graph's part reachable from the r
        roots has at most r weakly connected components, so its edges are at least its
        vertices minus r: the chosen e-nodes, each counted for its children minus one,
        sum to at least these leaves minus r. Without it, the LP spreads a sum of k
        terms over many fractional orders that share their parts and pays a fraction of
        the k - 1 additions any order needs. ``found``: what every term of each class contains, if
        known (tracking every class); else found here for the leaf classes alone.
        """
        if found is None:
            found = contained(self.graph, self.nodes, leaves_only=True)
        leaf = sum(1 << found.index[cls] for cls in found.leaves)  # the bits of the leaf classes
        reached = 0
        for root in roots:
            reached |= found.sets[root] | (1 << found.index[root] if root in found.index else 0)
        needed = (reached & leaf).bit_count() - len(set(roots))
        merging = [col for col, node in enumerate(self.nodes) if len(self.graph.node_children[node]) >= 2]
        if needed <= 0 or not merging:
            return
        weights = [len(self.graph.node_children[self.nodes[col]]) - 1.0 for col in merging]
        self.highs.addRow(float(needed), highspy.kHighsInf, len(merging), np.asarray(merging, dtype=np.int32),
                          np.asarray(weights))

    def _imply(self, found: Contained | None) -> None:
        """The rows of :func:`.implied.implied_rows`: what every term of a class contains is used."""
        pairs, partial = implied_rows(self.graph, self.nodes, found) if found is not None else ([], [])
        rows = [[self.used + self.row_of_class[cls], self.used + self.row_of_class[inner]] for cls, inner in pairs]
        values = [[1.0, -1.0]] * len(pairs)
        for nodes, inner in partial:
            rows.append([*(self.column[node] for node in nodes), self.used + self.row_of_class[inner]])
            values.append([1.0] * len(nodes) + [-1.0])
        if not rows:
            return
        starts = np.cumsum([0] + [len(row) for row in rows[:-1]]).astype(np.int32)
        self.highs.addRows(len(rows), np.full(len(rows), -highspy.kHighsInf), np.zeros(len(rows)),
                           int(starts[-1]) + len(rows[-1]), starts,
                           np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int32),
                           np.fromiter(itertools.chain.from_iterable(values), dtype=np.float64))

    def _fuse(self) -> None:
        """The fusion terms' rows (:func:`.fusion.fusion_rows`)."""
        rows = fusion_rows(self.terms)
        if not rows:
            return
        columns = [[self.fused + k for k, _ in row.terms] + [self.column[n] for n, _ in row.nodes] for row in rows]
        values = [[c for _, c in row.terms] + [c for _, c in row.nodes] for row in rows]
        starts = np.cumsum([0] + [len(c) for c in columns[:-1]]).astype(np.int32)
        self.highs.addRows(len(rows), np.full(len(rows), -highspy.kHighsInf), np.asarray([row.upper for row in rows]),
                           int(starts[-1]) + len(columns[-1]), starts,
                           np.fromiter(itertools.chain.from_iterable(columns), dtype=np.int32),
                           np.fromiter(itertools.chain.from_iterable(values), dtype=np.float64))

    def _take_parts(self) -> list[int]:
        """The parts rows (:mod:`.parts`): ``chosen[part] = used[tuple]``; returns those part e-nodes."""
        parts = part_nodes(self.graph, self.nodes)
        if parts:
            cols = np.asarray([[self.column[node], self.used + self.row_of_class[self.graph.parts[node]]]
                               for node in parts], dtype=np.int32).ravel()
            self.highs.addRows(len(parts), np.zeros(len(parts)), np.zeros(len(parts)), len(cols),
                               np.arange(0, len(cols), 2, dtype=np.int32), cols, np.tile([1.0, -1.0], len(parts)))
        return parts

    def start_from(self, choice: dict[int, int]) -> None:
        """Give HiGHS a solution: class position -> e-node number. A part of a used tuple whose
        class the choice does not use is added to it (it costs nothing), as the parts rows ask."""
        column = self.column
        values = np.zeros(self.highs.getNumCol())
        for node in with_parts(self.graph, self.parts, choice).values():
            if node in column:  # pruned e-nodes are never in a choice reachable from the roots
                values[column[node]] = 1.0
                values[self.used + self.class_of[column[node]]] = 1.0
        if self.terms:
            on = taken(self.graph, self.terms, choice, self.roots)
            values[self.fused: self.fused + len(self.terms)] = np.asarray(on, dtype=float)
        solution = highspy.HighsSolution()
        solution.col_value = list(values)
        solution.value_valid = True
        self.highs.setSolution(solution)

    def presolves_by(self, deadline: float) -> bool:
        """Whether HiGHS's presolve of the program ends before ``deadline`` (it stops there
        otherwise; probing the many binaries of a transformer's program can take minutes)."""
        self.highs.setOptionValue("time_limit", max(deadline - time.perf_counter(), 0.0))
        self.highs.presolve()
        return time.perf_counter() < deadline

    def solve(self, deadline: float) -> tuple[dict[int, int] | None, bool, float | None]:
        """(the chosen e-node per used class position, or None; optimality proved; lower bound, unscaled)."""
        self.highs.setOptionValue("time_limit", max(deadline - time.perf_counter(), 0.0))
        self.highs.run()
        if self._misreported():
            # HiGHS 1.16 can map a MIP start through presolve wrongly (seen with fusion rows): it
            # then reports the optimum's objective with the start's columns. Solved again without it.
            self.highs.clearSolver()
            self.highs.setOptionValue("time_limit", max(deadline - time.perf_counter(), 0.0))
            self.highs.run()
        status = self.highs.getModelStatus()
        info = self.highs.getInfo()
        bound = info.mip_dual_bound / self.scale if math.isfinite(info.mip_dual_bound) else None
        if info.primal_solution_status != 2:  # no feasible solution
            return None, False, bound
        values = np.asarray(self.highs.getSolution().col_value[: len(self.nodes)])
        choice = {}
        for col in np.flatnonzero(values > 0.5):
            choice.setdefault(self.graph.node_class[self.nodes[col]], self.nodes[col])
        return choice, status == highspy.HighsModelStatus.kOptimal, bound

    def _misreported(self) -> bool:
        """Whether HiGHS's solution costs other than the objective it reports."""
        if self.highs.getInfo().primal_solution_status != 2:
            return False
        values = np.asarray(self.highs.getSolution().col_value)
        actual = float(values[: len(self.col_cost)] @ self.col_cost)
        return abs(actual - self.highs.getInfo().objective_function_value) > 1e-6 * max(abs(actual), 1e4)

    def cut(self, cycles: Sequence[Sequence[int]]) -> None:
        """For each cycle of class positions ``c1 -> ... -> ck`` (``ck -> c1`` implied): at
        most k - 1 of its class edges are used, whichever e-nodes use them."""
        starts, indices = [], []
        for cycle in cycles:
            starts.append(len(indices))
            rows = [self.row_of_class[cls] for cls in cycle]
            for parent, child in zip(rows, rows[1:] + rows[:1]):
                indices.extend(int(col) for col in self.pair_columns[self.pair_of[parent, child]])
        uppers = np.asarray([len(cycle) - 1.0 for cycle in cycles])
        self.highs.addRows(len(cycles), np.full(len(cycles), -highspy.kHighsInf), uppers, len(indices),
                           np.asarray(starts, dtype=np.int32), np.asarray(indices, dtype=np.int32),
                           np.ones(len(indices)))
        self.cuts += len(cycles)

    def forbid(self, nodes: Sequence[int]) -> None:
        """The no-good cut: not all of these e-nodes (a solution's, reachable from the roots)
        again. It can cut off solutions dearer than the warm start, so its bound is lifted."""
        cols = np.asarray([self.column[node] for node in nodes], dtype=np.int32)
        self.highs.addRow(-highspy.kHighsInf, len(cols) - 1.0, len(cols), cols, np.ones(len(cols)))
        self.lift_bound()

    def lift_bound(self) -> None:
        """Search past the warm start's cost from now on."""
        self.highs.setOptionValue("objective_bound", highspy.kHighsInf)

    def infeasible(self) -> bool:
        """Whether HiGHS proved that the program has no solution."""
        return self.highs.getModelStatus() in (highspy.HighsModelStatus.kInfeasible,
                                               highspy.HighsModelStatus.kUnboundedOrInfeasible)


def _solve(
    egraph: ExtractGraph, roots: Sequence[Hashable], fallback: dict[Hashable, int], deadline: float, k: int = 1,
    solver: str = "auto", regions: bool = True, parts: bool = True,
) -> tuple[str, list[tuple[list[tuple[int, int]] | None, str, float | None, int]], int]:
    """Build and solve the program, cutting off the cycles of each solution until one is
    acyclic, then that solution by a no-good cut, until ``k`` are found. Returns the solver
    used, the programs solved and, per solution, (the choice as (class position, e-node index) pairs; status;
    lower bound; cycle cuts so far), then, if fewer than ``k``, why not, with None for the
    choice (status ``"exhausted"`` when the solver proved there is no other). Positions
    index ``list(egraph)``, so the answer crosses a process boundary. A single extraction
    is solved region by region (:mod:`.regions`) where the e-graph has regions."""
    # This runs in a fork but on small e-graphs: HiGHS's thread pool, if the parent ever ran HiGHS,
    # was not forked with it, and HiGHS would wait on it forever. A fresh pool for this process
    # (run in this process, between two solves, it only starts the pool afresh).
    highspy.Highs.resetGlobalScheduler(False)
    with without_gc():
        graph = Indexed(egraph)
        root_positions = graph.root_positions(roots)
        nodes = kept_nodes(graph, root_positions, cheapest_only=k == 1)
        handover = solver == "auto"
        if solver == "auto":
            solver = "cp-sat" if is_cyclic(graph, nodes) else "highs"
        pieces = _regions(egraph, graph, nodes, root_positions) if regions and k == 1 else []
    if len(pieces) > 1:

        def search(sub: ExtractGraph, heads: Sequence[Hashable], until: float) -> Outcome:
            highspy.Highs.resetGlobalScheduler(False)  # in a fork of a process that may have run HiGHS
            with without_gc():
                sub_graph = Indexed(sub)
                warm = greedy_dag_extract(sub, heads, indexed=sub_graph)
                # a region holds kept e-nodes only, all reached from its heads (.regions): all kept again
                kept = list(range(len(sub_graph.node_class)))
            found = _search(sub, heads, sub_graph, kept, _numbered(sub_graph, warm.choice), until, 1, solver,
                            parts, handover)[0]
            return found if found[0] is not None else (list(warm.choice.items()), "time limit", None, *found[3:])

        with without_gc():  # a collection amid the regions' keys would traverse the whole e-graph, for nothing
            solved = solve_regions(egraph, graph, nodes, pieces, roots, deadline, search)
        order, _ = _walk(egraph, roots, solved.choice)
        programs = solved.programs
        outcome = [([(cls, solved.choice[cls]) for cls in order], solved.status, solved.bound, solved.cuts,
                    solved.solvers)]
    else:
        programs = 1
        outcome = _search(egraph, roots, graph, nodes, _numbered(graph, fallback), deadline, k, solver, parts,
                          handover)
    ran = ", ".join(name for name in ("highs", "cp-sat") if any(name in o[4] for o in outcome)) or solver
    return ran, [(None if chosen is None else [(graph.position[cls], index) for cls, index in chosen],
                  status, bound, cuts) for chosen, status, bound, cuts, _ in outcome], programs


def _numbered(graph: Indexed, choice: Mapping[Hashable, int]) -> dict[int, int]:
    """A choice (e-class id -> e-node index) as class position -> e-node number."""
    return {graph.position[cls]: graph.class_nodes[graph.position[cls]][index] for cls, index in choice.items()}


Outcome = tuple[list[tuple[Hashable, int]] | None, str, float | None, int, str]
"""(the chosen e-node index per class, children first, or None; status; lower bound; cycle cuts;
the solvers that ran, as the result's ``solver`` names them)."""


def _search(
    egraph: ExtractGraph, roots: Sequence[Hashable], graph: Indexed, nodes: list[int], start: dict[int, int],
    deadline: float, k: int, solver: str, parts: bool = True, handover: bool = False,
) -> list[Outcome]:
    """:func:`_solve`'s loop on one program over the kept e-nodes ``nodes``, from ``start``
    (class position -> e-node number, a feasible choice), with parts rows if ``parts``. With
    ``handover``, a single search whose program (of :data:`UNPROBED_NODES` kept e-nodes or more) HiGHS
    cannot presolve within :data:`HIGHS_SHARE` of the time is CP-SAT's; else HiGHS solves it with all the
    time (presolving again: a search interrupted to look at it would start over, and lose its tree)."""
    root_positions = graph.root_positions(roots)
    with without_gc():
        warm = graph.choice(start)
        bound = dag_cost(egraph, roots, warm)
        program = (CpSatProgram if solver == "cp-sat" else _Program)(graph, nodes, root_positions, bound, parts)
    ran = solver
    now = time.perf_counter()
    if (handover and k == 1 and solver == "highs" and len(nodes) >= UNPROBED_NODES
            and not program.presolves_by(now + HIGHS_SHARE * (deadline - now))):
        with without_gc():  # HiGHS's presolve would take more than its share: CP-SAT's turn
            program = CpSatProgram(graph, nodes, root_positions, bound, parts)
        ran = "highs, cp-sat"
    outcomes: list[Outcome] = []
    lower_bound = None  # every round's bound holds in the later ones: they only add cuts, and answer no cheaper
    while True:
        if not outcomes:  # the warm start violates the no-good cuts
            program.start_from(start)
        choice, optimal, bound = program.solve(deadline)
        if bound is not None:
            lower_bound = bound if lower_bound is None else max(lower_bound, bound)
        if choice is None and not outcomes and program.infeasible() and isinstance(program, _Program):
            # nothing the program holds costs as little as the start, its objective bound: the start,
            # a graph outside the program (it computes a part of a used split twice, see .parts), is
            # the cheapest; the next ones are searched for in the program without that bound
            order, _ = _walk(egraph, roots, warm)
            outcomes.append(([(cls, warm[cls]) for cls in order], "optimal", lower_bound, program.cuts, ran))
            if len(outcomes) == k:
                return outcomes
            program.lift_bound()
            continue
        if choice is None:
            status = "exhausted" if outcomes and program.infeasible() else "time limit"
            return [*outcomes, (None, status, lower_bound, program.cuts, ran)]
        cycles = _cycles(graph, root_positions, choice)
        if not cycles:
            chosen = graph.choice(choice)
            try:
                order, _ = _walk(egraph, roots, chosen)
            except ValueError:  # numerically off: a used class without a chosen e-node
                return [*outcomes, (None, f"{ran} returned an inconsistent solution", lower_bound, program.cuts, ran)]
            outcomes.append(([(cls, chosen[cls]) for cls in order], "optimal" if optimal else "time limit",
                             lower_bound, program.cuts, ran))
            if len(outcomes) == k:
                return outcomes
        if time.perf_counter() >= deadline:
            return [*outcomes, (None, "time limit", lower_bound, program.cuts, ran)]
        if cycles:
            program.cut(cycles)
        else:
            program.forbid([choice[graph.position[cls]] for cls in order])


#: A program of fewer kept e-nodes is solved whole, or region by region (:mod:`.regions`) as said below; a
#: larger one region by region, in regions of at least a quarter of that.
REGION_NODES = 4000
#: A program of this many kept e-nodes or more, fewer than :data:`REGION_NODES`, is solved region by
#: region (of at least a quarter of this) where two regions may pose one problem, solved once: a model of
#: repeated cells (a recurrent network's) then pays for one cell's program instead of all of them at once.
LIKE_REGION_NODES = 1000
#: A program of this many kept e-nodes or more, fewer than :data:`REGION_NODES`, whose regions pose
#: problems of their own, is solved region by region too (of at least a quarter of this). A program of
#: its own costs some time to set up, so small regions gain little, but a whole program can cost HiGHS
#: far more than its regions do: an e-graph grown by multi-pattern rules in every iteration can be left
#: open whole within its time and solved as a few regions (BENCHMARKS.md, extraction).
UNLIKE_REGION_NODES = 2000


def _regions(egraph: ExtractGraph, graph: Indexed, nodes: list[int], roots: list[int]) -> list[Region]:
    """The regions to solve the kept e-nodes ``nodes`` by (:data:`REGION_NODES`, :data:`LIKE_REGION_NODES`,
    :data:`UNLIKE_REGION_NODES`); none where the program is to be solved whole."""
    if len(nodes) >= REGION_NODES:
        return split(graph, nodes, roots, max(1, REGION_NODES // 4))
    if len(nodes) >= LIKE_REGION_NODES:
        pieces = split(graph, nodes, roots, max(1, LIKE_REGION_NODES // 4))
        if repeated(egraph, graph, nodes, pieces):
            return pieces
    if len(nodes) >= UNLIKE_REGION_NODES:
        return split(graph, nodes, roots, max(1, UNLIKE_REGION_NODES // 4))
    return []


def _cycles(graph: Indexed, roots: list[int], choice: dict[int, int]) -> list[list[int]]:
    """Cycles of the chosen graph reachable from the roots, as class positions: one per back
    edge of a depth-first search, so at least one in every cyclic strongly connected part."""
    state: dict[int, bool] = {}  # False while on the search stack
    cycles = []
    for root in roots:
        if root in state:
            continue
        state[root] = False
        path = [root]
        stack = [iter(graph.node_children[choice[root]])]
        while stack:
            for child in stack[-1]:
                if child not in state:
                    state[child] = False
                    path.append(child)
                    stack.append(iter(graph.node_children[choice[child]]))
                    break
                if state[child] is False:  # a back edge closes a cycle
                    cycles.append(path[path.index(child):])
            else:
                stack.pop()
                state[path.pop()] = True
    return cycles
