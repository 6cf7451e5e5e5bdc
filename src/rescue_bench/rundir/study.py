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


def expand_run_dirs(paths: Sequence[Path]) -> list[Path]:
    """The paths with each study directory replaced by its runs that hold predictions, in study order
    (a run not started yet has nothing to read); other paths are kept as given.

    Raises:
        DataError: a study's ``study.json`` is unreadable, or the study holds no run with predictions.
    """
    out: list[Path] = []
    for path in paths:
        members = study_members(path)
        if members is None:
            out.append(path)
            continue
        found = [where for _, where in members if (where / PREDICTIONS_FILE).is_file()]
        if not found:
            raise DataError(f"study {path} holds no run with predictions yet (see {path / STUDY_FILE})")
        out += found
    return out
