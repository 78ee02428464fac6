"""Run a computation with a hard time bound.

Some solvers check their time limit only now and then (HiGHS can spend many times
its limit in presolve or in the first LP relaxation), and Python code cannot be
interrupted from outside. :func:`run_bounded` runs a function in a forked child
process and kills it when time is up, so a deadline is kept whatever the function does.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from typing import Callable, TypeVar

T = TypeVar("T")


def run_bounded(fn: Callable[[], T], seconds: float) -> T | None:
    """``fn()`` computed in a forked child process: its result (which must pickle), or None if
    it did not finish within ``seconds``. An exception in the child is raised again here.

    The child is a fork, so ``fn`` sees the caller's data without copying it; where fork is
    not available, ``fn`` runs here without a bound.
    """
    if seconds <= 0:
        return None
    if "fork" not in multiprocessing.get_all_start_methods():
        return fn()
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        try:
            outcome = (True, fn())
        except BaseException as error:  # noqa: BLE001 - handed to the parent as it is
            outcome = (False, error)
        send.send(outcome)
        os._exit(0)

    process = context.Process(target=child, daemon=True)
    # A fork has only the forking thread: anything that waits on the parent's thread pools hangs, as
    # freeing an egglog e-graph does (rayon). So the child never collects garbage (it is forked with
    # the collector off) and skips clean-up at exit.
    collecting = gc.isenabled()
    gc.disable()
    try:
        process.start()
    finally:
        if collecting:
            gc.enable()
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
            process.kill()
        process.join()
        receive.close()
