"""Reading the files of a source: only regular files and directories, and every failure named with its path.

A source path, and every ``*.json`` entry of a directory source, is checked for what it is before it is read:
a FIFO or a device is refused without opening it for a blocking read, a symlink loop is reported as one (the
operating system's ``ELOOP``), and a subdirectory that cannot be listed or a file that cannot be read is an
error naming it. Nothing in a source is skipped silently.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rescue_bench.data.sources import GIVE
from rescue_bench.errors import DataError

SourceKind = Literal["file", "directory"]
SKIPPED_NAME = "manifest.json"
"""Directory files with this name describe a tree; they are not samples."""


class SourceNotFound(DataError):
    """The source path does not exist (a usage error: exit code 2 in the CLI)."""


class UnreadableSource(SourceNotFound):
    """The source path exists but is not something samples can be read from (a usage error too)."""


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A path in a source that could not be read, and why (one line)."""

    path: Path
    reason: str


def source_kind(path: Path, shown: str) -> SourceKind:
    """``file`` or ``directory`` for a source path; raise a one-line error for anything else.

    Raises:
        SourceNotFound: nothing exists at ``path`` (a dangling symlink included).
        UnreadableSource: a symlink loop, a FIFO, a device or socket, or a path that cannot be examined.
    """
    try:
        info = path.stat()
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR) and not path.is_symlink():
            raise SourceNotFound(f"{shown}: no such file or directory ({GIVE})") from None
        raise UnreadableSource(f"{shown}: {describe_error(exc, path)}") from None
    if stat.S_ISDIR(info.st_mode):
        return "directory"
    if stat.S_ISREG(info.st_mode):
        return "file"
    raise UnreadableSource(
        f"{shown}: is {_file_type(info.st_mode)}, not a regular file or a directory ({GIVE})"
    )


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file; ``OSError`` (with a reason for :func:`describe_error`) otherwise.

    The file is opened non-blocking and checked on the open descriptor, so a FIFO put in a file's place is
    refused at once instead of waiting for a writer, and there is no gap between the check and the read.
    """
    # O_NONBLOCK and O_CLOEXEC are POSIX; elsewhere there are no FIFOs to open by name.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"is {_file_type(mode)}, not a regular file")
        return handle.read()


def describe_error(exc: OSError, path: Path) -> str:
    """Why ``path`` could not be read, in a few words.

    >>> describe_error(OSError(errno.ELOOP, "x"), Path("a.json"))
    'symlink loop (too many levels of symbolic links)'
    >>> describe_error(PermissionError(errno.EACCES, "Permission denied"), Path("a.json"))
    'cannot read: permission denied'
    """
    if exc.errno == errno.ELOOP:
        return "symlink loop (too many levels of symbolic links)"
    if exc.errno in (errno.ENOENT, errno.ENOTDIR) and path.is_symlink():
        return f"broken symbolic link (its target {os.readlink(path)!r} does not exist)"
    if exc.errno == errno.EINVAL and exc.strerror and exc.strerror.startswith("is "):
        return exc.strerror
    reason = (exc.strerror or str(exc) or type(exc).__name__).lower()
    return f"cannot read: {reason}"


def sample_files(root: Path) -> Iterator[Path | Unreadable]:
    """Every ``*.json`` file under ``root`` except manifests, in sorted path order, and every failure.

    Unlike :meth:`Path.rglob`, which passes over a subdirectory it cannot list, a directory that cannot be
    listed is yielded as :class:`Unreadable`. A symbolic link to a directory is followed once: one that leads
    back to a directory already walked (a loop, or a second way into the same tree) is :class:`Unreadable`,
    so the walk ends and no sample is read twice. ``*.json`` entries are yielded whatever their type:
    :func:`read_regular` refuses the ones that are not regular files.
    """
    found: list[Path | Unreadable] = []
    seen: dict[tuple[int, int], Path] = {}
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            info = folder.stat()
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            found.append(Unreadable(folder, f"directory {describe_error(exc, folder)}"))
            continue
        first = seen.setdefault((info.st_dev, info.st_ino), folder)
        if first != folder:
            found.append(Unreadable(folder, f"symlink loop: leads back to {str(first)!r}, already read"))
            continue
        for entry in entries:
            path = Path(entry.path)
            if _is_dir(entry):
                pending.append(path)
            elif entry.name.endswith(".json") and entry.name != SKIPPED_NAME:
                found.append(path)
    return iter(sorted(found, key=lambda item: item.path if isinstance(item, Unreadable) else item))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether an entry is a directory or a link to one; a broken or looping link is not."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _file_type(mode: int) -> str:
    """``a FIFO``, ``a character device``... for a mode that is not a regular file."""
    kinds = (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")
