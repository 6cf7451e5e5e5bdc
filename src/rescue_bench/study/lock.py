"""One sweep at a time on a study directory: an ``flock`` on ``<study>/.study.lock``.

Each run of a study takes its own run directory's lock, but two sweeps of one study would still meet: the
second finds every run in use, records them as failed in ``study.json`` and overwrites the first's record.
The study's lock is taken before ``study.json`` is read and held until the sweep ends; the kernel releases
it when the process dies, even by SIGKILL, so a killed sweep never leaves the study locked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from rescue_bench.errors import ConfigError

try:
    import fcntl
except ImportError:  # no flock on this platform (Windows): studies are unguarded, as runs are
    fcntl = None  # type: ignore[assignment]

LOCK_FILE: Final = ".study.lock"


@contextmanager
def study_lock(folder: Path) -> Iterator[None]:
    """Hold the study directory ``folder`` for this process; another sweep on it is a one-line error."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = (folder / LOCK_FILE).open("a")
    except (FileExistsError, NotADirectoryError):
        raise ConfigError(f"{folder}: a part of the path is a file; choose another --out") from None
    except OSError as exc:
        raise ConfigError(f"{folder}: cannot write the study directory ({exc.strerror})") from None
    with handle:
        if fcntl is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ConfigError(
                    f"{folder} is in use by another sweep; wait for it to end, or give another --out"
                ) from None
        yield
