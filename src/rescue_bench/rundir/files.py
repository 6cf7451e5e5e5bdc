"""Run-directory file names and the byte-level rules for writing and reading them (docs/design.md).

* JSON files (``run.json``, ``scores.json``, ``judging.json``) are replaced atomically: a temporary file,
  fsync, ``os.replace``. Readers see the old file or the new one.
* JSONL files are append-only, one record per line, each write handed to the kernel at once and fsync'd at
  each checkpoint (:meth:`JsonlAppender.sync`: before ``run.json`` is written) and on close. A process killed
  mid-write leaves at most a torn last line; readers skip it and the next writer cuts it off.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from rescue_bench.atomic import write_atomic
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
RECORD_FILES = (RUN_FILE, REQUESTS_FILE, PREDICTIONS_FILE, JUDGMENTS_FILE, JUDGING_FILE, SCORES_FILE)
"""The files of a run directory the tool writes or truncates (with :data:`LOCK_FILE`, the rejected files and
:data:`BATCH_EXPORT_FILE`): none is ever written through a symbolic link (:func:`refuse_link`)."""
WRITTEN_FILES = (
    *RECORD_FILES,
    BATCH_EXPORT_FILE,
    "batches.jsonl",
    *(f"{Path(name).stem}.rejected.jsonl" for name in RECORD_FILES if name.endswith(".jsonl")),
)
"""Every file of a run directory a writer may write or truncate, checked when it takes the lock."""
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


class RunDirError(BenchError):
    """A run directory whose files cannot be read or written (not a mere torn last line)."""


def rejected_path(path: Path) -> Path:
    """Where lines set aside from a JSONL file go: ``predictions.jsonl`` -> ``predictions.rejected.jsonl``."""
    return path.with_name(f"{path.stem}.rejected{path.suffix}")


def recovery_hint(path: Path, number: int) -> str:
    """The manual step that gets a run directory with a bad line going again."""
    return (
        f"delete line {number} of {path}, or move it to {rejected_path(path).name}, "
        "then re-run the same command to resume"
    )


def write_failure(path: Path, exc: OSError, resume: str = "re-run the same command to resume") -> RunDirError:
    """The one-line error for a write that failed, with the advice that fits its cause: a full disk (free
    some space), a read-only or foreign folder (write access, or another place), anything else (its reason).

    >>> error = write_failure(Path("r/run.json"), OSError(errno.EROFS, "Read-only file system"))
    >>> "read-only: make it writable" in str(error), "free some space" in str(error)
    (True, False)
    """
    reason = exc.strerror or exc.__class__.__name__
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        advice = "free some space"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        advice = "the folder is read-only: make it writable, or work on a copy"
    else:
        advice = "fix the cause"
    return RunDirError(
        f"{path}: cannot write ({reason}); what was written before is kept: {advice}, then {resume}"
    )


def refuse_link(path: Path) -> None:
    """Refuse to write or truncate ``path`` when it is not a plain file of its own: a symbolic link (even a
    dangling one), a file with other hard links, a FIFO or a device. A run directory received from someone
    else could otherwise make the tool cut or append to a file of the user's.

    Raises:
        RunDirError: one line naming the path and what it is.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise write_failure(path, exc) from None
    if stat.S_ISLNK(info.st_mode):
        what = "a symbolic link"
    elif not stat.S_ISREG(info.st_mode):
        what = "not a regular file"
    elif info.st_nlink > 1:
        what = f"a file with {info.st_nlink} hard links"
    else:
        return
    raise RunDirError(
        f"{path}: is {what}; rescue-bench never writes through one in a run directory: "
        "replace it by a plain copy of the file (or remove it) and re-run the same command"
    )


def open_for_append(path: Path) -> int:
    """A descriptor appending to ``path`` (created if absent, never through a link).

    Raises:
        RunDirError: ``path`` is a link or not a plain file (:func:`refuse_link`), or it cannot be opened.
    """
    refuse_link(path)
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | NO_FOLLOW, 0o644)
    except OSError as exc:
        refuse_link(path)  # a link put there since the check: name it as such
        raise write_failure(path, exc) from None


