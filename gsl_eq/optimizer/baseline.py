"""What TVM's own passes make of a workload: the baseline a measured result must beat.

A user who does not run gsl_eq still runs TVM's inference passes, so a result is a win only if it
runs faster than the module those passes give. :func:`tvm_passes` applies the passes doing what the
rule library's default rules do (merging parallel matmuls, folding batch norms into convs,
decomposing the rest, folding constants, removing common subexpressions and redundant reshapes)::

    baseline = tvm_passes(wl)      # a Workload computing what wl computes, its weights parameters again
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..workload import Workload

#: TVM's passes after its weights are bound (CombineParallelMatmul runs before: it leaves matmuls of constants alone).
PASSES = (relax.transform.FoldBatchnormToConv2D, relax.transform.DecomposeOpsForInference, relax.transform.FoldConstant,
          relax.transform.EliminateCommonSubexpr, relax.transform.RemoveRedundantReshape, relax.transform.FoldConstant)


def tvm_passes(wl: Workload) -> Workload:
    """``wl`` through TVM's own inference passes (:data:`PASSES`), its weights bound for them and made
    parameters again (:meth:`~gsl_eq.workload.Workload.from_module`); ``wl`` is left as it is."""
    mod = relax.transform.CombineParallelMatmul()(wl.mod)
    mod = relax.transform.BindParams("main", {k: tvm.runtime.tensor(v) for k, v in wl.params.items()})(mod)
    mod = tvm.transform.Sequential([make() for make in PASSES])(mod)
    return Workload.from_module(mod)
