"""The viewer's one door to run directories (layout in docs/design.md) and the data they were built from.

Every import of run-directory code (reader of the files, the recorded config) lives here, so that the code can
be re-pointed in one place when it moves. A run is read once per process and indexed (:class:`RunView`); it is
read again only when one of its files changed size or modification time, which is how a run that is still
going shows its new lines.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rescue_bench.data.load import load_samples
from rescue_bench.data.schema import Sample
from rescue_bench.data.sources import is_named
from rescue_bench.engine.plans import select_samples
from rescue_bench.errors import BenchError
from rescue_bench.judge.scores import judged_run_lines
from rescue_bench.records import Json
from rescue_bench.rundir import (
    JUDGMENTS_FILE,
    PREDICTIONS_FILE,
    PROTOCOL,
    REQUESTS_FILE,
    RUN_FILE,
    SCORES_FILE,
    Counts,
    JudgmentLine,
    Manifest,
    PredictionLine,
    RequestLine,
    RunData,
    RunDirError,
    load_run,
    read_json_object,
)
from rescue_bench.rundir.status import FINAL
from rescue_bench.spec.record import dataset_hash, spec_from_manifest
from rescue_bench.tasks import TASK_NAMES
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.view.rows import InstanceRow, index_rows

COMPLETE = FINAL
"""Statuses of a run that has an answer for every instance (docs/viewer.md: partial and degraded marks)."""
FILES = (RUN_FILE, PREDICTIONS_FILE, REQUESTS_FILE, JUDGMENTS_FILE, SCORES_FILE)
FACT_KEYS = frozenset({"latency", "usage", "attempts", "cached", "masked", "refused", "single", "time"})
"""The fields of a request line shown as its facts."""
Signature = tuple[tuple[int, int], ...]


class ViewError(BenchError):
    """A run directory (or its data source) the viewer cannot read; the message names file and line."""


@dataclass(frozen=True, slots=True)
class ReplyRecord:
    """The parts of one ``requests.jsonl`` line the viewer shows."""

    request_key: str
    instance_ids: tuple[str, ...]
    text: str | None
    reasoning: str | None
    finish_reason: str | None
    error: str | None
    line: RequestLine

    @property
    def repeat(self) -> int:
        return self.line.repeat

    @property
    def facts(self) -> dict[str, Json]:
        """Latency, tokens, attempts, cache hit... of the request line, in file order."""
        return self.line.model_dump(mode="json", include=set(FACT_KEYS))


@dataclass(frozen=True, slots=True)
class RunView:
    """One run directory, read and indexed."""

    index: int
    path: Path
    data: RunData
    rows: tuple[InstanceRow, ...]
    by_id: Mapping[str, InstanceRow]
    """Each instance's first row (repeat 0 of a run with repeats)."""
    by_key: Mapping[tuple[str, int], InstanceRow]
    """Each (instance, repeat)'s row."""
    replies: Mapping[tuple[str, int], ReplyRecord]
    """Request records by (request key, repeat): every repeat of a request has the same key."""
    records: tuple[PredictionLine, ...]
    """The predictions with their judgments folded in (what reports and comparisons read)."""
    judgments: Mapping[str, tuple[JudgmentLine, ...]] = field(default_factory=dict)
    """The judgments of each prediction line, by its line key (instance and repeat, as judge.merge joins)."""

    @property
    def name(self) -> str:
        """The run's model, and its perturbations when it has any (what the viewer calls the run)."""
        names = self.data.manifest.perturbed
        if names:
            return f"{self.data.name} ({', '.join(names)})"
        return self.data.name

    @property
    def status(self) -> str:
        return self.data.manifest.status or "unknown"

    @property
    def partial(self) -> bool:
        """Still going, stopped or with instances that got no answer: what is shown is what was written so
        far, never a final result (``degraded`` is complete, and marked apart)."""
        return self.status not in COMPLETE

    @property
    def degraded(self) -> bool:
        """Every instance answered, but too many answers were invalid: shown with a mark."""
        return self.status == "degraded"

    def validity(self, task: str | None = None) -> tuple[int, int] | None:
        """(valid, instances) from ``run.json``'s counts, of one task or summed over all; ``None`` unknown."""
        counts = self.data.manifest.counts
        chosen = [counts.get(task, Counts())] if task else list(counts.values())
        if not chosen or not all(c.has("valid") and c.has("instances") for c in chosen):
            return None
        return sum(c.valid for c in chosen), sum(c.instances for c in chosen)

    @property
    def tasks(self) -> list[str]:
        return self.data.tasks

    @property
    def repeats(self) -> int:
        """How many times the run asked each instance (``--repeats``)."""
        return self.data.repeats

    def reply_of(self, row: InstanceRow) -> ReplyRecord | None:
        """The request record that answered ``row`` (its repeat's), if any."""
        return self.replies.get((row.request_key, row.repeat)) if row.request_key else None

    def repeats_of(self, instance_id: str) -> list[InstanceRow]:
        """Every repeat's row of one instance, repeat by repeat."""
        return [row for r in range(self.repeats) if (row := self.by_key.get((instance_id, r))) is not None]

    def expected(self, task: str) -> int | None:
        found = self.data.manifest.counts.get(task)
        return found.instances if found is not None and found.has("instances") else None


