"""Building small test models for the rule-library tests."""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np

from tvm import relax

from gsl_eq import Workload
from gsl_eq.workload import random_array
from gsl_eq.models.blocks import var

__all__ = ["R", "bound", "item", "ops", "outputs", "var", "workload"]

R = relax.op


def workload(expr: relax.Expr, inputs: Iterable[str] = ("x",)) -> Workload:
    """A workload of ``expr``: the named variables are runtime inputs, the others random parameters."""
    return Workload.from_expr(expr, set(inputs))


def outputs(*exprs: relax.Expr) -> relax.Expr:
    """One expression, or a tuple of several (a function with several outputs)."""
    return exprs[0] if len(exprs) == 1 else relax.Tuple(list(exprs))


def item(tup: relax.Expr, k: int) -> relax.Expr:
    return relax.TupleGetItem(tup, k)


def ops(wl: Workload) -> dict[str, int]:
    """Op counts without the ``relax.`` prefix, e.g. ``{"nn.conv2d": 1}``."""
    return {name.removeprefix("relax."): n for name, n in wl.graph.op_counts().items()}


def bound(params: Sequence[relax.Var], body: Callable[[Callable], relax.Expr], inputs: Iterable[str] = ("x",)) -> Workload:
    """A workload whose ``main`` binds every value ``body`` passes to ``emit`` (a tuple read twice stays one tuple)."""
    bb = relax.BlockBuilder()
    with bb.function("main", list(params)):
        with bb.dataflow():
            out = bb.emit_output(body(bb.emit))
        bb.emit_func_output(out)
    rng = np.random.default_rng(0)
    return Workload(bb.get(), {p.name: random_array(p.ty, rng) for p in params if p.name not in set(inputs)})
