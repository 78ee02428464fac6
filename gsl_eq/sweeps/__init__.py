"""Sweeps: many models x rule sets x modes x cost models (x extractors, x rule orderings for greedy
mode), each cell an :func:`~gsl_eq.optimizer.optimize` run as a Ray task, on this machine or a cluster.

- :mod:`~gsl_eq.sweeps.cells`: the grid, one :class:`Cell` per run, each with a stable key;
- :mod:`~gsl_eq.sweeps.task`: one cell's work in a worker (:func:`run_cell`), its line as plain data;
- :mod:`~gsl_eq.sweeps.results`: the JSON Lines file, appended line by line, read back to resume;
- :mod:`~gsl_eq.sweeps.summary`: the lines as a table, a chart and a page (:class:`SweepResult`);
- :mod:`~gsl_eq.sweeps.driver`: :func:`sweep`, which runs them on :class:`gsl_eq.run.cluster.Cluster`.

Ray is needed only to run a sweep: ``pip install "gsl_eq[ray]"``.
"""

from .cells import OPTIONS, Cell, grid
from .driver import sweep
from .results import ResultsFile
from .summary import SweepResult
from .task import run_cell

__all__ = ["OPTIONS", "Cell", "ResultsFile", "SweepResult", "grid", "run_cell", "sweep"]