def run_labels(views: Sequence[RunView]) -> dict[int, str]:
    """Each run's name (model, and perturbations), with its directory name where two runs share one."""
    names = [v.name for v in views]
    return {v.index: f"{v.name} ({v.path.name})" if names.count(v.name) > 1 else v.name for v in views}


def _reply(line: RequestLine) -> ReplyRecord:
    return ReplyRecord(
        request_key=line.request_key,
        instance_ids=line.instance_ids,
        text=line.reply.text,
        reasoning=line.reply.reasoning,
        finish_reason=line.reply.finish_reason,
        error=line.error,
        line=line,
    )


def read_run(path: Path, index: int = 0) -> RunView:
    """Read and index one run directory.

    Raises:
        ViewError: not a run directory, or a damaged file (the message names the file and line).
    """
    try:
        data = load_run(path)
        records = tuple(judged_run_lines(data))
    except BenchError as exc:
        raise ViewError(str(exc)) from None
    if data.manifest.protocol > PROTOCOL:  # its numbers follow rules this version does not know
        raise ViewError(str(data.manifest.protocol_note(path)))
    unknown = sorted(set(data.tasks) - set(TASK_NAMES))
    if unknown:
        shown = ", ".join(repr(t[:40]) for t in unknown[:3])
        raise ViewError(
            f"{path / PREDICTIONS_FILE}: unknown task name(s) {shown}; choose among {', '.join(TASK_NAMES)}"
        )
    replies = {(line.request_key, line.repeat): _reply(line) for line in data.request_lines}
    judgments: dict[str, list[JudgmentLine]] = {}
    for line in data.judgment_lines:
        judgments.setdefault(line.key, []).append(line)
    rows = index_rows(records, judgments, {k: r.text or "" for k, r in replies.items()})
    by_id: dict[str, InstanceRow] = {}
    for row in rows:
        by_id.setdefault(row.instance_id, row)
    return RunView(
        index=index,
        path=path,
        data=data,
        rows=tuple(rows),
        by_id=by_id,
        by_key={row.key: row for row in rows},
        replies=replies,
        records=records,
        judgments={k: tuple(v) for k, v in judgments.items()},
    )


def signature(path: Path) -> Signature:
    """(modification time, size) of each file of the run; a change means new lines to read."""
    out = []
    for name in FILES:
        try:
            stat = (path / name).stat()
        except FileNotFoundError:
            out.append((0, -1))
        else:
            out.append((stat.st_mtime_ns, stat.st_size))
    return tuple(out)


class RunSource:
    """A run directory read on first use and again only after one of its files changed."""

    def __init__(self, path: Path, index: int) -> None:
        self.path = path
        self.index = index
        self._lock = threading.Lock()
        self._seen: Signature | None = None
        self._view: RunView | None = None

    def get(self) -> RunView:
        """The current view of the run. Raises :class:`ViewError` for a damaged directory."""
        with self._lock:
            now = signature(self.path)
            if self._view is None or now != self._seen:
                self._view = read_run(self.path, self.index)
                self._seen = now
            return self._view


def run_status(path: Path) -> str | None:
    """``run.json``'s status, read alone (``None`` when it cannot be read: the viewer then says why)."""
    try:
        found = read_json_object(path / RUN_FILE)
        return None if found is None else Manifest.from_json(found).status
    except RunDirError:
        return None


def check_run_dir(path: Path) -> None:
    """A clear error unless ``path`` looks like a run directory."""
    if not path.is_dir():
        raise ViewError(f"{path}: no such directory (give a run directory made by `rescue-bench run`)")
    if not (path / PREDICTIONS_FILE).exists():
        raise ViewError(f"{path} is not a run directory: {PREDICTIONS_FILE} is missing")


