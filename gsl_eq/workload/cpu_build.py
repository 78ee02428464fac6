"""How a workload is built for the CPU when no schedule database is given.

TVM's default CPU pipeline legalizes each op into a loop nest and compiles it as written:
a reduction's loops innermost, so a matmul walks its right operand down a column, a cache
miss per step, which makes a large matmul many times slower than it need be. The
build here is TVM's default pipeline with one schedule step added after fusion: in each
reduction, the reduction loops move just outside the innermost spatial loop, so the inner
loop streams contiguous rows. The order in which each output
sums its terms is unchanged, so outputs are bitwise those of TVM's default build.

This is what parameter folding, verification and :meth:`Workload.build` run: folding the
merged or reassociated weights of a large model (TENSAT's BERT) took minutes before it.
Tuned schedules remain :class:`~gsl_eq.measure.schedule_db.ScheduleDatabase`'s work.

A module that runs once (folding parameters, computing a reference) is built without TVM's
constant folding (``fold_constants=False``): FoldConstant compiles and runs each call on
constants on its own, an LLVM module per call, where the one run computes them all anyway
(a fold of many merged kernels would spend most of its time so).
"""

from __future__ import annotations

import traceback
from typing import Any, Callable, TypeVar

import tvm
from tvm import relax
from tvm.relax.backend.cpu_generic import pipeline as cpu

__all__ = ["build", "on_fresh_copies", "reductions_inside"]

_SPATIAL, _REDUCE = 0, 2  # IterVar kinds: data parallel, reduction


@tvm.transform.module_pass(opt_level=0, name="ReductionsInside")
def reductions_inside(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
    """Move each reduction's loops inside all its spatial loops but the innermost one."""
    from tvm.s_tir import Schedule

    for gvar, func in list(mod.functions.items()):
        if isinstance(func, relax.Function):
            continue
        try:
            scheduled = _reductions_inside(Schedule(tvm.IRModule({"main": func})))
        except Exception:  # noqa: BLE001 - a function TVM cannot schedule (no root block, ...) stays as written
            continue
        mod[gvar] = scheduled.with_attrs(func.attrs) if func.attrs else scheduled
    return mod


def _reductions_inside(schedule: Any) -> Any:
    """The scheduled function of :func:`reductions_inside`; raises where TVM refuses a step."""
    for block in schedule.get_child_blocks(schedule.get_sblock("root")):
        kinds = [v.iter_type for v in schedule.get(block).iter_vars]
        loops = schedule.get_loops(block)
        if _REDUCE not in kinds or len(loops) != len(kinds) or set(kinds) - {_SPATIAL, _REDUCE}:
            continue  # not a perfect nest of one loop per axis: left as TVM wrote it
        spatial = [loop for loop, kind in zip(loops, kinds) if kind == _SPATIAL]
        reduce = [loop for loop, kind in zip(loops, kinds) if kind == _REDUCE]
        if spatial and loops[-len(reduce) - 1:-len(reduce)] == spatial[-1:]:  # the reductions come last
            schedule.reorder(*spatial[:-1], *reduce, spatial[-1])
    return schedule.mod["main"]


def build(mod: tvm.IRModule, target: tvm.target.Target, fold_constants: bool = True) -> relax.VMExecutable:
    """``mod`` built by TVM's default CPU pipeline with :func:`reductions_inside` after fusion
    (and without its FoldConstant pass unless ``fold_constants``)."""
    legalize = [p for p in cpu.legalize_passes(target) if fold_constants or p.info.name != "FoldConstant"]
    passes = (cpu.library_dispatch_passes(target) + legalize + [reductions_inside]
              + cpu.dataflow_lower_passes(target) + cpu.finalize_passes(target))

    @tvm.transform.module_pass(opt_level=0, name="GslEqCPUPipeline")
    def pipeline(module: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        with target:
            return tvm.transform.Sequential(passes)(module)

    return relax.build(mod, target=target, relax_pipeline=pipeline)


T = TypeVar("T")

#: TVM 0.27's FuseOps groups a graph by maps keyed on object addresses, so two copies of one module
#: can fuse differently, and some groupings of the parts of several splits are ill-formed: FuseTIR
#: stops ("Check failed: buffer_idx == buffers.size()"). Seen on a NasRNN whose merged matmuls are
#: split: one parsed copy in four failed, and a copy that fails always fails. A build that fails
#: there is tried again on fresh copies, this many times.
FUSION_RETRIES = 4


def on_fresh_copies(build: Callable[[tvm.IRModule], T], mod: tvm.IRModule) -> T:
    """``build(mod)``; where TVM's fusion passes fail, ``build`` of a fresh copy of ``mod`` (the same
    module, new objects), up to :data:`FUSION_RETRIES` times. Any other failure is raised at once."""
    for attempt in range(FUSION_RETRIES + 1):
        try:
            return build(mod)
        except Exception as error:  # noqa: BLE001 - TVM raises several kinds; only fusion failures are retried
            if attempt == FUSION_RETRIES or not _in_fusion(error):
                raise
            mod = tvm.ir.load_json(tvm.ir.save_json(mod))
    raise AssertionError("unreachable")


def _in_fusion(error: BaseException) -> bool:
    """Whether TVM raised ``error`` inside FuseOps or FuseTIR (its C++ frames name the source file)."""
    return any("relax/transform/fuse_" in frame.filename for frame in traceback.extract_tb(error.__traceback__))
