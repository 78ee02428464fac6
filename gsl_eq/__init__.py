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

from . import executors
from .errors import ArgumentError, GslEqError, UnsupportedModuleError, WorkloadError

executors.set_default(f"{__name__}.greedy")  # calling a rule runs greedy mode: wired here, not in the language

#: The names the package exports lazily, by the module that defines them. To export a name, add it here.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "frontend": ("GSLError", "Subst", "attr", "op", "pat", "spec"),
    "graph": ("Graph", "from_relax", "to_relax"),
    "greedy.explain": ("Explanation", "explain"),
    "optimize": ("OptimizeReport", "OptimizeResult", "optimize"),
    "orderings": ("OrderingComparison", "compare_orderings"),
    "portable": ("export",),
    "soundness": ("RuleCheck", "check_rule"),
    "sweep": ("SweepResult", "sweep"),
    "workload": ("FoldWarning", "Unfolded", "Workload"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(["ArgumentError", "GslEqError", "UnsupportedModuleError", "WorkloadError", *_MODULE_OF])


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


class _Package(types.ModuleType):
    """The package module. ``gsl_eq.optimize`` is both a submodule and the function it defines: importing
    the submodule binds it on the package, and the package keeps the function under that name instead."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _MODULE_OF and isinstance(value, types.ModuleType) and value.__name__ == f"{__name__}.{name}":
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
