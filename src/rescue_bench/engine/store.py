"""The run directory (layout in docs/design.md): the unit of resume, comparison and reporting.

* ``run.json``: manifest (config, versions, dataset hash, prompt hashes, model identity without secrets,
  status, counts, timings), replaced atomically whenever it changes.
* ``requests.jsonl`` and ``predictions.jsonl``: append-only, one record per line, each write flushed at once
  and fsync'd in the background within :data:`SYNC_INTERVAL` seconds. A process killed mid-write leaves at
  most a torn last line; readers skip it and the next writer cuts it off.
* ``scores.json``: written atomically at the end.

Resume rule: an instance is finished when ``predictions.jsonl`` has a line for it. When an instance has
several lines (``--retry-failed`` re-asks invalid ones and appends), **the latest line wins**. At the end of
every run the file is rewritten (atomically) with exactly one line per instance, the latest, in instance
order.

A run directory belongs to one configuration: :meth:`RunStore.check_compatible` refuses a changed one and
names what changed.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from rescue_bench.errors import BenchError, ConfigError
from rescue_bench.records import Json

FORMAT = 1
RUN_FILE = "run.json"
REQUESTS_FILE = "requests.jsonl"
PREDICTIONS_FILE = "predictions.jsonl"
SCORES_FILE = "scores.json"
SYNC_INTERVAL = 0.1
"""Seconds between two background fsyncs of one JSONL file, at least."""


class RunDirError(BenchError):
    """A run directory whose files cannot be read (not a mere torn last line)."""


def atomic_write_json(path: Path, obj: Json) -> None:
    """Write JSON via a temporary file and ``os.replace``: readers see the old file or the new one."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as out:
        json.dump(obj, out, ensure_ascii=False, indent=2, sort_keys=False)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def read_jsonl(path: Path) -> Iterator[dict[str, Json]]:
    """Records of a JSONL file; a torn (unterminated or unparsable) last line is skipped, a bad one raises."""
    if not path.exists():
        return
    with path.open("rb") as lines:
        pending: tuple[int, bytes] | None = None
        for number, raw in enumerate(lines, start=1):
            if pending is not None:
                yield _parse_line(path, *pending)
            pending = (number, raw)
        if pending is not None:
            number, raw = pending
            if raw.endswith(b"\n"):
                try:
                    yield _parse_line(path, number, raw)
                except RunDirError:
                    return
            # an unterminated last line is a write the process did not finish: ignored


def _parse_line(path: Path, number: int, raw: bytes) -> dict[str, Json]:
    if not raw.strip():
        raise RunDirError(f"{path}:{number}: empty line")
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunDirError(
            f"{path}:{number}: not valid JSON ({exc.__class__.__name__}); the file is damaged"
        ) from None
    if not isinstance(record, dict):
        raise RunDirError(f"{path}:{number}: expected a JSON object")
    return record


def cut_torn_tail(path: Path) -> None:
    """Truncate ``path`` after its last complete, parsable line, so appends start on a fresh line."""
    if not path.exists():
        return
    data = path.read_bytes()
    keep = len(data) if data.endswith(b"\n") else data.rfind(b"\n") + 1
    if keep and keep == len(data):
        last_start = data.rfind(b"\n", 0, keep - 1) + 1
        try:
            json.loads(data[last_start:keep])
        except ValueError:
            keep = last_start
    if keep != len(data):
        with path.open("r+b") as out:
            out.truncate(keep)
            out.flush()
            os.fsync(out.fileno())


