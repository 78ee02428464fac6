"""Forked computations: a bounded one (run_bounded) and a parallel map (run_parallel), also nested."""

from __future__ import annotations

import os
import threading
import time

import psutil

from gsl_eq.run.bounded import run_bounded, run_parallel


def test_run_parallel_maps_every_index_here_and_in_a_helper_process():
    """As the exact extractor runs it: inside run_bounded's child, which runs no other thread. The
    child works too; its helper (one, for two workers) takes what is left."""
    data = [3, 1, 4, 1, 5]  # inherited by the fork, not pickled

    def square(i: int) -> tuple[int, int]:
        time.sleep(0.2)  # long enough for the helper to start and take its share
        return data[i] ** 2, os.getpid()

    def mapped() -> tuple[dict, int]:
        return dict(run_parallel(square, len(data), 2)), os.getpid()

    done, child = run_bounded(mapped, 60)
    assert sorted(done) == list(range(5))
    assert [done[i][0] for i in range(5)] == [9, 1, 16, 1, 25]
    pids = {pid for _, pid in done.values()}
    assert child in pids and len(pids) == 2 and os.getpid() not in pids


def test_an_error_in_a_helper_is_raised_in_the_caller():
    def mapped() -> str:
        caller = os.getpid()

        def task(i: int) -> int:
            if os.getpid() != caller:
                raise ValueError(f"task {i} failed in the helper")
            time.sleep(0.3)  # the helper takes the next task meanwhile
            return i

        try:
            list(run_parallel(task, 3, 2))
        except ValueError as error:
            return str(error)
        return "no error"

    assert run_bounded(mapped, 60).endswith("failed in the helper")


def test_a_process_running_other_threads_maps_in_order_here():
    """A fork of a threaded process may hang on a lock another thread held: no fork there."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert list(run_parallel(lambda i: os.getpid(), 3, 2)) == [(i, os.getpid()) for i in range(3)]
    finally:
        stop.set()
        other.join()


def test_run_parallel_with_one_worker_runs_here_in_order():
    assert list(run_parallel(lambda i: (i, os.getpid()), 3, 1)) == [(i, (i, os.getpid())) for i in range(3)]


def test_a_bounded_computation_may_map_in_parallel_and_is_still_stopped():
    assert run_bounded(lambda: sorted(v for _, v in run_parallel(lambda i: i * i, 4, 2)), 60) == [0, 1, 4, 9]


def test_a_stopped_computation_stops_its_workers(tmp_path):
    def sleep(i: int) -> None:
        (tmp_path / f"{i}").write_text(str(os.getpid()))
        time.sleep(60)

    started = time.perf_counter()
    assert run_bounded(lambda: list(run_parallel(sleep, 2, 2)), 2.0) is None
    assert time.perf_counter() - started < 10
    time.sleep(0.5)
    for i in range(2):
        pid = int((tmp_path / f"{i}").read_text())
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_work_on_few_enodes_runs_in_this_process():
    """Forking a process with TVM loaded costs more than small work can overrun its limit by."""
    from gsl_eq.run.bounded import IN_PROCESS_ENODES

    here = os.getpid()
    assert run_bounded(os.getpid, 60, enodes=IN_PROCESS_ENODES) == here
    assert run_bounded(os.getpid, 60, enodes=IN_PROCESS_ENODES + 1) != here
    assert run_bounded(os.getpid, 60) != here
    assert run_bounded(os.getpid, 0, enodes=1) is None, "no time left: nothing is run"


def _bounded_in_a_pool_worker(_: int) -> tuple[bool, list[int]]:
    import multiprocessing

    daemonic = multiprocessing.current_process().daemon
    squares = run_bounded(lambda: sorted(v for _, v in run_parallel(lambda i: i * i, 4, 2)), 60)
    def pid(i: int) -> int:
        time.sleep(0.2)
        return os.getpid()

    pids = {p for _, p in run_parallel(pid, 4, 2)}  # a helper of its own, started here
    assert len(pids) == 2 and os.getpid() in pids
    assert multiprocessing.current_process().daemon == daemonic  # restored
    return daemonic, squares


def test_a_pool_worker_may_run_a_bounded_computation():
    """optimize() in a multiprocessing.Pool's worker: a daemonic process, which multiprocessing does not
    let start a process of its own."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:  # spawn: this test process runs threads
        assert pool.map(_bounded_in_a_pool_worker, [0]) == [(True, [0, 1, 4, 9])]
