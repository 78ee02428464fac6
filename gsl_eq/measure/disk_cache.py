"""A JSON dictionary on disk that several processes share: what a measurement found, kept for
every later run (the measured cost model's op times, the schedule database's choices).

Reads never lock; a write merges under an exclusive lock with what others wrote meanwhile and
replaces the file atomically, so a reader sees the old file or the new one, never half of one.

    cache = JsonCache(default_cache_dir(), "measured.json", format=1)
    cache.merge({"key": 1.5e-5})
    cache.read()["key"]
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping


def default_cache_dir() -> Path:
    """``$GSL_EQ_CACHE`` if set, else ``~/.cache/gsl_eq``."""
    return Path(os.environ.get("GSL_EQ_CACHE") or Path.home() / ".cache" / "gsl_eq")


class JsonCache:
    """``<directory>/<name>``: a dictionary under ``field``, tagged with a ``format`` number
    (a file of another format reads as empty, and is replaced at the next write)."""

    def __init__(self, directory: str | os.PathLike[str], name: str, format: int, field: str = "entries"):
        self.directory = Path(directory)
        self.path = self.directory / name
        self.format = format
        self.field = field

    def read(self) -> dict[str, Any]:
        """The entries on disk; empty when the file is missing, unreadable or of another format."""
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != self.format:
            return {}
        entries = data.get(self.field, {})
        return entries if isinstance(entries, dict) else {}

    def merge(self, new: Mapping[str, Any]) -> dict[str, Any]:
        """Add ``new`` to the entries on disk (under a lock: read, update, replace atomically);
        returns all the entries."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with _locked(self.path.with_name(self.path.name + ".lock")):
            merged = self.read()
            merged.update(new)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{self.path.stem}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump({"format": self.format, self.field: merged}, f, indent=0, sort_keys=True)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        return merged


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock on ``path`` (a no-op where ``fcntl`` is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
