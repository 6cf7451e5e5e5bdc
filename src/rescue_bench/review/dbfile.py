"""Owner-only SQLite files.

The review database holds the cookie-signing secret: whoever can read the file can forge any session,
the admin's included. So the file is created mode 0600 (SQLite gives its ``-wal``, ``-shm`` and
``-journal`` companions the mode of the database), and an existing file, or companion, that other local
users could read is tightened before it is used, or refused when it cannot be. No directory is created: a
database in a directory that does not exist is an error, as a mistyped path should be. PostgreSQL keeps
its data in the server; nothing here applies to it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from rescue_bench.errors import ConfigError

FILE_MODE = 0o600
COMPANIONS = ("", "-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)
class FileCheck:
    """What :func:`secure_sqlite_file` did."""

    path: Path | None
    """The database file (``None`` for PostgreSQL or an in-memory database)."""
    exposed: tuple[str, ...] = ()
    """Files that other users could read before they were tightened, as ``"PATH (was 0644)"``."""


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL; ``None`` for other databases and for in-memory SQLite.

    >>> sqlite_path("sqlite:///review.db"), sqlite_path("sqlite://"), sqlite_path("postgresql://h/db")
    (PosixPath('review.db'), None, None)
    """
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if not parsed.drivername.startswith("sqlite"):
        return None
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def secure_sqlite_file(url: str) -> FileCheck:
    """Create the database file owner-only, or tighten an existing one (and its companions) to 0600.

    Raises :class:`ConfigError` when a file others can read cannot be tightened (for example it belongs
    to another user).
    """
    path = sqlite_path(url)
    if path is None:
        return FileCheck(None)
    if not path.exists():
        _create(path)
        return FileCheck(path)
    if not path.is_file():
        raise ConfigError(f"the review database {path} is not a file")
    exposed = tuple(note for name in COMPANIONS if (note := _tighten(Path(f"{path}{name}"))) is not None)
    return FileCheck(path, exposed)


def _create(path: Path) -> None:
    try:
        # O_EXCL: another process creating it at the same moment keeps its own (owner-only) file
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        _tighten(path)
        return
    except OSError as exc:
        raise ConfigError(f"cannot open the review database {path}: {exc.strerror or exc}") from None
    os.close(fd)


def _tighten(path: Path) -> str | None:
    """Make ``path`` 0600 if group or others have any access; a note saying so, else ``None``."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot check the review database {path}: {exc.strerror or exc}") from None
    if not mode & 0o077:
        return None
    try:
        os.chmod(path, FILE_MODE)
    except OSError as exc:
        raise ConfigError(
            f"{path} holds the review app's signing secret but is readable by other users (mode "
            f"{mode:04o}) and cannot be made owner-only ({exc.strerror or exc}): run `chmod 600 {path}` "
            "as its owner"
        ) from None
    return f"{path} (was {mode:04o})"
