"""MetaSchedule's tuner on one kernel, in this process: its evolutionary search over the llvm
design space, with a builder and a runner that compile and time candidates here rather than in
worker processes (a worker starts by importing TVM and its tensor intrinsics, which costs more
than tuning a kernel for a few trials).

    schedule = tune(kernel, target, trials=64, seed=1)   # the fastest measured candidate
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import itertools
import logging
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import tvm
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
from tvm.s_tir.meta_schedule.runner import PyRunner, PyRunnerFuture, RunnerResult

__all__ = ["cpu_intrinsics", "random_args", "tune"]

_INTRINSICS = "tvm.s_tir.tensor_intrin"


@contextlib.contextmanager
def cpu_intrinsics(target: tvm.target.Target) -> Iterator[None]:
    """MetaSchedule's ``TuneContext`` imports ``tvm.s_tir.tensor_intrin``, whose ``__init__`` parses
    every CUDA tensor intrinsic (once per process, but for longer than the work it precedes). An llvm target's schedule rules use the CPU intrinsics alone: while this is open, with
    an llvm ``target`` and the package not imported yet, the package stands in ``sys.modules`` without
    its ``__init__``, its CPU modules imported (x86, Arm, RISC-V: quick); it is taken out after, so a
    later import (a GPU target's) runs in full."""
    if target.kind.name != "llvm" or _INTRINSICS in sys.modules:
        yield
        return
    package = importlib.util.module_from_spec(importlib.util.find_spec(_INTRINSICS))
    sys.modules[_INTRINSICS] = package
    try:
        for name in ("x86", "arm_cpu", "riscv_cpu"):
            importlib.import_module(f"{_INTRINSICS}.{name}")
        yield
    finally:
        if sys.modules.get(_INTRINSICS) is package:
            del sys.modules[_INTRINSICS]


def random_args(args_info: list) -> list:
    """Arguments for a kernel of MetaSchedule's ``args_info``: floats from U[0.1, 0.9), other types zero
    (a kernel's time does not depend on the values)."""
    rng = np.random.default_rng(0)
    return [tvm.runtime.tensor(rng.uniform(0.1, 0.9, [int(d) for d in a.shape]).astype(str(a.dtype))
                               if "float" in str(a.dtype) else np.zeros([int(d) for d in a.shape], str(a.dtype)))
            for a in args_info]


_quiet: bool | None = None


def _quiet_metaschedule() -> None:
    """MetaSchedule prints every round to stdout at its logger's level, and each tuning run
    reconfigures that logger to DEBUG: unless the user had set a level before the first run, keep
    it at WARNING for every run."""
    global _quiet
    log = logging.getLogger("tvm.s_tir.meta_schedule")
    if _quiet is None:
        _quiet = log.level == logging.NOTSET
    if _quiet:
        log.setLevel(logging.WARNING)


def tune(kernel: tvm.IRModule, target: tvm.target.Target, trials: int, seed: int, number: int = 3,
         repeat: int = 3) -> Any:
    """The schedule (an ``s_tir.Schedule``: its ``mod`` and ``trace``) of the fastest of ``trials``
    candidates MetaSchedule's evolutionary search measures for ``kernel`` (a module of one PrimFunc
    ``main``) on ``target``, seeded ``seed``; each candidate timed ``repeat`` times ``number`` runs,
    its fastest repeat counted."""
    _quiet_metaschedule()
    built: dict[str, Any] = {}
    builder, runner = _Builder(built), _Runner(built, number, repeat)
    strategy = ms.search_strategy.EvolutionarySearch(  # MetaSchedule evolves 512 per round; few trials need fewer
        population_size=min(512, 8 * trials), init_min_unmeasured=min(50, 4 * trials))
    space = ms.space_generator.PostOrderApply(sch_rules="llvm", postprocs="llvm", mutator_probs="llvm")
    with tempfile.TemporaryDirectory() as work_dir, cpu_intrinsics(target):
        database = ms.tir_integration.tune_tir(
            kernel, target, work_dir, max_trials_global=trials, num_trials_per_iter=min(trials, 16),
            builder=builder, runner=runner, database=ms.database.MemoryDatabase(),
            cost_model="random",  # MetaSchedule's xgb model needs xgboost
            measure_callbacks=[ms.measure_callback.AddToDatabase(), ms.measure_callback.UpdateCostModel()],
            space=space, strategy=strategy, seed=seed)
        schedule = ms.tir_integration.compile_tir(database, kernel, target)
    if schedule is None:
        raise RuntimeError(f"MetaSchedule found no schedule of kernel {kernel['main'].attrs} in {trials} trials")
    return schedule


@derived_object
class _Builder(PyBuilder):
    """Compiles candidates in this process and keeps each library under a key for the runner."""

    def __init__(self, built: dict[str, Any]):
        super().__init__()
        self.built, self.keys = built, itertools.count()

    def build(self, build_inputs: list) -> list:
        from tvm.driver import build as tvm_build

        results = []
        for item in build_inputs:
            try:
                key = f"in-process:{next(self.keys)}"
                self.built[key] = tvm_build(item.mod, target=item.target)
                results.append(BuilderResult(key, None))
            except Exception as error:  # a candidate that does not compile is reported, as MetaSchedule's builder does
                results.append(BuilderResult(None, f"{type(error).__name__}: {error}"))
        return results


@derived_object
class _Done(PyRunnerFuture):
    def __init__(self, result: RunnerResult):
        super().__init__()
        self.value = result

    def done(self) -> bool:
        return True

    def result(self) -> RunnerResult:
        return self.value


@derived_object
class _Runner(PyRunner):
    """Times the libraries the builder kept, on random inputs, in this process."""

    def __init__(self, built: dict[str, Any], number: int, repeat: int):
        super().__init__()
        self.built, self.number, self.repeat = built, number, repeat

    def run(self, runner_inputs: list) -> list:
        futures = []
        for item in runner_inputs:
            library = self.built.pop(item.artifact_path)
            try:
                args = random_args(item.args_info)
                timer = library.time_evaluator("main", tvm.cpu(), number=self.number, repeat=self.repeat)
                futures.append(_Done(RunnerResult([float(t) for t in timer(*args).results], None)))
            except Exception as error:
                futures.append(_Done(RunnerResult(None, f"{type(error).__name__}: {error}")))
        return futures
