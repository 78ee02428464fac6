"""Writes benchmark results into sections of BENCHMARKS.md, one section per script.

Each script owns the text between ``<!-- begin NAME -->`` and ``<!-- end NAME -->``;
running it replaces that section and leaves the others alone.
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import re
import traceback
from pathlib import Path
from typing import Any, Callable

BENCHMARKS = Path(__file__).resolve().parent.parent / "BENCHMARKS.md"
HEADER = "# Benchmarks\n\nEvery figure below is written by a script in `benchmarks/`; none is edited by hand.\n"


def machine() -> str:
    """One line describing the machine and software the figures were measured on."""
    import numpy
    import tvm

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, "
            f"TVM {tvm.__version__}, NumPy {numpy.__version__}")


def table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_section(name: str, body: str) -> None:
    """Replace section ``name`` of BENCHMARKS.md with ``body`` (appending it if new)."""
    text = BENCHMARKS.read_text() if BENCHMARKS.exists() else HEADER
    block = f"<!-- begin {name} -->\n{body.strip()}\n<!-- end {name} -->"
    pattern = re.compile(rf"<!-- begin {re.escape(name)} -->.*?<!-- end {re.escape(name)} -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    BENCHMARKS.write_text(text)


def _child(conn: Any, fn: Callable[..., dict], args: tuple) -> None:
    try:
        conn.send(fn(*args))
    except Exception as e:  # noqa: BLE001 - reported in the row
        traceback.print_exc()
        conn.send({"error": f"{type(e).__name__}: {e}"})


def in_child(fn: Callable[..., dict], *args: Any) -> dict:
    """``fn(*args)`` (a row) in a fresh process, spawned (a fork after egglog is loaded can hang):
    every run starts with the memory and caches of none before it. A raising or dying child gives
    ``{"error": ...}``."""
    receive, send = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.get_context("spawn").Process(target=_child, args=(send, fn, args))
    process.start()
    send.close()
    try:
        row = receive.recv()
    except EOFError:
        row = {"error": "the process died"}
    process.join()
    return row
