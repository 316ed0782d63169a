"""An inter-process write lock, so writers in several processes take turns without polling.

SQLite serializes writers itself, but a waiting connection polls with growing sleeps (up to
100 ms). Writers that take this `flock` first queue in the kernel and wake as soon as the
previous commit is done. Readers never take it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: rely on SQLite's own locking
    fcntl = None  # type: ignore[assignment]

LOCK_FILE_NAME = "write.lock"
"""File in the data directory whose `flock` orders writers."""


class WriteLock:
    """Exclusive lock on `<data_dir>/write.lock`; use `with lock.held(): ...` around a transaction."""

    def __init__(self, data_dir: Path) -> None:
        self._fd = os.open(data_dir / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT, 0o644)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the duration of the block."""
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Release the file descriptor."""
        with contextlib.suppress(OSError):
            os.close(self._fd)
