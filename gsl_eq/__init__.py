"""gsl_eq: GSL graph substitution rules for TVM Relax, greedy or by equality saturation.

Importing the package is light: each exported name loads its module (and TVM,
egglog...) on first use, so ``gsl-eq --help`` answers at once. ``from gsl_eq
import X`` works as usual for every X in ``__all__``.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from .run import executors
from .errors import ArgumentError, GslEqError, UnsupportedModuleError, WorkloadError

executors.set_default(f"{__name__}.greedy")  # calling a rule runs greedy mode: wired here, not in the language

#: The names the package exports lazily, by the module that defines them. To export a name, add it here.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "cost": ("CostModel",),
    "frontend": ("GSLError", "Subst", "attr", "op", "pat", "spec"),
    "graph": ("Graph", "from_relax", "to_relax"),
    "greedy.explain": ("Explanation", "explain"),
    "optimizer": ("OptimizeReport", "OptimizeResult", "optimize"),
    "orderings": ("OrderingComparison", "compare_orderings"),
    "run.limits": ("Limits",),
    "soundness": ("RuleCheck", "check_rule"),
    "sweeps": ("SweepResult", "sweep"),
    "workload": ("FoldWarning", "Unfolded", "Workload"),
    "workload.portable": ("export",),
}
#: Subpackages the README's first examples use, exported by name (``from gsl_eq import rules``).
_SUBPACKAGES = ("models", "rules")
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(["ArgumentError", "GslEqError", "UnsupportedModuleError", "WorkloadError", *_MODULE_OF,
                  *_SUBPACKAGES])


def __getattr__(name: str) -> Any:
    """An exported name, imported from its module on first use; or a submodule (``gsl_eq.rules``)."""
    if name in _MODULE_OF:
        value = getattr(importlib.import_module(f".{_MODULE_OF[name]}", __name__), name)
        setattr(sys.modules[__name__], name, value)
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    loaded = (name for name, value in globals().items() if isinstance(value, types.ModuleType)
              and value.__name__.startswith(f"{__name__}."))
    return sorted({*__all__, *loaded})
