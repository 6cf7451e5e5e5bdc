"""The adapters' one door to run directories (docs/design.md): reading them and writing imported ones.

Everything the adapters know about run-directory files goes through here, on top of the project's own
readers and writers, so that when run-directory code moves (to a leaf module) only this module changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.errors import ConfigError
from rescue_bench.judge.merge import fingerprint_of
from rescue_bench.judge.runner import rescore_run
from rescue_bench.judge.scores import judged_run_lines
from rescue_bench.report.build import with_scores
from rescue_bench.report.measured import progress
from rescue_bench.rundir import (
    JudgmentLine,
    Manifest,
    PredictionLine,
    RequestLine,
    RunData,
    atomic_write_json,
    atomic_write_lines,
    load_run,
    run_lock,
)
from rescue_bench.rundir.files import jsonl_line
from rescue_bench.rundir.lines import Line
from rescue_bench.rundir.status import engine_unfinished

FILES = ("run.json", "requests.jsonl", "predictions.jsonl", "judgments.jsonl", "scores.json")

__all__ = [
    "FILES",
    "CiSettings",
    "ImportedRun",
    "RunData",
    "ScopeEntry",
    "completeness",
    "completeness_line",
    "judged",
    "read_run",
    "reply_texts",
    "write_run",
]


def read_run(path: Path) -> RunData:
    """A run directory, its append-only files reduced to their latest lines (``DataError`` if unreadable).

    An unfinished run (exported with ``--partial``) is scored in memory over its answered instances, never
    from a ``scores.json`` that may count its unanswered requests
    (:func:`~rescue_bench.report.build.with_scores`).
    """
    data = load_run(path)
    return with_scores(data) if engine_unfinished(data.manifest.status, data.manifest.counts) else data


def judged(data: RunData) -> list[PredictionLine]:
    """The run's prediction lines with their judgments folded into ``scores`` (as in ``scores.json``)."""
    return judged_run_lines(data)


def completeness(data: RunData) -> dict[str, Any] | None:
    """What an export says of a run that is not simply finished: ``mark`` (``PARTIAL`` for unfinished work,
    ``DEGRADED`` for a finished run whose answers mostly failed), the run's ``status`` and, per task, the
    instances ``answered`` of those ``planned``; ``None`` for a finished run. Every metric of an export is
    over the answered instances only (its ``n``)."""
    found = progress(data)
    if found.finished and data.manifest.status == "finished":
        return None
    mark = "DEGRADED" if found.finished else "PARTIAL"
    tasks = {task: {"answered": done, "planned": planned} for task, done, planned in found.tasks}
    return {"mark": mark, "status": data.manifest.status, "tasks": tasks}


def completeness_line(state: dict[str, Any]) -> str:
    """One line for a card: ``PARTIAL (status incomplete): itp 0/29 answered``."""
    counts = ", ".join(f"{t} {c['answered']}/{c['planned']}" for t, c in state["tasks"].items())
    return f"{state['mark']} (status {state['status']}): {counts or 'no counts'} instances answered"


def reply_texts(data: RunData) -> dict[str, str]:
    """The reply text of each request (``request_key`` -> text; the latest line wins)."""
    return {line.request_key: line.reply.text or "" for line in data.request_lines}


class CiSettings(BaseModel):
    """``scores.json``'s ``_meta.ci``: how the intervals were computed (defaults for files without it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: str = "percentile cluster bootstrap"
    cluster: str = "sample_id"
    strata: str = "scenario"
    confidence: float = 0.95
    n_resamples: int = 1000
    seed: int = 0


class ScopeEntry(BaseModel):
    """One task scope of ``scores.json``: its size and CIs; the metrics themselves are keyed by name."""

    # The metric keys differ per task, so they are kept as extra fields and read by name.
    model_config = ConfigDict(extra="allow", frozen=True)

    n: int | None = None
    ci: dict[str, list[float] | None] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ImportedRun:
    """A run made elsewhere (an inspect log), in the shapes of our files."""

    run: Mapping[str, Any]
    requests: list[RequestLine]
    predictions: list[PredictionLine]
    judgments: list[JudgmentLine]


def _write_jsonl(path: Path, records: Iterable[Line]) -> None:
    # Atomically and never through a link planted in the directory (rundir.refuse_link).
    atomic_write_lines(path, (jsonl_line(record.to_json()) for record in records))


def write_run(out: Path, imported: ImportedRun) -> dict[str, Any]:
    """Write ``imported`` as a finished run directory and aggregate it as a judge pass does; ``scores.json``.

    Judgment lines get the fingerprint of the prediction they scored. An existing run directory is refused
    rather than mixed with another run.
    """
    with run_lock(out, create=True):
        return _write_run(out, imported)


def _write_run(out: Path, imported: ImportedRun) -> dict[str, Any]:
    if (out / "predictions.jsonl").exists():
        raise ConfigError(f"{out} already holds a run; choose a new --out")
    fingerprints = {r.instance_id: fingerprint_of(r) for r in imported.predictions}
    judgments = [
        j.model_copy(update={"prediction_hash": fingerprints.get(j.instance_id)}) for j in imported.judgments
    ]
    atomic_write_json(out / "run.json", Manifest.from_json(imported.run, "run.json").to_json())
    _write_jsonl(out / "requests.jsonl", imported.requests)
    _write_jsonl(out / "predictions.jsonl", imported.predictions)
    if judgments:
        _write_jsonl(out / "judgments.jsonl", judgments)
    return rescore_run(out)
