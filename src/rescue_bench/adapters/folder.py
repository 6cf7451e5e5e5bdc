"""The folder an export writes, and what ``publish`` may upload from it.

An export folder holds one run's export and nothing else. :func:`claim` allows a new or empty folder, or a
folder that holds exactly an earlier export of this tool (the files its mark lists, unchanged or not): those
files are removed, and nothing else is touched. A folder holding anything else (a user's files, another
tool's output, a ``.env``) is refused with one line. :func:`mark` writes the mark, ``.rescue-bench-export``:
the format, the run, and each file written with its sha256. ``publish`` uploads the files the mark lists,
each checked against its hash (:func:`exported_files`), and never anything else in the folder.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, ValidationError

from rescue_bench.errors import ConfigError, DataError

MARK_FILE: Final = ".rescue-bench-export"
MARK_FORMAT: Final = 1
PENDING: Final = "pending"


class ExportMark(BaseModel):
    """``.rescue-bench-export``: which export wrote the folder and the files it wrote (relative, POSIX)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: int = MARK_FORMAT
    export: str
    """``eee`` or ``hf``."""
    run: str
    files: dict[str, str]
    """Relative path -> sha256 of the bytes written (:data:`PENDING` while the export is being written)."""


def read_mark(folder: Path) -> ExportMark | None:
    """The folder's export mark, or ``None`` when it has none (a damaged mark is a :class:`DataError`)."""
    path = folder / MARK_FILE
    if not path.is_file():
        return None
    try:
        mark = ExportMark.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        raise DataError(f"{path}: not a readable export mark; export into a new folder") from None
    for name in mark.files:
        if not _inside(name):
            raise DataError(f"{path}: lists {name!r}, which is not a file inside the folder")
    return mark


def _inside(name: str) -> bool:
    parts = Path(name).parts
    return bool(parts) and not Path(name).is_absolute() and ".." not in parts


def claim(folder: Path, export: str, run: Path, planned: Sequence[str]) -> None:
    """Make ``folder`` ready for a new export: create it, or empty it of an earlier export of this tool; then
    mark the files about to be written (``planned``, relative) as the export's own, not finished yet, so an
    export that fails midway leaves a folder the next export may replace and ``publish`` refuses.

    Raises:
        ConfigError: ``folder`` is a file, or holds anything an export of this tool did not write.
    """
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out {folder} is a file; give a new or empty folder")
    if folder.exists():
        _empty(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _write_mark(folder, ExportMark(export=export, run=str(run), files=dict.fromkeys(planned, PENDING)))


def _empty(folder: Path) -> None:
    """Remove an earlier export of this tool from ``folder``; refuse a folder holding anything else."""
    mark = read_mark(folder)
    ours = {MARK_FILE, *(mark.files if mark else ())}
    present = sorted(_relative(p, folder) for p in folder.rglob("*") if not _real_dir(p))
    foreign = [name for name in present if name not in ours]
    if foreign:
        what = "an earlier export and other files" if mark else "files this tool did not write"
        raise ConfigError(
            f"--out {folder} holds {what} ({foreign[0]!r}"
            f"{f' and {len(foreign) - 1} more' if len(foreign) > 1 else ''}); "
            "give a new or empty folder (an export replaces only an earlier export of its own)"
        )
    for name in present:
        (folder / name).unlink()
    # Only the folders the export made (parents of its files) go, and only when nothing else is in them.
    made = {parent for name in present for parent in Path(name).parents if parent != Path(".")}
    for directory in sorted(made, key=lambda p: -len(p.parts)):
        if (folder / directory).is_dir() and not any((folder / directory).iterdir()):
            (folder / directory).rmdir()


def _real_dir(path: Path) -> bool:
    """A directory, not a link to one (a link is a file here: listed and removed, or foreign)."""
    return path.is_dir() and not path.is_symlink()


def _relative(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix()


def mark(folder: Path, export: str, run: Path, written: Sequence[Path]) -> None:
    """Write the folder's export mark listing ``written`` (the files this export just wrote) with their
    sha256: the export is finished."""
    files = {_relative(p, folder): _sha256(p) for p in written}
    _write_mark(folder, ExportMark(export=export, run=str(run), files=files))


def _write_mark(folder: Path, found: ExportMark) -> None:
    (folder / MARK_FILE).write_text(found.model_dump_json(indent=2) + "\n", encoding="utf-8")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def exported_files(folder: Path, export: str) -> list[tuple[str, bytes]]:
    """The files an ``export`` export wrote into ``folder``, as (path in the repository, bytes): read once
    and checked against the mark's hash, so what is uploaded is what was checked.

    Raises:
        DataError: the folder has no mark of that export, or a listed file is missing or changed since.
    """
    found = read_mark(folder) if folder.is_dir() else None
    if found is None or found.export != export:
        raise DataError(
            f"{folder} is not a folder written by `rescue-bench export --format {export}` "
            f"(no {MARK_FILE} of it); export the run into a new folder first"
        )
    out = []
    if PENDING in found.files.values():
        raise DataError(f"{folder}: the export into it did not finish; export the run again")
    for name, digest in sorted(found.files.items()):
        path = folder / name
        if not path.is_file() or path.is_symlink():
            raise DataError(f"{folder}: {name} was written by the export and is missing now; export again")
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise DataError(f"{folder}: {name} changed after the export; export again before publishing")
        out.append((name, data))
    return out
