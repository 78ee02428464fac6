"""Run a computation with a hard time bound.

Some solvers check their time limit only now and then (HiGHS can spend many times
its limit in presolve or in the first LP relaxation), and Python code cannot be
interrupted from outside. :func:`run_bounded` runs a function in a forked child
process and kills it when time is up, so a deadline is kept whatever the function does.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection, wait
from typing import TypeVar

T = TypeVar("T")


#: Work on at most this many e-nodes runs in the calling process: forking a process with TVM
#: loaded takes a while (copying its page tables), longer than such work overruns a limit by.
IN_PROCESS_ENODES = 1_000


def run_bounded(fn: Callable[[], T], seconds: float, enodes: int | None = None) -> T | None:
    """``fn()`` computed in a forked child process: its result (which must pickle), or None if
    it did not finish within ``seconds``. An exception in the child is raised again here.

    The child is a fork, so ``fn`` sees the caller's data without copying it; where fork is
    not available, or where ``fn`` works on at most :data:`IN_PROCESS_ENODES` e-nodes
    (``enodes``), ``fn`` runs here, bounded only by its own checks of the time.
    """
    if seconds <= 0:
        return None
    if "fork" not in multiprocessing.get_all_start_methods() or enodes is not None and enodes <= IN_PROCESS_ENODES:
        return fn()
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        os.setpgid(0, 0)  # its own process group, so that its workers are stopped with it
        try:
            outcome = (True, fn())
        except BaseException as error:  # noqa: BLE001 - handed to the parent as it is
            outcome = (False, error)
        send.send(outcome)
        os._exit(0)

    # not a daemon (whatever the caller is), so that it may fork workers (:func:`run_parallel`); it is
    # killed below all the same
    process = context.Process(target=child, daemon=False)
    with _forking():
        process.start()
    send.close()
    try:
        if not receive.poll(seconds):
            return None
        try:
            ok, value = receive.recv()
        except EOFError:  # the child died without an answer
            raise RuntimeError(f"the bounded computation's process ended with exit code {process.exitcode}") from None
        if not ok:
            raise value
        return value
    finally:
        if process.is_alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.kill()
        process.join()
        receive.close()


@contextlib.contextmanager
def _forking() -> Iterator[None]:
    """Where a child is forked: with the garbage collector off, and the process not daemonic.

    A fork has only the forking thread: anything that waits on the parent's thread pools hangs, as
    freeing an egglog e-graph does (rayon). So a child never collects garbage (it is forked with
    the collector off) and skips clean-up at exit (``os._exit``). A daemonic process (a
    ``multiprocessing.Pool`` worker calling ``optimize()``) may not start a child, lest it outlive
    it; the children here are killed before their caller returns, and :func:`run_bounded`'s own
    helpers (:func:`run_parallel`) need it not daemonic."""
    me = multiprocessing.current_process()
    daemonic, collecting = me.daemon, gc.isenabled()
    if daemonic:
        me.daemon = False
    gc.disable()
    try:
        yield
    finally:
        if daemonic:
            me.daemon = True
        if collecting:
            gc.enable()


def run_parallel(task: Callable[[int], T], count: int, workers: int) -> Iterator[tuple[int, T]]:
    """``(i, task(i))`` for ``i`` in ``range(count)``, computed by this process and ``workers - 1``
    forked helpers, each taking the next index left until none is; ``task`` is inherited by the
    forks, not pickled; the helpers' results must pickle. Here, in order, with one worker, without
    fork, or in a process running other threads: a fork copies only the calling thread, and a lock
    another held stays locked in the child (a pytest-xdist worker's pool hung so).
    :func:`run_bounded`'s child runs only its own.

    This process works too, rather than a pool of ``workers``: a fork of a process with TVM loaded,
    and a pool's start and stop, take a noticeable share of work that takes a few tenths of a second
    (the exact extractor's regions)."""
    if workers <= 1 or count <= 1 or "fork" not in multiprocessing.get_all_start_methods() or _threads() > 1:
        yield from ((index, task(index)) for index in range(count))
        return
    context = multiprocessing.get_context("fork")
    following = context.Value("i", 0)  # the next index no process has taken

    def taken() -> Iterator[int]:
        while True:
            with following.get_lock():
                index = following.value
                following.value += 1
            if index >= count:
                return
            yield index

    def helper(send: Connection) -> None:
        try:
            for index in taken():
                send.send((index, True, task(index)))
        except BaseException as error:  # noqa: BLE001 - handed to the caller as it is
            send.send((None, False, error))
        os._exit(0)  # no clean-up at exit, as run_bounded's child

    helpers, answers = [], []
    with _forking():
        for _ in range(min(workers, count) - 1):
            receive, send = context.Pipe(duplex=False)
            process = context.Process(target=helper, args=(send,), daemon=False)
            process.start()
            send.close()
            helpers.append(process)
            answers.append(receive)
    try:
        done = 0
        for index in taken():
            yield index, task(index)
            done += 1
        while answers:
            for receive in wait(answers):
                try:
                    index, ok, value = receive.recv()
                except EOFError:  # the helper has answered all it took, or died
                    answers.remove(receive)
                    continue
                if not ok:
                    raise value
                yield index, value
                done += 1
        if done < count:
            raise RuntimeError(f"a helper process ended without answering {count - done} of {count} tasks")
    finally:
        for process in helpers:
            if process.is_alive():
                process.kill()
            process.join()
        for receive in answers:
            receive.close()


def _threads() -> int:
    """The threads this process runs, native ones too where the system says (Linux)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()