def _atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` via a temporary file and ``os.replace``; the temporary goes on failure."""
    refuse_link(path)
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise write_failure(path, exc) from None


def atomic_write_json(path: Path, obj: Json) -> None:
    """Write JSON via a temporary file and ``os.replace``: readers see the old file or the new one.

    Raises:
        RunDirError: the write failed (the old file, if any, is left as it was).
    """
    text = json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=False) + "\n"
    _atomic_write(path, text.encode("utf-8"))


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
    """Records of a JSONL file; a torn (unterminated) last line is skipped, any bad complete line raises."""
    for _, record in numbered_jsonl(path):
        yield record


def numbered_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Json]]]:
    """(line number, record) of a JSONL file, as :func:`read_jsonl`."""
    for number, raw in raw_lines(path):
        yield number, _parse_line(path, number, raw)


def _parse_line(path: Path, number: int, raw: bytes) -> dict[str, Json]:
    problem = line_problem(raw)
    if isinstance(problem, str):
        raise RunDirError(f"{path}:{number}: {problem}; the file is damaged: {recovery_hint(path, number)}")
    return problem


def line_problem(raw: bytes) -> dict[str, Json] | str:
    """The record of one JSONL line, or what is wrong with it.

    >>> line_problem(b'{"a": 1}\\n'), line_problem(b"junk\\n"), line_problem(b"[1]\\n")
    ({'a': 1}, 'not valid JSON (JSONDecodeError)', 'expected a JSON object')
    """
    if not raw.strip():
        return "empty line"
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return f"not valid JSON ({exc.__class__.__name__})"
    if not isinstance(record, dict):
        return "expected a JSON object"
    return record


def raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of every complete line of ``path``; an unterminated last line is left out."""
    if not path.exists():
        return
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if raw.endswith(b"\n"):
                yield number, raw


def set_aside(path: Path, lines: Sequence[bytes]) -> Path:
    """Append ``lines`` (verbatim) to ``path``'s rejected file, synced; return its path."""
    target = rejected_path(path)
    if lines:
        data = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
        fd = open_for_append(target)
        try:
            with os.fdopen(fd, "ab") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            raise write_failure(target, exc) from None
    return target


def cut_torn_tail(path: Path) -> None:
    """Truncate an unterminated last line (a write the process did not finish), so appends start afresh.

    A terminated line that does not parse is not a torn write (each record is one ``write`` ending in a
    newline): it is left where it is, for the reader to report and the store to set aside. Only a plain file
    (:func:`refuse_link`) whose unterminated tail starts as every record does (``{``) is cut: anything else is
    not a write of this tool, and is refused rather than cut.

    Raises:
        RunDirError: ``path`` is a link or not a plain file, or its tail is not a torn record.
    """
    refuse_link(path)
    if not path.exists():
        return
    try:
        fd = os.open(path, os.O_RDWR | NO_FOLLOW)
    except OSError as exc:
        refuse_link(path)
        raise write_failure(path, exc) from None
    with os.fdopen(fd, "r+b") as out:
        data = out.read()
        keep = data.rfind(b"\n") + 1
        if keep == len(data):
            return
        if not data[keep:].startswith(b"{"):
            last = data.count(b"\n") + 1
            raise RunDirError(
                f"{path}: its last line is unterminated and is not a record of rescue-bench; it is left as "
                f"it is: {recovery_hint(path, last)}"
            )
        try:
            out.truncate(keep)
            out.flush()
            os.fsync(out.fileno())
        except OSError as exc:
            raise write_failure(path, exc) from None


def jsonl_line(record: Mapping[str, Json]) -> bytes:
    """One record as a JSONL line: compact, ending in a newline."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def atomic_write_lines(path: Path, lines: Iterable[bytes]) -> None:
    """Replace a JSONL file as a whole (compaction) by ``lines`` (each a :func:`jsonl_line`), atomically; on
    failure the old file stays."""
    _atomic_write(path, b"".join(lines))


class JsonlAppender:
    """Append records to a JSONL file: one unbuffered ``write`` per group of records; fsync'd by :meth:`sync`
    and :meth:`close`.

    The ``write`` hands the bytes to the kernel before :meth:`append` returns, so a killed process loses
    nothing it appended. The fsync guards against a crash of the machine only; it is left to checkpoints
    because it can take milliseconds on a busy disk, which the event loop would wait for on every append. A
    crash of the machine can thus lose the records the kernel had not yet written back since the last
    checkpoint; a resumed run asks them again (the response cache answers them). Syncing in a background
    thread instead saves no CPU that can be measured (docs/benchmarks.md).
    """

    def __init__(self, path: Path) -> None:
        cut_torn_tail(path)
        self.path = path
        self._fd = open_for_append(path)
        self._size = os.fstat(self._fd).st_size

    def append(self, records: Sequence[Mapping[str, Json]]) -> list[bytes]:
        """Write ``records`` at the end of the file, whole or not at all; return their lines as written.

        Raises:
            RunDirError: the write failed (a full disk); the file is cut back to what it held before.
        """
        if not records:
            return []
        lines = [jsonl_line(r) for r in records]
        data = b"".join(lines)
        try:
            # Unbuffered: nothing is left in a buffer to be written (torn) later after a failed write.
            written = 0
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError as exc:
            self._roll_back()
            raise write_failure(self.path, exc) from None
        self._size += len(data)
        return lines

    def _roll_back(self) -> None:
        """Cut off a partly written group, so the file ends on the last whole record again."""
        # Shrinking needs no space; if even that fails, the torn line is the one a reader already skips
        # (unterminated) and the next writer's cut_torn_tail removes.
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._size)

    def sync(self) -> None:
        """fsync what was appended (a checkpoint): it survives a crash of the machine from now on.

        Raises:
            RunDirError: the disk refused (an I/O error).
        """
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise write_failure(self.path, exc) from None

    def close(self) -> None:
        """fsync and close the file (a second call does nothing)."""
        if self._fd < 0:
            return
        try:
            self.sync()
        finally:
            os.close(self._fd)
            self._fd = -1
