"""gsl_eq as a TVM pass: :class:`Optimize` in ``tvm.compile``, ``tvm.transform.Sequential`` or any pipeline.

    mod = relax.transform.BindParams("main", weights)(mod)       # weights as constants, or params=
    ex = tvm.compile(mod, "llvm", relax_pipeline=gsl_eq.transform.pipeline(rules.default()))

The pass optimizes each Relax function of the module with :func:`gsl_eq.optimize` and returns a
new module; the one it is given is unchanged. A function's weights are the constants it holds (as
``BindParams`` leaves them), the values given for its parameters in ``params=``, or the values a
TVM frontend attached to it (``keep_params_in_input=True``); in the module returned they are bound
as constants, so each function takes its runtime inputs only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from .errors import GslEqError, UnsupportedModuleError
from .frontend import Subst
from .workload.importers import bind_symbolic, detached, symbolic_dims
from .optimizer import OptimizeResult, optimize
from .workload import Workload


@dataclass(frozen=True)
class FunctionRun:
    """One function the pass optimized: its name and what :func:`gsl_eq.optimize` returned
    (``result.report`` says what was done, ``result.workload`` holds the optimized graph)."""

    function: str
    result: OptimizeResult

    @property
    def report(self) -> Any:
        return self.result.report


@tvm.transform.module_pass(opt_level=0, name="gsl_eq.Optimize")
class Optimize:
    """A ``tvm.transform.ModulePass`` that optimizes the module's Relax functions with GSL rules::

        opt = gsl_eq.transform.Optimize(rules.default(), mode="saturate", time_limit=30)
        mod = tvm.transform.Sequential([relax.transform.FoldConstant(), opt])(mod)
        print(opt.runs[-1].report)

    Parameters
    ----------
    rules
        The GSL rules (default: :func:`gsl_eq.rules.default`).
    mode, cost
        As :func:`gsl_eq.optimize` takes them: ``"saturate"`` or ``"greedy"``; a cost model's name or
        a :class:`~gsl_eq.cost.CostModel`.
    params
        Values of function parameters that are weights, by parameter name; they are bound as
        constants in the module returned.
    bind
        Sizes for symbolic dimensions (``{"batch": 1}``): gsl_eq works on static shapes.
    functions
        The names of the functions to optimize (default: every Relax function).
    on_run
        Called with each :class:`FunctionRun` as it finishes; every run is also kept in ``runs``.
    options
        Limits and choices of :func:`gsl_eq.optimize` (``node_limit``, ``time_limit``, ``select``...).
    """

    def __init__(self, rules: Sequence[Subst] | None = None, mode: str = "saturate", cost: Any = "roofline",
                 params: Mapping[str, Any] | None = None, bind: Mapping[str, int] | None = None,
                 functions: Sequence[str] | None = None, on_run: Callable[[FunctionRun], None] | None = None,
                 **options: Any):
        if isinstance(functions, str):
            raise GslEqError(f"functions must be a collection of function names, not the string {functions!r}")
        self.rules = None if rules is None else list(rules)
        self.mode, self.cost, self.options = mode, cost, options
        self.params = dict(params or {})
        self.bind = dict(bind or {})
        self.functions = None if functions is None else set(functions)
        self.on_run = on_run
        self.runs: list[FunctionRun] = []

    def transform_module(self, mod: tvm.IRModule, ctx: tvm.transform.PassContext) -> tvm.IRModule:
        _known_to_tvm(GslEqError)
        chosen = self._chosen(mod)
        dims = symbolic_dims(mod)
        unknown = sorted(set(self.bind) - dims)
        if unknown:
            raise GslEqError(f"bind names {unknown}, which are not symbolic dimensions of the module "
                             f"(it has {sorted(dims) or 'none'})")
        optimized = {gv: self._function(gv.name_hint, func) for gv, func in chosen}
        out = mod.clone()
        for gv, func in optimized.items():
            out.update_func(gv, func)
        return out

    def _chosen(self, mod: tvm.IRModule) -> list[tuple[tvm.ir.GlobalVar, relax.Function]]:
        relax_functions = [(gv, f) for gv, f in mod.functions_items() if isinstance(f, relax.Function)]
        if self.functions is None:
            return relax_functions
        missing = sorted(self.functions - {gv.name_hint for gv, _ in relax_functions})
        if missing:
            raise GslEqError(f"functions {missing} are not Relax functions of the module "
                             f"(it has {sorted(gv.name_hint for gv, _ in relax_functions)})")
        return [(gv, f) for gv, f in relax_functions if gv.name_hint in self.functions]

    def _function(self, name: str, func: relax.Function) -> relax.Function:
        wl = _workload(name, func, self.params, self.bind)
        result = optimize(wl, self.rules, mode=self.mode, cost=self.cost, **self.options)
        run = FunctionRun(name, result)
        self.runs.append(run)
        if self.on_run is not None:
            self.on_run(run)
        optimized = result.workload.bound_module()["main"].without_attr("global_symbol")
        attrs = {k: v for k, v in (func.attrs or {}).items() if k not in ("num_input", "params")}
        return optimized.with_attrs(attrs) if attrs else optimized


def pipeline(rules: Sequence[Subst] | Optimize | None = None, target: str | tvm.target.Target | None = None,
             base: str = "default", **options: Any) -> tvm.transform.Pass:
    """gsl_eq's :class:`Optimize` followed by TVM's build pipeline ``base`` (what ``tvm.compile``
    runs by default; for a GPU ``target``, that target's default pipeline, as ``tvm.compile`` picks
    it), for ``tvm.compile(mod, target, relax_pipeline=pipeline(...))``.

    Parameters
    ----------
    rules
        The rules for a new :class:`Optimize`, or an :class:`Optimize` of your own, to read its
        ``runs`` after.
    target
        The target the pipeline is for; a GPU target picks that target's default pipeline.
    base
        The name of TVM's pipeline that follows.
    **options
        Go to :class:`Optimize`.

    Examples
    --------
    ::

        opt = Optimize(rules.default(), mode="greedy")
        ex = tvm.compile(mod, "llvm", relax_pipeline=pipeline(opt))
        opt.runs[0].report
    """
    after = relax.get_pipeline(base)
    if target is not None and base == "default":
        target = tvm.target.Target(target) if isinstance(target, str) else target
        if "gpu" in target.keys:
            after = relax.get_default_pipeline(target)
    if isinstance(rules, Optimize):
        if options:
            raise GslEqError(f"pipeline takes options ({', '.join(sorted(options))}) or an Optimize pass, not both")
        return tvm.transform.Sequential([rules, after], name="gsl_eq.pipeline")
    return tvm.transform.Sequential([Optimize(rules, **options), after], name="gsl_eq.pipeline")


def _known_to_tvm(error: type) -> None:
    """Register ``error`` and its subclasses with TVM's FFI, so that one raised in the pass reaches the
    caller of ``tvm.compile`` as itself, not as a RuntimeError."""
    tvm_ffi.register_error(f"{error.__module__}.{error.__qualname__}", error)
    for sub in error.__subclasses__():
        _known_to_tvm(sub)


def _workload(name: str, func: relax.Function, params: Mapping[str, Any], bind: Mapping[str, int]) -> Workload:
    """The workload of one function, its weights as parameters: constants lifted, ``params`` given,
    or the values a frontend attached. A function a frontend left computing shapes of constants at
    run time (ONNX's Gather: ``shape_of`` a table) is read after ``relax.transform.FoldConstant``."""
    mod = tvm.IRModule({"main": func.without_attr("global_symbol")})
    attached = {}
    if func.attrs and "params" in func.attrs:
        mod, attached = detached(mod)
    names = {p.name for p in func.params}
    given = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in params.items() if k in names}
    dims = symbolic_dims(mod)
    mod = bind_symbolic(mod, {k: v for k, v in bind.items() if k in dims})
    try:
        return Workload.from_module(mod, {**attached, **given})
    except UnsupportedModuleError as first:
        try:
            return Workload.from_module(relax.transform.FoldConstant()(mod), {**attached, **given})
        except UnsupportedModuleError:
            hint = (" run the pass on Relax operators, before LegalizeOps, or name the functions it may optimize "
                    "(functions=)" if "call to another function" in str(first) else
                    " relax.transform.FoldConstant did not make it readable")
            raise UnsupportedModuleError(f"gsl_eq.transform.Optimize cannot read function {name!r}: {first};"
                                         f"{hint}") from None
