"""What calling a rule on a workload runs (``rule(wl)``): the executor registered here.

The language (:mod:`gsl_eq.frontend`) imports no executor; it asks this registry. Greedy mode
registers itself when imported, and the package names it the default (``gsl_eq/__init__.py``),
imported on the first call if nothing is registered by then.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from ..errors import GslEqError

Apply = Callable[[Any, Any, bool], Any]  # (rule, workload, fold_params) -> the new workload

_registered: list[Apply] = []
_default: list[str] = []


def register(apply: Apply) -> None:
    """Make ``apply(rule, wl, fold_params)`` what calling a rule on a workload does."""
    _registered[:] = [apply]


def set_default(module: str) -> None:
    """The module that registers an executor when imported, if none is registered at the first call."""
    _default[:] = [module]


def apply(rule: Any, wl: Any, fold_params: bool) -> Any:
    """Apply ``rule`` to workload ``wl`` with the registered executor; returns the new workload."""
    if not _registered and _default:
        importlib.import_module(_default[0])
    if not _registered:
        raise GslEqError("no executor is registered to apply a rule to a workload: import gsl_eq.greedy")
    return _registered[0](rule, wl, fold_params)
