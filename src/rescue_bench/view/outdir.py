"""Where ``view --bundle DIR`` may write: a new or empty directory, or a bundle this tool wrote before.

A bundle marks itself with :data:`MARKER`, a JSON list of the files it wrote. Replacing a bundle removes
exactly those files, and only when the directory holds nothing else: a folder of the user's, ``--bundle .``,
or the run directory being viewed is refused with one line, never emptied or overwritten.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from rescue_bench.errors import BenchError

MARKER = ".rescue-bench-bundle.json"
"""The bundle's own mark: ``{"tool": "rescue-bench view", "files": [relative paths]}``."""
TOOL = "rescue-bench view"


class BundleDirError(BenchError):
    """The bundle's directory cannot be used (not ours, a file, not writable)."""


def _listed(out: Path) -> set[str] | None:
    """The files an earlier bundle in ``out`` says it wrote (``None``: ``out`` holds no bundle of ours)."""
    try:
        mark = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(mark, dict) or mark.get("tool") != TOOL or not isinstance(mark.get("files"), list):
        return None
    return {f for f in mark["files"] if isinstance(f, str)}


def _present(out: Path) -> set[str]:
    return {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() or p.is_symlink()}


def check(out: Path) -> set[str]:
    """The files of an earlier bundle of ours that writing to ``out`` replaces (empty for a new directory).

    Raises:
        BundleDirError: ``out`` is a file, is not writable, or holds anything this tool did not write.
    """
    if out.is_symlink() and not out.exists():
        raise BundleDirError(
            f"--bundle {out}: is a symbolic link to {os.readlink(out)}, which does not exist; give a new or "
            "empty directory (or remove the link)"
        )
    if out.exists() and not out.is_dir():
        raise BundleDirError(f"--bundle {out}: is a file, not a directory; give a new or empty directory")
    if not out.exists():
        parent = next((p for p in out.absolute().parents if p.exists()), Path("/"))
        if not os.access(parent, os.W_OK | os.X_OK):
            raise BundleDirError(f"--bundle {out}: cannot create it, {parent} is not writable")
        return set()
    if not os.access(out, os.W_OK | os.X_OK):
        raise BundleDirError(f"--bundle {out}: the directory is not writable")
    if not any(out.iterdir()):
        return set()
    listed = _listed(out)
    if listed is None:
        raise BundleDirError(
            f"--bundle {out}: the directory is not empty and holds no bundle written by this tool "
            f"(no {MARKER}); give a new or empty directory"
        )
    present = _present(out)
    foreign = sorted(present - listed - {MARKER})
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise BundleDirError(
            f"--bundle {out}: holds files the previous bundle did not write ({shown}); "
            "move them away or give another directory"
        )
    return listed & present


def staging(out: Path) -> Path:
    """A new directory beside ``out`` to write the bundle into before it replaces anything."""
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    try:
        return Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.absolute().parent))
    except OSError as exc:
        raise BundleDirError(f"--bundle {out}: cannot write beside it ({exc.strerror})") from None


def install(staged: Path, out: Path, files: Iterable[str]) -> None:
    """Move the bundle written in ``staged`` into ``out`` (checked again), marked as ours."""
    old = check(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in sorted(old, reverse=True):
        (out / name).unlink()
    (out / MARKER).unlink(missing_ok=True)
    for folder in sorted((p for p in out.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    for entry in staged.iterdir():
        entry.rename(out / entry.name)
    staged.rmdir()
    record = {"tool": TOOL, "files": sorted(files)}
    (out / MARKER).write_text(json.dumps(record, indent=0) + "\n", encoding="utf-8")
