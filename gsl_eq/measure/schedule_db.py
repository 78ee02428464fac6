"""Schedules for the kernels TVM builds: the best of a few MetaSchedule design-space samples per
distinct kernel, measured once and kept on disk, so that every build of every variant of a model
gets the same schedule for the same kernel.

TVM 0.27's CPU build leaves kernels unscheduled, and scheduling dominates what a module runs:
the best of a handful of design-space samples is several times faster than the default build.
By default the database draws the design space itself (``PostOrderApply`` with the llvm schedule
rules and postprocessors, seeded), times each sample, and records only the winning draw: its
seed and sketch index. A cached kernel is rebuilt by drawing that seed again, which is
deterministic; nothing is measured. With ``trials``, MetaSchedule's own tuner (evolutionary
search over the same design space) measures that many candidates per kernel instead, and the
winner's trace is kept as JSON.

    db = ScheduleDatabase(samples=4)
    executable = db.build(workload.mod)   # legalize, fuse, schedule every kernel, build
    db.measurements                          # samples timed by this instance: 0 once all are cached
    db.fill([a.mod, b.mod], address="auto")  # the kernels not cached, timed as Ray tasks, merged into the cache
    tuned = ScheduleDatabase(trials=64)      # MetaSchedule's tuner: 64 measured candidates per kernel
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import tvm
from tvm import relax

from .disk_cache import JsonCache, default_cache_dir

#: The passes that turn a Relax module into fused TIR kernels, as TVM's MetaSchedule integration
#: runs them before it applies a database (so kernels are found under the same key).
_FUSION = (relax.transform.LegalizeOps, relax.transform.AnnotateTIROpPattern, relax.transform.FoldConstant,
           relax.transform.FuseOps, relax.transform.FuseTIR)


def host_target() -> dict[str, Any]:
    """This CPU as a TVM target configuration: all its cores and its instruction set."""
    from tvm.target import codegen

    return {"kind": "llvm", "num-cores": os.cpu_count() or 1, "mcpu": str(codegen.llvm_get_system_cpu())}


@dataclass(frozen=True)
class Choice:
    """The winning schedule of one kernel: its draw's seed, the sketch index in that draw and its time;
    a tuned kernel's winner is its trace as JSON (``sketch`` -1)."""

    seed: int
    sketch: int
    seconds: float
    trace: str | None = None


