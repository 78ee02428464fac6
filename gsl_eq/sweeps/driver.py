"""Sweeps: every cell of a grid an :func:`~gsl_eq.optimizer.optimize` run as a Ray task, its line
streamed to a JSON Lines file as it finishes; a rerun on the same file runs only what is missing.

    result = gsl_eq.sweep(["bert", "nasrnn"], ["default", "tensat+default"], ["greedy", "saturate"],
                          ["roofline", "opcount"], quick=True, output="sweep.jsonl")
    result = gsl_eq.sweep(..., address="auto")       # on the Ray cluster this machine belongs to
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..run.cluster import MAX_RETRIES, Cluster, Finished, check_address
from ..run.limits import Limits
from .cells import Cell, grid
from .results import ResultsFile
from .summary import SweepResult
from .task import plain, run_cell


def sweep(
    models: Sequence[str],
    rules: Sequence[str] = ("default",),
    modes: Sequence[str] = ("saturate",),
    costs: Sequence[str] = ("roofline",),
    extractors: Sequence[str] = ("ilp",),
    *,
    orderings: int | None = None,
    seed: int = 0,
    quick: bool = False,
    output: str | Path | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    cpus_per_cell: float = 1,
    spread: bool = False,
    max_retries: int = MAX_RETRIES,
    retry_failed: bool = False,
    progress: bool = False,
    on_line: Callable[[dict[str, Any]], None] | None = None,
    runtime_env: dict[str, Any] | None = None,
    limits: Limits | None = None,
    **options: Any,
) -> SweepResult:
    """Run every cell of ``models`` x ``rules`` x ``modes`` x ``costs`` (x ``extractors`` for saturate
    mode, x ``orderings`` rule orderings for greedy mode: see :func:`~gsl_eq.sweeps.cells.grid`) as a
    Ray task, and return their lines (:class:`~gsl_eq.sweeps.summary.SweepResult`).

    ``models``: names (``quick``: the benchmark suite's small versions) or ``.py`` files as
    ``gsl-eq optimize`` takes them; ``rules``: rule set names or sums (``tensat+default``, see
    :mod:`gsl_eq.rules.sets`); ``options``: the limits every cell's ``optimize`` gets
    (``node_limit``, ``iter_limit``, ``time_limit``, ``ilp_time_limit``, ``multi_iterations``,
    ``cycles``, ``search``); ``limits``: the first three as one :class:`~gsl_eq.run.limits.Limits` (``options``
    override it). Each task builds its model and rules from their names and returns its line
    (:func:`~gsl_eq.sweeps.task.run_cell`). The tasks run on a pool of worker processes (Ray actors,
    one per ``cpus_per_cell`` CPUs), each fed the cells sharing most with what it ran
    (:func:`shared_work`): a worker keeps the models it built and the checks it made.

    ``output``: a JSON Lines file each line is appended to as its cell finishes (whole lines,
    synced). Cells whose line is already in it are not run again (with ``retry_failed``, those
    whose line has an error are). ``address``: the Ray cluster (``"auto"``, ``"ray://HOST:PORT"``,
    a head's ``"HOST:PORT"``); None starts a local instance with ``num_cpus`` CPUs (default:
    every core). Each cell takes ``cpus_per_cell`` CPUs; ``spread`` places cells on as many nodes
    as possible. A cell whose worker dies runs again, up to ``max_retries`` times, then its line
    records the error; a cell whose ``optimize`` raises is recorded with its error at once. Either
    way the sweep goes on. ``progress`` draws a progress bar on terminals; ``on_line`` is called
    with each line as it is recorded.
    """
    start = time.perf_counter()
    check_address(address)
    if limits is not None:  # the same limits as optimize's, as one object; keyword arguments override it
        options = {**dataclasses.asdict(Limits.of(limits)), **options}
    cells = grid(models, rules, modes, costs, extractors, orderings=orderings, seed=seed, quick=quick, **options)
    store = ResultsFile(output) if output is not None else None
    known: dict[str, dict[str, Any]] = {}
    if store is not None:
        store.repair()
        known = store.latest()
    todo = [c for c in cells if c.key not in known or (retry_failed and known[c.key].get("error"))]
    lines = {c.key: known[c.key] for c in cells if c.key in known}
    resumed = len(cells) - len(todo)
    if todo:
        with Cluster(address, num_cpus, runtime_env) as cluster, _bar(progress, len(cells), resumed) as advance:
            for finished in cluster.run(run_cell, [(cell,) for cell in todo], num_cpus=cpus_per_cell,
                                        max_retries=max_retries, spread=spread, affinity=shared_work):
                cell = todo[finished.index]
                line = _line(cell, finished)
                if store is not None:
                    store.append(line)
                lines[cell.key] = line
                advance(line)
                if on_line is not None:
                    on_line(line)
    return SweepResult([lines[c.key] for c in cells], ran=len(todo), resumed=resumed,
                       path=None if output is None else Path(output), seconds=time.perf_counter() - start,
                       ran_on={lines[c.key]["node"] for c in todo if lines[c.key].get("node")})


def shared_work(cell: Cell) -> tuple[Any, ...]:
    """What a cell shares with others in a worker process, most general first: the model (built once,
    its reference outputs computed once for every check), then the rules, mode and ordering (greedy
    mode gives one graph under every cost model: checked once)."""
    return cell.model, cell.quick, cell.rules, cell.mode, cell.ordering


def _line(cell: Cell, finished: Finished) -> dict[str, Any]:
    """The line of a finished task: the cell's own, or, when its task failed (its worker died more
    often than it is retried), the cell's identity with the error."""
    if finished.error is None and isinstance(finished.value, dict):
        line = dict(finished.value)
    else:
        line = {"key": cell.key, **cell.identity(), "error": finished.error or "the task returned no line"}
    line.update(node=finished.node, node_ip=finished.node_ip)
    return plain(line)


@contextlib.contextmanager
def _bar(show: bool, total: int, done: int) -> Iterator[Callable[[dict[str, Any]], None]]:
    """A rich progress bar over the cells on terminals (nothing elsewhere); yields what advances it."""
    if not show:
        yield lambda line: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=False)
    with Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=console, transient=True,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task("sweep", total=total, completed=done, last="")

        def advance(line: dict[str, Any]) -> None:
            status = "failed" if line.get("error") else f"{line.get('speedup') or 0:.3f}x"
            bar.update(task, advance=1, last=f"{Path(str(line.get('model'))).name} · {line.get('rules')} · "
                                             f"{line.get('mode')}: {status}")

        yield advance
