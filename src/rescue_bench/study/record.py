"""``<out>/study.json``: what a study is (its spec) and how each of its runs went, written atomically.

The file (its ``format`` is :data:`FORMAT`)::

    {"format": 1, "spec": {the flat study table}, "updated": ISO time,
     "runs": [{"model", "perturbation", "dir" (relative to the study directory), "status", "reason",
               "counts": {"instances", "done", "invalid", "request_failures"}, "cost_usd", "elapsed_s"}]}

``status`` is a run status (:mod:`rescue_bench.rundir.status`: ``finished``, ``degraded``, ``incomplete``,
``stopped``), ``failed`` (the endpoint refused: bad key, unknown model) or ``pending`` (not started).
``elapsed_s`` and ``cost_usd`` add up over every session of the study (judges' tokens included).
A run that did not finish is never shown as complete: the leaderboard marks it PARTIAL.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from rescue_bench.atomic import write_atomic
from rescue_bench.errors import DataError
from rescue_bench.redaction import scrub
from rescue_bench.rundir import STUDY_FILE, Counts
from rescue_bench.rundir.counts import total

FORMAT: Final = 1
Status = Literal["pending", "running", "finished", "degraded", "incomplete", "stopped", "failed"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RunCounts(_Record):
    """Instances over every task of one run."""

    instances: int = 0
    done: int = 0
    invalid: int = 0
    request_failures: int = 0

    @classmethod
    def of(cls, counts: Mapping[str, Counts]) -> RunCounts:
        """Summed from ``run.json``'s per-task counts."""
        tasks = counts.values()
        return cls(
            instances=total(tasks, "instances"),
            done=total(tasks, "done"),
            invalid=total(tasks, "invalid"),
            request_failures=total(tasks, "request_failures"),
        )


class RunEntry(_Record):
    model: str
    perturbation: str = ""
    dir: str
    status: Status = "pending"
    reason: str | None = None
    counts: RunCounts = Field(default_factory=RunCounts)
    cost_usd: float | None = None
    elapsed_s: float | None = None

    @property
    def label(self) -> str:
        return f"{self.model} ({self.perturbation})" if self.perturbation else self.model


class StudyRecord(_Record):
    format: int = FORMAT
    spec: dict[str, JsonValue]
    updated: str
    runs: tuple[RunEntry, ...]

    @property
    def failed(self) -> tuple[RunEntry, ...]:
        return tuple(r for r in self.runs if r.status != "finished")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def write_record(folder: Path, record: StudyRecord) -> Path:
    """Write ``study.json`` atomically (a temporary file renamed over it): a kill leaves old or new.

    The spec's URLs (each model's and judge's ``base_url``) are written without user info or query
    (:func:`~rescue_bench.redaction.scrub`), and so are the runs' reasons.
    """
    record = record.model_copy(update={"spec": scrub(record.spec), "runs": tuple(_scrubbed(record.runs))})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / STUDY_FILE
    write_atomic(path, (record.model_dump_json(indent=2) + "\n").encode("utf-8"))
    return path


def _scrubbed(runs: tuple[RunEntry, ...]) -> list[RunEntry]:
    return [r.model_copy(update={"reason": None if r.reason is None else scrub(r.reason)}) for r in runs]


def read_record(folder: Path) -> StudyRecord | None:
    """The study's record, or ``None`` when there is none yet.

    Raises:
        DataError: the file is not a study record (named with the field).
    """
    path = folder / STUDY_FILE
    if not path.is_file():
        return None
    try:
        return StudyRecord.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in error["loc"])
        raise DataError(f"{path}: {field}: {error['msg']}") from None
