"""Running many independent jobs as Ray tasks, on this machine or a cluster: the engine of sweeps,
of :func:`~gsl_eq.orderings.compare_orderings` with an address, of ``gsl-eq bench --address`` and
of the schedule database's kernel timings.

    with Cluster(address=None, num_cpus=2) as cluster:          # a local Ray instance, 2 CPUs
        for done in cluster.run(optimize_cell, [(cell,) for cell in cells]):
            done.index, done.value, done.error, done.node         # as each task finishes

``address``: ``None`` or ``"local"`` start a local Ray instance (shut down on leaving); ``"auto"``
joins the cluster this machine belongs to, ``"ray://HOST:PORT"`` a cluster through Ray Client and
``"HOST:PORT"`` a head node's address. A process already connected to Ray keeps its connection.

Ray is imported here only, when a cluster is entered: ``pip install "gsl_eq[ray]"``. A worker that
dies (killed, out of memory) has its task run again, up to ``max_retries`` times; an exception
the job raises is not retried: it comes back as the task's error, and the other tasks go on.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Hashable, Iterator, Mapping, Sequence

from ..errors import GslEqError

RAY_MISSING = 'Ray is not installed; install it with pip install "gsl_eq[ray]" (or pip install "ray>=2.40,<3")'
#: Times a task is run again when its worker dies before it returns.
MAX_RETRIES = 3
_HOST_PORT = re.compile(r"^\[?[A-Za-z0-9_.:-]+?\]?:(\d{1,5})$")


def ray_module() -> ModuleType:
    """The ``ray`` module, or a :class:`~gsl_eq.errors.GslEqError` saying how to install it."""
    try:
        import ray
    except ImportError as err:
        raise GslEqError(RAY_MISSING) from err
    return ray


def check_address(address: str | None) -> str | None:
    """``address`` as :class:`Cluster` takes it (None: a local instance is started); a
    :class:`~gsl_eq.errors.GslEqError` names what is wrong with a malformed one."""
    if address is None or address == "local":
        return None
    if not isinstance(address, str) or not address.strip():
        raise GslEqError(f"bad Ray address {address!r}: give auto, ray://HOST:PORT, a head node's HOST:PORT, "
                         "or leave it out for a local instance")
    address = address.strip()
    if address == "auto":
        return address
    rest = address[len("ray://"):] if address.startswith("ray://") else address
    if "://" in rest:
        raise GslEqError(f"bad Ray address {address!r}: the only scheme Ray takes is ray:// (Ray Client)")
    match = _HOST_PORT.match(rest)
    if match is None or not 0 < int(match.group(1)) < 65536:
        raise GslEqError(f"bad Ray address {address!r}: expected HOST:PORT with a port from 1 to 65535 "
                         "(e.g. 10.0.0.5:6379, or ray://10.0.0.5:10001), or auto")
    return address


@dataclass(frozen=True)
class Finished:
    """One task's outcome: ``index`` of its arguments in the submitted list, the job's return
    ``value`` or its ``error`` (``"Type: message"``), the Ray node that ran it (its id and IP
    address; unknown when the task never returned) and the seconds from submission to the result."""

    index: int
    value: Any = None
    error: str | None = None
    node: str | None = None
    node_ip: str | None = None
    seconds: float = 0.0


def _traced(function: Callable[..., Any], *args: Any) -> tuple[Any, str, str]:
    """Run in the worker: the job's value, and the node that ran it."""
    import ray

    value = function(*args)
    return value, ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address()


