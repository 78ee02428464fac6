"""Writes benchmark results into sections of BENCHMARKS.md, one section per script.

Each script owns the text between ``<!-- begin NAME -->`` and ``<!-- end NAME -->``;
running it replaces that section and leaves the others alone.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

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