class JsonlAppender:
    """Append records to a JSONL file: one ``write`` per group of records, flushed at once, then fsync'd.

    The flush hands the bytes to the kernel before :meth:`append` returns, so a killed process loses nothing
    it appended. The fsync (which guards against a crash of the machine) runs in a background thread as a
    group commit, at most once per ``sync_interval`` seconds: it can take milliseconds on a busy disk and
    costs CPU in the kernel (a run of 3,229 requests did 5,811 of them, 0.23 ms of CPU per request, when each
    append woke the thread), and the event loop must not wait for it. A crash of the machine can thus lose
    the records of the last ``sync_interval`` seconds, which a resumed run asks again (the response cache
    answers them). :meth:`close` waits for the last fsync.
    """

    def __init__(self, path: Path, *, sync_interval: float = SYNC_INTERVAL) -> None:
        cut_torn_tail(path)
        self.path = path
        self.sync_interval = sync_interval
        self.syncs = 0
        """fsyncs done by the background thread so far."""
        self._out: IO[bytes] = path.open("ab")
        self._dirty = threading.Event()
        self._closing = threading.Event()
        self._syncer = threading.Thread(target=self._sync_loop, name=f"fsync-{path.name}", daemon=True)
        self._syncer.start()

    def append(self, records: Sequence[Mapping[str, Json]]) -> None:
        if not records:
            return
        blob = b"".join(
            json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in records
        )
        self._out.write(blob)
        self._out.flush()
        # Cheap while the syncer sleeps out its interval: only the first append after a quiet spell wakes it.
        self._dirty.set()

    def _sync_loop(self) -> None:
        fd = self._out.fileno()
        while True:
            self._dirty.wait()
            if self._closing.is_set():
                return
            self._dirty.clear()
            os.fsync(fd)
            self.syncs += 1
            if self._closing.wait(self.sync_interval):
                return

    def close(self) -> None:
        self._closing.set()
        self._dirty.set()
        self._syncer.join()
        self._out.flush()
        os.fsync(self._out.fileno())
        self._out.close()


class RunStore:
    """One run directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._requests: JsonlAppender | None = None
        self._predictions: JsonlAppender | None = None
        self._lock: IO[str] | None = None

    def lock(self) -> None:
        """Take the directory for this process; a second process on the same run gets a :class:`ConfigError`.

        The lock is an ``flock`` on ``.lock``: the kernel releases it when the process dies, even by SIGKILL.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        handle = (self.root / ".lock").open("a")
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # no flock on this platform: run unguarded
            pass
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
        if not self.run_file.exists():
            return None
        try:
            data = json.loads(self.run_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunDirError(f"{self.run_file}: cannot read ({exc.__class__.__name__})") from None
        if not isinstance(data, dict):
            raise RunDirError(f"{self.run_file}: expected a JSON object")
        return data

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
        for appender in (self._requests, self._predictions):
            if appender is not None:
                appender.close()
        self._requests = self._predictions = None

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def append_request(self, record: Mapping[str, Json]) -> None:
        assert self._requests is not None, "RunStore.open() first"
        self._requests.append([record])

    def append_predictions(self, records: Sequence[Mapping[str, Json]]) -> None:
        assert self._predictions is not None, "RunStore.open() first"
        self._predictions.append(records)

    def write_manifest(self, manifest: Mapping[str, Json]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.run_file, dict(manifest))

    def latest_predictions(self) -> dict[str, dict[str, Json]]:
        """The latest line per instance id."""
        return {str(r.get("instance_id")): r for r in read_jsonl(self.predictions_file)}

    def request_records(self) -> list[dict[str, Json]]:
        return list(read_jsonl(self.requests_file))

    def compact_predictions(
        self, order: Sequence[str], latest: Mapping[str, dict[str, Json]] | None = None
    ) -> list[dict[str, Json]]:
        """Rewrite ``predictions.jsonl`` with one line per instance (the latest), ids in ``order`` first.

        ``latest`` is the caller's up-to-date view of the file (latest line per id), which saves reading it
        again.
        """
        latest = self.latest_predictions() if latest is None else latest
        ranked = {iid: i for i, iid in enumerate(order)}
        records = sorted(
            latest.values(),
            key=lambda r: (ranked.get(str(r.get("instance_id")), len(ranked)), str(r.get("instance_id"))),
        )
        reopen = self._predictions is not None
        if self._predictions is not None:
            self._predictions.close()
        tmp = self.predictions_file.with_name(f".{PREDICTIONS_FILE}.tmp")
        with tmp.open("wb") as out:
            out.write(
                b"".join(
                    json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in records
                )
            )
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.predictions_file)
        self._predictions = JsonlAppender(self.predictions_file) if reopen else None
        return records

    def write_scores(self, scores: Mapping[str, Any]) -> None:
        atomic_write_json(self.scores_file, dict(scores))


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
    old_hash, new_hash = _section(old, "dataset").get("hash"), _section(new, "dataset").get("hash")
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