class Cluster:
    """A connection to Ray for running jobs as tasks (see the module's documentation).

    ``num_cpus`` is the CPUs of a local instance (default: every core; ignored when joining a
    cluster). ``runtime_env`` is Ray's runtime environment for this job's workers; a local
    instance's processes get the driver's ``gsl_eq`` first on their ``PYTHONPATH`` (so its workers
    run the same code as the driver). ``log_to_driver``: whether workers' output is printed here.
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 runtime_env: dict[str, Any] | None = None, log_to_driver: bool = False):
        self.address = check_address(address)
        if num_cpus is not None and (isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1):
            raise GslEqError(f"num_cpus must be a positive whole number, not {num_cpus!r}")
        self.num_cpus = num_cpus
        self.runtime_env = dict(runtime_env or {})
        self.log_to_driver = log_to_driver
        self.started = False
        self._ray: ModuleType | None = None

    # --- connecting ------------------------------------------------------------------------
    def __enter__(self) -> "Cluster":
        ray = self._ray = ray_module()
        if ray.is_initialized():
            return self
        options: dict[str, Any] = {"log_to_driver": self.log_to_driver, "logging_level": logging.ERROR}
        if self.address is None:
            # The local instance's processes inherit this environment: with the driver's gsl_eq first on
            # PYTHONPATH, its workers run the driver's code. (A runtime_env with the same variable would
            # do it too, but costs each worker process about a second to set up.)
            saved = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = _driver_pythonpath()
            try:
                ray.init(address="local", num_cpus=self.num_cpus, include_dashboard=False,
                         runtime_env=self.runtime_env or None, **options)
            except Exception as err:
                raise GslEqError(f"could not start a local Ray instance: {type(err).__name__}: {err}") from err
            finally:
                if saved is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = saved
            self.started = True
            return self
        _check_reachable(self.address)
        try:
            ray.init(address=self.address, runtime_env=self.runtime_env or None, **options)
        except (ConnectionError, TimeoutError, RuntimeError, ValueError) as err:
            hint = (" (no running Ray cluster was found on this machine: start one with ray start --head, or leave "
                    "the address out for a local instance)") if self.address == "auto" else ""
            raise GslEqError(f"could not join the Ray cluster at {self.address}: {type(err).__name__}: "
                             f"{str(err).strip().splitlines()[0] if str(err).strip() else 'no reason given'}{hint}") \
                from err
        self.started = True  # this process's connection: closed on leaving (the cluster runs on)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.started and self._ray is not None:
            self._ray.shutdown()
            self.started = False

    @property
    def ray(self) -> ModuleType:
        if self._ray is None:
            raise GslEqError("the cluster is not connected: use it in a with statement")
        return self._ray

    # --- what the cluster has ----------------------------------------------------------------
    def nodes(self) -> list[dict[str, Any]]:
        """The alive nodes: ``{"node": id, "ip": address, "cpus": CPUs}`` each."""
        return [{"node": n["NodeID"], "ip": n.get("NodeManagerAddress"), "cpus": n.get("Resources", {}).get("CPU", 0)}
                for n in self.ray.nodes() if n.get("Alive")]

    def total_cpus(self) -> float:
        """The CPUs of the cluster's alive nodes."""
        return float(sum(n["cpus"] for n in self.nodes()))

    def put(self, value: Any) -> Any:
        """``value`` stored once in Ray's object store; pass the reference to many tasks."""
        return self.ray.put(value)

    # --- running -----------------------------------------------------------------------------
    def run(self, function: Callable[..., Any], arguments: Sequence[tuple[Any, ...]], num_cpus: float = 1,
            max_retries: int = MAX_RETRIES, spread: bool = False, max_calls: int = 0,
            affinity: Callable[..., Hashable] | None = None) -> Iterator[Finished]:
        """Run ``function(*args)`` for each of ``arguments`` as a Ray task; yield each outcome as it
        comes, first finished first. Each task takes ``num_cpus`` CPUs; a task whose worker dies runs
        again up to ``max_retries`` times; an exception from ``function`` is its error, not retried.
        ``spread`` places tasks on as many nodes as possible (Ray's SPREAD strategy); ``max_calls``
        > 0 starts a fresh worker process after that many tasks of a worker (1: a process per task).
        ``function`` must be importable by the workers (or picklable by value); it should return
        plain data. Leaving the loop early cancels the tasks not finished.

        ``affinity(*args)``: a key (a tuple, most general part first) telling which jobs share work
        a worker process keeps (a model it built, a result it checked). With it, the jobs run on a
        pool of Ray actors, one per ``num_cpus`` CPUs of the cluster, each fed one job at a time:
        a worker gets the next job of its last key, else the job whose key has the shortest common
        prefix with the keys other workers are on, the longest with its own last key, the first in
        order (so two workers take up two models where they can). A dead actor is
        restarted and its job run again, up to ``max_retries`` times. (Without it, Ray hands jobs
        to whichever worker process is free: jobs sharing work land on different processes.)"""
        ray = self.ray
        if num_cpus <= 0:
            raise GslEqError(f"num_cpus per task must be positive, not {num_cpus!r}")
        if affinity is not None:
            yield from self._run_on_actors(function, arguments, num_cpus, max_retries, spread, affinity)
            return
        options: dict[str, Any] = {"num_cpus": num_cpus, "max_retries": max_retries, "retry_exceptions": False}
        if spread:
            options["scheduling_strategy"] = "SPREAD"
        # max_calls is a property of the remote function, which .options() does not take
        remote = (ray.remote(max_calls=max_calls)(_traced) if max_calls else ray.remote(_traced)).options(**options)
        start = time.perf_counter()
        index: dict[Any, int] = {}
        for k, args in enumerate(arguments):
            index[remote.remote(function, *args)] = k
        pending = list(index)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    seconds = time.perf_counter() - start
                    try:
                        value, node, ip = ray.get(ref)
                    except ray.exceptions.RayTaskError as err:
                        yield Finished(index[ref], error=_task_error(err), seconds=seconds)
                    except ray.exceptions.RayError as err:
                        yield Finished(index[ref], error=f"{type(err).__name__}: {_first_line(err)}", seconds=seconds)
                    else:
                        yield Finished(index[ref], value, None, node, ip, seconds)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)


    def _run_on_actors(self, function: Callable[..., Any], arguments: Sequence[tuple[Any, ...]], num_cpus: float,
                       max_retries: int, spread: bool, affinity: Callable[..., Hashable]) -> Iterator[Finished]:
        """:meth:`run` with ``affinity``: a pool of actors, each fed the jobs that share its work."""
        ray = self.ray
        keys = [affinity(*args) for args in arguments]
        groups: dict[Hashable, deque[int]] = {}
        for k, key in enumerate(keys):
            groups.setdefault(key, deque()).append(k)
        count = min(len(arguments), max(1, int(self.total_cpus() // num_cpus)))
        options: dict[str, Any] = {"num_cpus": num_cpus, "max_restarts": max_retries, "max_task_retries": max_retries}
        if spread:
            options["scheduling_strategy"] = "SPREAD"
        actor = ray.remote(_Worker).options(**options)
        workers = [actor.remote() for _ in range(count)]
        last: list[Hashable | None] = [None] * count
        running: dict[Any, tuple[int, int]] = {}  # call -> (worker, job)
        start = time.perf_counter()

        def pick(worker: int) -> int:
            key = next_group(groups, last[worker], {keys[job] for w, job in running.values() if w != worker})
            job = groups[key].popleft()
            if not groups[key]:
                del groups[key]
            last[worker] = key
            return job

        def send(worker: int) -> None:
            job = pick(worker)
            running[workers[worker].call.remote(function, *arguments[job])] = (worker, job)

        alive = set(range(count))
        try:
            for worker in range(count):
                if groups:
                    send(worker)
            while running:
                (ref,), _ = ray.wait(list(running), num_returns=1)
                worker, job = running.pop(ref)
                seconds = time.perf_counter() - start
                try:
                    value, node, ip = ray.get(ref)
                except ray.exceptions.RayTaskError as err:
                    yield Finished(job, error=_task_error(err), seconds=seconds)
                except ray.exceptions.RayError as err:  # the actor died more often than it is restarted
                    alive.discard(worker)
                    yield Finished(job, error=f"{type(err).__name__}: {_first_line(err)}", seconds=seconds)
                else:
                    yield Finished(job, value, None, node, ip, seconds)
                if worker in alive and groups:
                    send(worker)
                if not alive and not running:
                    for job in [j for group in groups.values() for j in group]:
                        yield Finished(job, error="every worker died: nothing is left to run it", seconds=seconds)
                    groups.clear()
        finally:
            for handle in workers:
                ray.kill(handle)


def next_group(groups: Mapping[Hashable, Sequence[int]], mine: Hashable | None, held: set[Hashable]) -> Hashable:
    """The key of the jobs a free worker takes next, of ``groups`` (key -> the jobs left, in order):
    its last key ``mine`` while jobs of it are left; else the key whose longest common prefix with
    the keys other workers are on (``held``) is shortest, then whose common prefix with ``mine`` is
    longest, then whose first job comes first."""
    if mine in groups:
        return mine
    return min(groups, key=lambda g: (max((_common_prefix(g, h) for h in held), default=0),
                                      -_common_prefix(g, mine), groups[g][0]))


class _Worker:
    """A Ray actor of :meth:`Cluster.run` with an affinity: one process running job after job."""

    def call(self, function: Callable[..., Any], *args: Any) -> tuple[Any, str, str]:
        return _traced(function, *args)


def _common_prefix(a: Hashable, b: Hashable | None) -> int:
    """How many leading parts two tuple keys share (0 for keys that are not tuples)."""
    if not isinstance(a, tuple) or not isinstance(b, tuple):
        return 0
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


#: Seconds a cluster's address has to answer before joining it is given up (Ray itself waits minutes).
CONNECT_TIMEOUT = 10.0


def _check_reachable(address: str) -> None:
    """A :class:`~gsl_eq.errors.GslEqError` at once when nothing answers at a ``HOST:PORT`` or
    ``ray://HOST:PORT`` address (``ray.init`` would wait for minutes)."""
    import socket

    if address == "auto":
        return
    rest = address[len("ray://"):] if address.startswith("ray://") else address
    host, _, port = rest.rpartition(":")
    host = host.strip("[]")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as err:
        raise GslEqError(f"could not join the Ray cluster at {address}: nothing answers at {host}:{port} "
                         f"({err.strerror or err}); is its head node running (ray start --head)?") from err


def _task_error(err: Exception) -> str:
    """``"Type: message"`` of the exception a task raised (Ray wraps it)."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {_first_line(cause)}"
    return f"{type(err).__name__}: {_first_line(err)}"


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else "no message"


def _driver_pythonpath() -> str:
    """``PYTHONPATH`` for local workers: the directory this gsl_eq is imported from (unless it is an
    installed package's), then the driver's own ``PYTHONPATH``."""
    root = Path(__file__).resolve().parent.parent
    paths = [] if root.name in ("site-packages", "dist-packages") else [str(root)]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in paths]
    return os.pathsep.join(paths)