class ScheduleDatabase:
    """The best of ``samples`` design-space draws of each distinct kernel for ``target``, cached in
    ``<cache_dir>/schedules.json`` (default :func:`~gsl_eq.measure.disk_cache.default_cache_dir`) under the
    kernel's structural hash, the target, the draw count, the seed and TVM's version.

    Each draw gives one schedule per sketch of the kernel's design space; each schedule is built and
    timed (``number`` runs per repeat, ``repeat`` repeats, the fastest repeat kept). ``trials``
    above 0 tunes each kernel with MetaSchedule's evolutionary search instead, measuring that many
    candidates (``samples`` then unused); the winner is timed as a draw is.
    ``measurements`` counts the schedules this instance timed. ``target``: ``"llvm"`` is this
    CPU with all its cores and its instruction set (LLVM's name of the host CPU as ``mcpu``:
    without it LLVM emits baseline x86-64, no AVX or FMA, and kernels run 2-3x slower); else a
    TVM target string or configuration.
    """

    CACHE_FILE = "schedules.json"
    _FORMAT = 1

    def __init__(self, target: str | dict[str, Any] = "llvm", samples: int = 8, seed: int = 0,
                 cache_dir: str | os.PathLike[str] | None = None, number: int = 10, repeat: int = 3,
                 trials: int = 0):
        if samples < 1:
            raise ValueError(f"samples must be at least 1, not {samples}")
        if trials < 0:
            raise ValueError(f"trials must be 0 (draws, no tuning) or more, not {trials}")
        self.trials = trials
        self._target_name = target
        #: What the target is made from: another process builds the same target (and keys) from it.
        self._target_config = host_target() if target == "llvm" else target
        self.target = tvm.target.Target(self._target_config)
        self.samples, self.seed = samples, seed
        self.number, self.repeat = number, repeat
        self.measurements = 0
        self._cache = JsonCache(cache_dir if cache_dir is not None else default_cache_dir(), self.CACHE_FILE,
                                self._FORMAT)

    def reseeded(self, seed: int | None = None) -> "ScheduleDatabase":
        """A database like this one drawing its schedules independently: seeded ``seed``, by
        default this one's seed + 1 (the same cache file, other keys)."""
        return ScheduleDatabase(self._target_name, self.samples, self.seed + 1 if seed is None else seed,
                                self._cache.directory, self.number, self.repeat, self.trials)

    # --- the kernels ---------------------------------------------------------------------
    def build(self, mod: tvm.IRModule) -> relax.VMExecutable:
        """Build Relax module ``mod`` with every kernel scheduled as the database says (scheduling
        the kernels it has not seen first)."""
        from tvm.s_tir import meta_schedule as ms

        database = ms.database.MemoryDatabase()
        for task in ms.relax_integration.extract_tasks(self.fuse(mod), self.target):
            kernel = task.dispatched[0]
            trace, choice = self._best(kernel)
            workload = database.commit_workload(kernel)
            args = ms.arg_info.ArgInfo.from_prim_func(kernel["main"])
            database.commit_tuning_record(ms.database.TuningRecord(trace, workload, [choice.seconds], self.target, args))
        return ms.relax_integration.compile_relax(database, mod, self.target, None)

    @staticmethod
    def fuse(mod: tvm.IRModule) -> tvm.IRModule:
        """``mod`` legalized and fused into the kernels TVM builds."""
        return tvm.transform.Sequential([p() for p in _FUSION])(mod)

    def choice(self, kernel: tvm.IRModule) -> Choice:
        """The winning draw of ``kernel`` (a module holding one PrimFunc ``main``), measured if new."""
        known = self._cache.read().get(self.key(kernel))
        return Choice(*known) if known is not None else self._best(kernel)[1]

    def kernels(self, mod: tvm.IRModule) -> list[tvm.IRModule]:
        """The distinct kernels (modules of one PrimFunc ``main``) TVM builds for Relax module ``mod``."""
        from tvm.s_tir import meta_schedule as ms

        found: dict[str, tvm.IRModule] = {}
        for task in ms.relax_integration.extract_tasks(self.fuse(mod), self.target):
            found.setdefault(self.key(task.dispatched[0]), task.dispatched[0])
        return list(found.values())

    def cached(self, kernel: tvm.IRModule) -> bool:
        """Whether the cache holds ``kernel``'s winning draw."""
        return self.key(kernel) in self._cache.read()

    def fill(self, mods: Sequence[tvm.IRModule], address: str | None = None, num_cpus: float | None = None,
             max_retries: int = 3) -> int:
        """Time the kernels of ``mods`` the cache lacks as Ray tasks, one task per kernel, and merge
        their winning draws into this database's cache in one write; returns how many were timed.

        ``address`` is the Ray cluster's (see :class:`~gsl_eq.run.cluster.Cluster`; None starts a local
        instance). A kernel is timed on a whole node by default (``num_cpus``: the smallest node's
        CPUs), as the kernels run: timing two at once on one machine would slow both. Each task
        draws the same seeds as :meth:`choice` would and reports the kernel's key as it computed
        it; a kernel whose key changed on the way is refused (a RuntimeError)."""
        from ..run.cluster import Cluster

        missing: dict[str, tvm.IRModule] = {}
        known = self._cache.read()
        for mod in mods:
            for kernel in self.kernels(mod):
                key = self.key(kernel)
                if key not in known:
                    missing.setdefault(key, kernel)
        if not missing:
            return 0
        keys = list(missing)
        settings = self.settings()
        choices: dict[str, Choice] = {}
        with Cluster(address) as cluster:
            cpus = num_cpus if num_cpus is not None else min((n["cpus"] for n in cluster.nodes()), default=1) or 1
            for done in cluster.run(measure_kernel, [(settings, missing[key].script()) for key in keys],
                                    num_cpus=cpus, max_retries=max_retries):
                key = keys[done.index]
                if done.error is not None:
                    raise RuntimeError(f"timing kernel {key} failed on the Ray cluster: {done.error}")
                their_key, entry = done.value
                if their_key != key:
                    raise RuntimeError(f"kernel {key} was keyed {their_key} by its task: the node's TVM or target "
                                       "differs from this one's, or the kernel's TVMScript did not read back the same")
                choices[key] = Choice(*entry)
        self.record(choices)
        return len(choices)

    def settings(self) -> dict[str, Any]:
        """What a database drawing and timing as this one does is built from (in another process)."""
        return {"target": self._target_config, "samples": self.samples, "seed": self.seed,
                "cache_dir": str(self._cache.directory), "number": self.number, "repeat": self.repeat,
                "trials": self.trials}

    def record(self, choices: Mapping[str, Choice]) -> None:
        """Merge winning draws (by :meth:`key`) into the cache file, in one locked write."""
        if choices:
            self._cache.merge({key: _entry(c) for key, c in choices.items()})

    # --- one kernel ----------------------------------------------------------------------
    def key(self, kernel: tvm.IRModule) -> str:
        """The cache key of ``kernel``: its structural hash, the target, draws, seed, TVM's version and
        the threads TVM's runtime runs kernels on (``TVM_NUM_THREADS``; by default half the cores)."""
        import tvm_ffi

        draws = f"tuned {self.trials}" if self.trials else self.samples
        threads = tvm.runtime.num_threads()
        return f"{tvm_ffi.structural_hash(kernel)}|{self.target}|{draws}|{self.seed}|{tvm.__version__}|{threads}"

    def measure(self, kernel: tvm.IRModule) -> tuple[Any, Choice]:
        """Draw and time ``kernel``'s samples, or tune it (the cache is neither read nor written):
        the winning schedule's trace and its :class:`Choice`."""
        if self.trials:
            return self._tune(kernel)
        best: tuple[Any, Choice] | None = None
        for k in range(self.samples):
            seed = self.seed * 1_000 + k + 1  # MetaSchedule treats seed -1 as "random": start at 1
            for sketch, schedule in enumerate(self._draw(kernel, seed)):
                seconds = self._time(schedule.mod, kernel)
                self.measurements += 1
                if best is None or seconds < best[1].seconds:
                    best = (schedule.trace, Choice(seed, sketch, seconds))
        if best is None:
            raise RuntimeError(f"no schedule of kernel {kernel['main'].attrs} passed MetaSchedule's checks")
        return best

    def _best(self, kernel: tvm.IRModule) -> tuple[Any, Choice]:
        key = self.key(kernel)
        known = self._cache.read().get(key)
        if known is not None:
            choice = Choice(*known)
            if choice.trace is not None:
                return _replay(kernel, choice.trace), choice
            return self._draw(kernel, choice.seed)[choice.sketch].trace, choice
        best = self.measure(kernel)
        self.record({key: best[1]})
        return best

    def _draw(self, kernel: tvm.IRModule, seed: int) -> list[Any]:
        """The design space of ``kernel`` drawn with ``seed``: one schedule per sketch that passes the
        postprocessors (the same seed gives the same list, so an index names one schedule)."""
        from tvm.s_tir import meta_schedule as ms

        from .tuning import cpu_intrinsics

        space = ms.space_generator.PostOrderApply(sch_rules="llvm", postprocs="llvm", mutator_probs={})
        with cpu_intrinsics(self.target):
            context = ms.TuneContext(mod=kernel, target=self.target, space_generator=space, task_name="kernel",
                                     rand_state=seed)
        return [s for s in context.generate_design_space()
                if all(p.apply(s) for p in context.space_generator.postprocs)]

    def _tune(self, kernel: tvm.IRModule) -> tuple[Any, Choice]:
        """``kernel`` tuned by MetaSchedule (:func:`~gsl_eq.measure.tuning.tune`), the winner timed as a draw is."""
        from .tuning import tune

        seed = self.seed * 1_000 + 1
        schedule = tune(kernel, self.target, self.trials, seed)
        seconds = self._time(schedule.mod, kernel)
        self.measurements += 1
        return schedule.trace, Choice(seed, -1, seconds, json.dumps(_plain(schedule.trace.as_json())))

    def _time(self, scheduled: tvm.IRModule, kernel: tvm.IRModule) -> float:
        """Seconds per run of the scheduled kernel on random inputs, fastest repeat."""
        from tvm.driver import build as tvm_build
        from tvm.s_tir import meta_schedule as ms

        from .tuning import random_args

        library = tvm_build(scheduled, target=self.target)
        args = random_args(ms.arg_info.ArgInfo.from_prim_func(kernel["main"]))
        timer = library.time_evaluator("main", tvm.cpu(), number=self.number, repeat=self.repeat)
        return float(timer(*args).min)

    def __repr__(self) -> str:
        return f"ScheduleDatabase(target={str(self.target)!r}, samples={self.samples}, seed={self.seed}, " \
               f"cache={str(self._cache.path)!r})"


