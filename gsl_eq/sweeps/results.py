"""A sweep's results file: JSON Lines, one line per finished cell, appended as each cell finishes.

Each line is written whole by one write, flushed and synced before the next cell is recorded, so a
sweep stopped at any point (killed, the machine down) leaves every line it wrote valid; at most a
last line cut short, which reading ignores and the next sweep on the file cuts off before appending.

    store = ResultsFile("sweep.jsonl")
    store.append({"key": "3f2a...", "model": "bert", ...})
    store.latest()          # key -> its last line: what a rerun skips
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping


class ResultsFile:
    """The JSON Lines file at ``path`` (created at the first :meth:`append`)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    def read(self) -> list[dict[str, Any]]:
        """Every whole line that holds a JSON object, in file order: a last line with no newline (a
        write cut short) and lines that are not JSON objects are left out."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        lines = []
        for raw in data.split(b"\n")[:-1]:  # what follows the last newline is not a whole line
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            if isinstance(value, dict):
                lines.append(value)
        return lines

    def latest(self) -> dict[str, dict[str, Any]]:
        """Each key's last line (a cell run again has a later line)."""
        return {line["key"]: line for line in self.read() if isinstance(line.get("key"), str)}

    def repair(self) -> int:
        """Cut off a last line left unfinished (no newline), so the next line starts on its own;
        returns the bytes cut."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return 0
        if size == 0:
            return 0
        with open(self.path, "r+b") as f:
            f.seek(max(0, size - 1))
            if f.read(1) == b"\n":
                return 0
            f.seek(0)
            data = f.read()
            keep = data.rfind(b"\n") + 1
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
        return size - keep

    def append(self, line: Mapping[str, Any]) -> None:
        """Write ``line`` as one JSON line: a single write, flushed and synced to disk."""
        data = (json.dumps(line, separators=(", ", ": "), allow_nan=False) + "\n").encode()
        if self.path.parent != Path(""):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, data)
            while written < len(data):  # a short write (rare on local files): the rest, still in order
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
