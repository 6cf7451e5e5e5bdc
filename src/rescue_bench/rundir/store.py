"""The engine's handle on one run directory: lock, append, compact, replace ``run.json`` and ``scores.json``.

Resume rule: an instance is finished when ``predictions.jsonl`` has a line for it. When an instance has
several lines (``--retry-failed`` re-asks invalid ones and appends), **the latest line wins**. At the end of
every run the file is rewritten (atomically) with exactly one line per instance, the latest, in instance
order.

A run directory belongs to one configuration: :meth:`RunStore.check_compatible` refuses a changed one and
names what changed. This is the only writer of ``run.json`` (the judge pass writes ``judging.json``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Concatenate, ParamSpec, TypeVar

from rescue_bench.errors import ConfigError
from rescue_bench.records import Json
from rescue_bench.redaction import scrub
from rescue_bench.rundir.files import (
    JUDGING_FILE,
    LOCK_FILE,
    PREDICTIONS_FILE,
    REQUESTS_FILE,
    RUN_FILE,
    SCORES_FILE,
    WRITTEN_FILES,
    JsonlAppender,
    RunDirError,
    atomic_write_json,
    atomic_write_lines,
    jsonl_line,
    line_problem,
    raw_lines,
    read_json_object,
    refuse_link,
    rejected_path,
    set_aside,
    write_failure,
)
from rescue_bench.rundir.judging import Judging
from rescue_bench.rundir.lines import PredictionLine, RequestLine
from rescue_bench.rundir.manifest import DatasetInfo, Manifest, judging_of

try:
    import fcntl
except ImportError:  # no flock on this platform (Windows): runs are unguarded
    fcntl = None  # type: ignore[assignment]


log = logging.getLogger("rescue_bench.rundir")
P = ParamSpec("P")
R = TypeVar("R")
SHOWN_REJECTS = 5
"""Lines set aside that are named one by one in the warnings; the rest are counted."""


@dataclass(frozen=True, slots=True)
class RejectedLine:
    """A line of a JSONL file that the run cannot use: where it is, what is wrong, and its bytes."""

    path: Path
    number: int
    reason: str
    raw: bytes

    def __str__(self) -> str:
        return f"{self.path}:{self.number}: {self.reason}"


class RunStore:
    """One run directory.

    Raises:
        ConfigError: ``root`` exists and is not a directory (checked before anything is written).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError(f"{self.root} is a file, not a run directory; choose another --out")
        self._requests: JsonlAppender | None = None
        self._predictions: JsonlAppender | None = None
        self._lock: IO[str] | None = None
        self._lines: dict[str, int] = {}
        self._written: dict[str, tuple[PredictionLine, bytes]] = {}
        """The latest prediction line per key that this store read or appended, with its bytes: compaction
        writes a line it is given back as these bytes, so the file keeps the bytes it had."""
        self.rejected: list[RejectedLine] = []
        """Lines of ``predictions.jsonl`` seen by :meth:`latest_predictions` that the run cannot use (bad
        JSON, a bad field); compaction adds those naming an instance outside the plan, and sets all aside."""

    def lock(self) -> None:
        """Take the directory for this process; a second process on the same run gets a :class:`ConfigError`.

        The lock is an ``flock`` on ``.lock``: the kernel releases it when the process dies, even by SIGKILL.
        """
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # Every writer takes the lock first: a record file planted as a link is named before anything
            # reads or writes through it (rundir.files.refuse_link).
            for name in (LOCK_FILE, *WRITTEN_FILES):
                refuse_link(self.root / name)
            handle = (self.root / LOCK_FILE).open("a")
        except (FileExistsError, NotADirectoryError):
            raise ConfigError(f"{self.root}: a part of the path is a file; choose another --out") from None
        except OSError as exc:
            raise write_failure(self.root / LOCK_FILE, exc) from None
        if fcntl is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                raise ConfigError(f"{self.root} is in use by another rescue-bench process") from None
        self._lock = handle

    @property
    def run_file(self) -> Path:
        return self.root / RUN_FILE

    @property
    def requests_file(self) -> Path:
        return self.root / REQUESTS_FILE

    @property
    def predictions_file(self) -> Path:
        return self.root / PREDICTIONS_FILE

    @property
    def scores_file(self) -> Path:
        return self.root / SCORES_FILE

    def manifest(self) -> dict[str, Json] | None:
        return read_json_object(self.run_file)

    def check_compatible(self, manifest: Mapping[str, Json]) -> None:
        """Raise :class:`ConfigError` when the directory holds a run of another configuration."""
        old = self.manifest()
        if old is None:
            if self.predictions_file.exists():
                raise ConfigError(f"{self.root} holds predictions but no {RUN_FILE}; choose another --out")
            return
        changes = describe_changes(old, manifest)
        if changes:
            listed = "; ".join(changes[:5]) + (f"; and {len(changes) - 5} more" if len(changes) > 5 else "")
            raise ConfigError(
                f"{self.root} holds a run with another configuration ({listed}); "
                "use another --out, or remove the directory to start over"
            )

    def is_new(self) -> bool:
        """Whether the directory holds no run yet (no manifest, no records)."""
        return not any(f.exists() for f in (self.run_file, self.predictions_file, self.requests_file))

    def open(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self._requests = JsonlAppender(self.requests_file)
        self._predictions = JsonlAppender(self.predictions_file)

    def close(self) -> None:
        """Close both appenders; a failure of the first (a full disk) still closes the second."""
        requests, predictions = self._requests, self._predictions
        self._requests = self._predictions = None
        try:
            if requests is not None:
                requests.close()
        finally:
            if predictions is not None:
                predictions.close()

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def append_request(self, record: Mapping[str, Json]) -> None:
        assert self._requests is not None, "RunStore.open() first"
        self._requests.append([record])

    def append_predictions(self, records: Sequence[Mapping[str, Json]]) -> list[PredictionLine]:
        """Append ``records`` as they are and return them typed (a record that is not a
        :class:`PredictionLine` is a :class:`RunDirError` before anything is written)."""
        assert self._predictions is not None, "RunStore.open() first"
        typed = [
            PredictionLine.from_json(record, f"{self.predictions_file} (appending)") for record in records
        ]
        for line, raw in zip(typed, self._predictions.append(records), strict=True):
            self._written[line.key] = (line, raw)
        return typed

    def write_manifest(self, manifest: Mapping[str, Json]) -> None:
        """Write ``run.json``; its URLs keep no user info or query (:func:`~rescue_bench.redaction.scrub`).

        A checkpoint: the records appended so far are fsync'd first, so that ``run.json`` never counts
        records that a crash of the machine could still take back.
        """
        for appender in (self._requests, self._predictions):
            if appender is not None:
                appender.sync()
        self.root.mkdir(parents=True, exist_ok=True)
        self._move_old_judging()
        atomic_write_json(self.run_file, scrub(dict(manifest)))

    def _move_old_judging(self) -> None:
        """Keep what an older judge pass left in ``run.json`` by writing it to ``judging.json`` first.

        Run directories from before ``judging.json`` held the judge counts in ``run.json``; the engine now
        writes ``run.json`` without them, so they move before the first rewrite.
        """
        judging_file = self.root / JUDGING_FILE
        old = self.manifest()
        if old is None or judging_file.exists():
            return
        judging = judging_of(None, Manifest.from_json(old, str(self.run_file)))
        if judging != Judging():
            atomic_write_json(judging_file, judging.to_json())

    def latest_predictions(self) -> dict[str, PredictionLine]:
        """The latest line per line key (:attr:`PredictionLine.key`), typed.

        A line that is not a prediction (bad JSON, a misspelt or mistyped field) is not fatal: it is kept in
        :attr:`rejected`, its instance counts as not done (asked again), and compaction sets the line aside.
        """
        path = self.predictions_file
        latest: dict[str, PredictionLine] = {}
        self.rejected, self._lines = [], {}
        for number, raw in raw_lines(path):
            record = line_problem(raw)
            try:
                if isinstance(record, str):
                    raise RunDirError(f"{path}:{number}: {record}")
                line = PredictionLine.from_json(record, f"{path}:{number}")
            except RunDirError as exc:
                reason = str(exc).removeprefix(f"{path}:{number}: ")
                self.rejected.append(RejectedLine(path, number, reason, raw))
                continue
            latest[line.key] = line
            self._lines[line.key] = number
            # Encoded as compaction has always rewritten an earlier line: the bytes this tool wrote it with.
            self._written[line.key] = (line, jsonl_line(record))
        return latest

    def request_lines(self) -> list[RequestLine]:
        """Every line of ``requests.jsonl`` that is a :class:`RequestLine`, typed.

        A bad line is named in a warning and left where it is (not counted): the counts then miss one
        request, while the run's results, which come from ``predictions.jsonl``, are whole.
        """
        path = self.requests_file
        lines: list[RequestLine] = []
        for number, raw in raw_lines(path):
            record = line_problem(raw)
            try:
                if isinstance(record, str):
                    raise RunDirError(f"{path}:{number}: {record}")
                lines.append(RequestLine.from_json(record, f"{path}:{number}"))
            except RunDirError as exc:
                log.warning("warning: %s; line left out of the counts", exc)
        return lines

    def compact_predictions(
        self, order: Sequence[str], latest: Mapping[str, PredictionLine] | None = None
    ) -> list[PredictionLine]:
        """Rewrite ``predictions.jsonl`` with one line per planned instance (the latest), in ``order``.

        ``order`` holds every instance id of the run's plan. A line naming another instance does not belong
        to this run: it is set aside in ``predictions.rejected.jsonl``, as are the lines
        :meth:`latest_predictions` could not read, each named (file and line) in a warning; nothing leaves the
        file unrecorded.
        ``latest`` is the caller's up-to-date view of the file (latest line per key), which saves reading it
        again. A line this store read or appended is written back as the bytes it had; another is encoded
        anew (:meth:`PredictionLine.to_json`).
        """
        latest = self.latest_predictions() if latest is None else latest
        ranked = {iid: i for i, iid in enumerate(order)}
        foreign = [iid for iid in latest if iid not in ranked]
        rejected = self.rejected + [self._foreign(iid, latest[iid]) for iid in foreign]
        records = sorted((r for iid, r in latest.items() if iid in ranked), key=lambda r: ranked[r.key])
        appender, self._predictions = self._predictions, None
        reopen = appender is not None
        if appender is not None:
            appender.close()
        # Set aside first: a failure between the two writes then leaves a line in both files, never in none.
        set_aside(self.predictions_file, [line.raw for line in sorted(rejected, key=lambda x: x.number)])
        atomic_write_lines(self.predictions_file, (self._line_of(r) for r in records))
        self._predictions = JsonlAppender(self.predictions_file) if reopen else None
        _warn_rejected(rejected, rejected_path(self.predictions_file))
        self.rejected = []
        return records

    def _line_of(self, line: PredictionLine) -> bytes:
        """The line's JSONL bytes: as read or appended when it is that line, else encoded anew."""
        written = self._written.get(line.key)
        return written[1] if written is not None and written[0] == line else jsonl_line(line.to_json())

    def _foreign(self, iid: str, line: PredictionLine) -> RejectedLine:
        raw = self._line_of(line)
        reason = f"instance {iid!r} is not in this run's plan"
        return RejectedLine(self.predictions_file, self._lines.get(iid, 0), reason, raw)

    def write_scores(self, scores: Mapping[str, Json]) -> None:
        atomic_write_json(self.scores_file, dict(scores))


_HELD: dict[Path, tuple[RunStore, int]] = {}
_HELD_GUARD = threading.Lock()


@contextlib.contextmanager
def run_lock(root: Path, *, create: bool = False) -> Iterator[None]:
    """Hold the run directory's lock (:meth:`RunStore.lock`) for the block; a second process gets a one-line
    :class:`ConfigError`. Re-entrant within a process (a judge pass rescoring inside its own lock).

    Without ``create`` a directory that does not exist is not made: the block's reader names what is missing.
    """
    key = Path(root).resolve()
    if not create and not key.is_dir():
        yield
        return
    with _HELD_GUARD:
        held = _HELD.get(key)
        if held is None:
            store = RunStore(key)
            store.lock()
            held = (store, 0)
        _HELD[key] = (held[0], held[1] + 1)
    try:
        yield
    finally:
        with _HELD_GUARD:
            store, count = _HELD.pop(key)
            if count > 1:
                _HELD[key] = (store, count - 1)
            else:
                store.unlock()


def locked_run(
    write: Callable[Concatenate[Path, P], Awaitable[R]],
) -> Callable[Concatenate[Path, P], Awaitable[R]]:
    """``write(run_dir, ...)`` holding ``run_dir``'s lock (:func:`run_lock`) from start to end."""

    @functools.wraps(write)
    async def locked(run_dir: Path, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with run_lock(run_dir):
            return await write(run_dir, *args, **kwargs)

    return locked


def _warn_rejected(rejected: Sequence[RejectedLine], target: Path) -> None:
    if not rejected:
        return
    ordered = sorted(rejected, key=lambda x: x.number)
    for line in ordered[:SHOWN_REJECTS]:
        log.warning("warning: %s; line set aside in %s", line, target)
    if len(ordered) > SHOWN_REJECTS:
        log.warning("warning: %d more lines set aside in %s", len(ordered) - SHOWN_REJECTS, target)


def describe_changes(old: Mapping[str, Json], new: Mapping[str, Json]) -> list[str]:
    """What differs between two manifests: config, model, dataset content, prompt templates.

    >>> old = {"config": {"model": "openai/a"}, "dataset": {"hash": "x"}, "prompt_hashes": {"itp": "1"}}
    >>> new = {"config": {"model": "openai/b"}, "dataset": {"hash": "y"}, "prompt_hashes": {"itp": "2"}}
    >>> describe_changes(old, new)
    ["model: 'openai/a' -> 'openai/b'", 'dataset content (hash x -> y)', 'prompt template of itp']
    """
    changes: list[str] = []
    old_cfg, new_cfg = _section(old, "config"), _section(new, "config")
    for key in sorted(
        set(old_cfg) | set(new_cfg), key=lambda k: list(new_cfg).index(k) if k in new_cfg else 999
    ):
        if old_cfg.get(key) != new_cfg.get(key):
            changes.append(f"{key}: {old_cfg.get(key)!r} -> {new_cfg.get(key)!r}")
    old_model, new_model = _section(old, "model"), _section(new, "model")
    # The endpoint may move (a local server on another port) and serve the same model: recorded, not compared.
    for key in sorted((set(old_model) | set(new_model)) - {"base_url"}):
        if old_model.get(key) != new_model.get(key):
            changes.append(f"model {key}: {old_model.get(key)!r} -> {new_model.get(key)!r}")
    old_hash, new_hash = (DatasetInfo.model_validate(_section(m, "dataset")).hash for m in (old, new))
    if old_hash != new_hash:
        changes.append(f"dataset content (hash {str(old_hash)[:12]} -> {str(new_hash)[:12]})")
    old_prompts, new_prompts = _section(old, "prompt_hashes"), _section(new, "prompt_hashes")
    for task in sorted(set(old_prompts) & set(new_prompts)):
        if old_prompts[task] != new_prompts[task]:
            changes.append(f"prompt template of {task}")
    return changes


def _section(manifest: Mapping[str, Json], name: str) -> dict[str, Json]:
    value = manifest.get(name)
    return dict(value) if isinstance(value, dict) else {}
