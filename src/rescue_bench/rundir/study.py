"""A study directory as the run directories it holds, for every command that reads runs.

A study directory (``rescue-bench sweep``) holds ``study.json`` and one run directory per model and
perturbation. :func:`study_members` reads the runs it lists (the record's own schema, and its writer, are
``rescue_bench.study.record``'s; only the keys read here are checked); :func:`expand_run_dirs` turns every
study directory among some paths into its run directories, so ``report``, ``compare``, ``export`` and
``view`` take a study wherever they take a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Final

from pydantic import BaseModel, ConfigDict, ValidationError

from rescue_bench.errors import DataError
from rescue_bench.rundir.files import PREDICTIONS_FILE, read_json_object

STUDY_FILE: Final = "study.json"


class StudyMember(BaseModel):
    """One run of a study, as ``study.json`` lists it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    model: str
    perturbation: str = ""
    dir: str
    status: str = "pending"
    reason: str | None = None

    @property
    def label(self) -> str:
        return f"{self.model} ({self.perturbation})" if self.perturbation else self.model


class _Listing(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    runs: tuple[StudyMember, ...] = ()


def is_study(folder: Path) -> bool:
    """Whether ``folder`` is a study directory (it holds ``study.json``)."""
    return (folder / STUDY_FILE).is_file()


def study_members(folder: Path) -> list[tuple[StudyMember, Path]] | None:
    """The runs a study directory lists, each with its directory; ``None`` when ``folder`` is no study.

    Raises:
        DataError: ``study.json`` is unreadable, lacks a field, or names a directory outside the study.
    """
    path = folder / STUDY_FILE
    if not path.is_file():
        return None
    try:
        listing = _Listing.model_validate(read_json_object(path) or {})
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in error["loc"])
        raise DataError(f"{path}: {field}: {error['msg']}") from None
    out = []
    for member in listing.runs:
        name = PurePosixPath(member.dir)
        if name.is_absolute() or ".." in name.parts or not name.parts:
            raise DataError(f"{path}: run {member.label!r}: dir {member.dir!r} is not inside the study")
        out.append((member, folder / name))
    return out


def study_runs(paths: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """The paths with each study directory replaced by its runs that hold predictions, in study order (other
    paths kept as given), and the study runs with nothing to read yet (not started, or their directory gone).

    Raises:
        DataError: a study's ``study.json`` is unreadable or names a directory outside the study.
    """
    found: list[Path] = []
    pending: list[Path] = []
    for path in paths:
        members = study_members(path)
        if members is None:
            found.append(path)
            continue
        for _, where in members:
            (found if (where / PREDICTIONS_FILE).is_file() else pending).append(where)
    return found, pending


def expand_run_dirs(paths: Sequence[Path]) -> list[Path]:
    """:func:`study_runs`'s run directories, for commands that need every study to have one.

    Raises:
        DataError: a study's ``study.json`` is unreadable, or the study holds no run with predictions.
    """
    for path in paths:
        members = study_members(path)
        if members is not None and not any((w / PREDICTIONS_FILE).is_file() for _, w in members):
            raise DataError(f"study {path} holds no run with predictions yet (see {path / STUDY_FILE})")
    return study_runs(paths)[0]