def measure_kernel(settings: dict[str, Any], script: str) -> tuple[str, list[Any]]:
    """A Ray task of :meth:`ScheduleDatabase.fill`: the kernel given as TVMScript, its key as a
    database of ``settings`` computes it, and its winning draw ``[seed, sketch, seconds]``."""
    database = ScheduleDatabase(**settings)
    kernel = tvm.script.from_source(script)
    if not isinstance(kernel, tvm.IRModule):
        kernel = tvm.IRModule({"main": kernel})
    choice = database.measure(kernel)[1]
    return database.key(kernel), _entry(choice)


def _entry(choice: Choice) -> list[Any]:
    """``choice`` as the cache file holds it."""
    entry = [choice.seed, choice.sketch, choice.seconds]
    return entry if choice.trace is None else [*entry, choice.trace]


def _replay(kernel: tvm.IRModule, trace: str) -> Any:
    """The trace of ``kernel`` scheduled by the JSON ``trace``."""
    from tvm import s_tir

    schedule = s_tir.Schedule(kernel)
    s_tir.schedule.Trace.apply_json_to_schedule(json.loads(trace), schedule)
    return schedule.trace



def _plain(value: Any) -> Any:
    """A trace's JSON form (TVM arrays, maps, strings and numbers) as Python lists, dicts, str and numbers."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(getattr(value, "value", None), (int, float)):  # an IntImm or FloatImm
        return value.value
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "__iter__"):
        return [_plain(v) for v in value]
    return str(value)
