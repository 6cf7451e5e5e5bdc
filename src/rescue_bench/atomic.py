"""Replacing a file whole: readers see the old file or the new one, never half of either.

Every file the toolkit writes in one go (``run.json``, ``study.json``, an export, a cut clip, an installed
release) goes through :func:`atomic_path`: written under a temporary name beside the target, fsync'd, then
renamed over it (``os.replace``). A failure or a kill before the rename leaves the target as it was, and the
temporary goes with the failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write (by Python or by another program); when the block ends
    without an exception it is fsync'd and replaces ``path``, otherwise it is removed and ``path`` kept.

    The temporary keeps ``path``'s suffix (a tool such as ffmpeg picks its format by it) and is hidden.
    """
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield tmp
        _fsync(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` (:func:`atomic_path`); ``OSError`` when it fails, ``path`` kept."""
    with atomic_path(path) as tmp:
        # A temporary left behind, or planted there as a link, is removed and never written through.
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)


def _fsync(path: Path) -> None:
    # What was written reaches the disk before the rename makes it the file (a crash of the machine).
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
