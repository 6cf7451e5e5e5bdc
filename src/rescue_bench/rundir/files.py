"""Run-directory file names and the byte-level rules for writing and reading them (docs/design.md).

* JSON files (``run.json``, ``scores.json``, ``judging.json``) are replaced atomically: a temporary file,
  fsync, ``os.replace``. Readers see the old file or the new one.
* JSONL files are append-only, one record per line, each write flushed at once and fsync'd in the background
  within :data:`SYNC_INTERVAL` seconds. A process killed mid-write leaves at most a torn last line; readers
  skip it and the next writer cuts it off.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from rescue_bench.errors import BenchError
from rescue_bench.records import Json

FORMAT = 1
"""Format of ``run.json``."""
RUN_FILE = "run.json"
REQUESTS_FILE = "requests.jsonl"
PREDICTIONS_FILE = "predictions.jsonl"
JUDGMENTS_FILE = "judgments.jsonl"
JUDGING_FILE = "judging.json"
SCORES_FILE = "scores.json"
LOCK_FILE = ".lock"
BATCH_EXPORT_FILE = "batch_export.json"
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


def read_json_object(path: Path) -> dict[str, Json] | None:
    """A JSON file holding an object; ``None`` when the file does not exist."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: expected a JSON object")
    return data


def read_jsonl(path: Path) -> Iterator[dict[str, Json]]:
    """Records of a JSONL file; a torn (unterminated or unparsable) last line is skipped, a bad one raises."""
    for _, record in numbered_jsonl(path):
        yield record


def numbered_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Json]]]:
    """(line number, record) of a JSONL file, as :func:`read_jsonl`."""
    if not path.exists():
        return
    with path.open("rb") as lines:
        pending: tuple[int, bytes] | None = None
        for number, raw in enumerate(lines, start=1):
            if pending is not None:
                yield pending[0], _parse_line(path, *pending)
            pending = (number, raw)
        if pending is not None:
            number, raw = pending
            if raw.endswith(b"\n"):
                try:
                    yield number, _parse_line(path, number, raw)
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


def jsonl_bytes(records: Sequence[Mapping[str, Json]]) -> bytes:
    """Records as JSONL: compact, one per line."""
    return b"".join(
        json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in records
    )


def atomic_write_jsonl(path: Path, records: Sequence[Mapping[str, Json]]) -> None:
    """Replace a JSONL file as a whole (compaction), atomically."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as out:
        out.write(jsonl_bytes(records))
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


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
        self._out.write(jsonl_bytes(records))
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