# -- the data a run was built from ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    """The samples of a run (by id) and the task settings it was built with, or why they are unavailable."""

    samples: Mapping[str, Sample]
    cfg: TaskConfig
    batch_sizes: Mapping[str, int]
    prompt_hashes: Mapping[str, str]
    problem: str | None = None
    texts: Mapping[str, Sequence[tuple[int, str]]] = field(default_factory=dict)
    """Per sample, ``(row_index, lower-cased "speaker: words")`` for the text search."""
    built: dict[tuple[str, ...], Any] = field(default_factory=dict)
    """Memo of the instances built per (task, sample), filled by the transcript rebuild."""
    origin: str = ""
    """Where the rebuilt transcript and messages come from, and whether the data still is the run's."""
    exact: bool = False
    """Today's data has the run's recorded dataset hash: the rebuilt messages are the ones sent."""
    digest: str = ""
    """The dataset hash of today's selection (what :attr:`samples` hold)."""


def _data_path(run: Manifest, run_dir: Path) -> str:
    data = run.selection.data or "demo"
    if is_named(data) or Path(data).expanduser().is_absolute():
        return data
    # a relative path was relative to where the run was started: try there, then beside the run directory
    for base in (Path.cwd(), run_dir.parent, run_dir.parent.parent):
        if (base / data).exists():
            return str(base / data)
    return data


def data_note(run: Manifest, where: str, today: str) -> tuple[str, bool]:
    """What the rebuilt transcript and messages come from, and whether they are exactly what was sent: the
    run's recorded dataset hash (``run.json``) against ``today``'s hash of the same selection of the file."""
    recorded = run.dataset.hash
    if recorded is None:
        return (
            f"Rebuilt from {where} (sha256 {today[:12]}); the run recorded no dataset hash, so it cannot be "
            "checked that this is the data the model saw.",
            False,
        )
    if recorded != today:
        return (
            f"The data changed since the run: it recorded dataset sha256 {recorded[:12]}, {where} now gives "
            f"{today[:12]}. The transcript and messages below are rebuilt from today's file and may not be "
            "what the model saw.",
            False,
        )
    return f"Rebuilt from {where}: same content as the run recorded (dataset sha256 {today[:12]}).", True


def read_source(
    run: Manifest, run_dir: Path, load: Callable[[str], Sequence[Sample]] = load_samples
) -> Source:
    """Load the samples a run used; a problem (missing file, no recorded config) is reported, not raised."""
    sizes = dict(run.batch_sizes)
    hashes = dict(run.prompt_hashes)
    where = _data_path(run, run_dir)
    try:
        config = spec_from_manifest(run.to_json())
        cfg = config.task_config()
        samples = load(where)
        selected = select_samples(samples, config)
    except BenchError as exc:
        return Source({}, TaskConfig(), sizes, hashes, f"the run's data cannot be loaded: {exc}")
    today = dataset_hash(selected)
    note, exact = data_note(run, where, today)
    chosen = {s.sample_id: s for s in selected}
    return Source(
        chosen, cfg, sizes, hashes, texts=sample_texts(selected), origin=note, exact=exact, digest=today
    )


class SourceCache:
    """The data of each run, loaded on first use (only the instance page and the text search need it).

    Runs on the same data file share its loading, and runs of the same content and task settings share the
    instances and requests rebuilt from it (ten models on one data set rebuild each request once).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: dict[Path, Source] = {}
        self._files: dict[tuple[str, tuple[int, int]], Sequence[Sample]] = {}
        self._built: dict[tuple[str, str], dict[tuple[str, ...], Any]] = {}

    def _load(self, where: str) -> Sequence[Sample]:
        try:
            stat = Path(where).stat()
            key = (where, (stat.st_mtime_ns, stat.st_size))
        except OSError:
            key = (where, (0, 0))
        if key not in self._files:
            self._files[key] = load_samples(where)
        return self._files[key]

    def get(self, view: RunView) -> Source:
        with self._lock:
            if view.path not in self._loaded:
                found = read_source(view.data.manifest, view.path, self._load)
                if not found.problem:
                    shared = self._built.setdefault((found.digest, repr(found.cfg)), found.built)
                    found = replace(found, built=shared)
                self._loaded[view.path] = found
            return self._loaded[view.path]


def sample_texts(samples: Sequence[Sample]) -> dict[str, list[tuple[int, str]]]:
    """Per sample, ``(row_index, lower-cased "speaker: words")`` for the text search."""
    return {
        s.sample_id: [(r.row_index, f"{r.primary_speaker}: {r.dialogue_cleaned}".lower()) for r in s.rows]
        for s in samples
    }
