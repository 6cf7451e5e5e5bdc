"""Read RESCUE-Bench data from any of its forms into validated :class:`Sample` records.

Sources (see :func:`read_source`):

* a release JSONL file, one sample per line (like the official ``data/benchmark_191.jsonl``);
* a directory tree of per-sample ``*.json`` files ``{"rows": [...]}``; ``sample_id`` is the path relative to
  the root without suffix, ``manifest.json`` files are skipped, and links to directories are followed once;
* ``hf`` or ``hf:<repo_id>``: the Hugging Face dataset (default ``tomhu/relation_therapy``), downloaded when
  online, else from the Hugging Face cache;
* ``rescue``: the official release that ``rescue-bench data get`` downloaded into the user cache;
* ``demo``: the project's own fictional demo data, shipped with the package.

The names are those of :mod:`rescue_bench.data.sources`.

Problems are never silent: a sample that cannot be read is reported as an error :class:`Problem` with its
file, line, sample, row and field, and left out of the usable samples. :func:`load_samples` raises
:class:`DataError` when there are errors, so nothing downstream runs on a silently shortened dataset.
Nothing in a source is passed over either: a subdirectory that cannot be listed, a file that cannot be read,
a broken link, a symlink loop or a FIFO among the files is an error naming its path
(:mod:`rescue_bench.data.files`); a source that is a FIFO or a device is refused without being opened for
a blocking read. Values pydantic would convert (``"3"`` as a ``row_index``) and rows a model would be sent
whole beyond ``max_row_chars`` are warnings, which ``strict`` loading refuses.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rescue_bench.data.build import build_raw, build_sample, infer_participants, infer_scenario, kind
from rescue_bench.data.checks import DEFAULT_MAX_ROW_CHARS, check_sample, may_hold_mojibake, reach_problems
from rescue_bench.data.files import (
    SourceNotFound,
    Unreadable,
    UnreadableSource,
    describe_error,
    read_regular,
    sample_files,
    source_kind,
)
from rescue_bench.data.raw import RawSample
from rescue_bench.data.release import HF_REPO, hf_snapshot, installed_release, release_jsonl_in
from rescue_bench.data.schema import Sample
from rescue_bench.data.sources import DEMO, HF, RELEASE
from rescue_bench.errors import DataError
from rescue_bench.problems import Problem

__all__ = [
    "DEFAULT_HF_REPO",
    "DEFAULT_MAX_ROW_CHARS",
    "LoadReport",
    "SourceNotFound",
    "UnreadableSource",
    "build_sample",
    "infer_participants",
    "infer_scenario",
    "load_samples",
    "read_source",
]

DEFAULT_HF_REPO = HF_REPO
_DEMO_FILE = "demo.jsonl"
_NOTICES_SHOWN = 10
_log = logging.getLogger("rescue_bench.data")


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What reading a source gave: the usable samples and every problem found on the way."""

    source: str
    samples: tuple[Sample, ...]
    problems: tuple[Problem, ...] = field(default=())
    notices: tuple[Problem, ...] = field(default=())
    """Warnings about what a model is sent (rows without a speaker, oversized rows); also in ``problems``."""

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "warning")


def load_samples(
    source: str | Path, *, strict: bool = False, max_row_chars: int = DEFAULT_MAX_ROW_CHARS
) -> list[Sample]:
    """Read ``source`` and return its samples; raise :class:`DataError` if any sample has errors.

    With ``strict``, warnings count as errors too. Otherwise the warnings about what a model will be sent
    (:attr:`LoadReport.notices`) are logged to the ``rescue_bench.data`` logger (shown on stderr when logging
    is not configured), since the caller is about to use the samples.
    """
    report = read_source(source, max_row_chars=max_row_chars)
    fatal = report.problems if strict else report.errors
    if fatal:
        first = f"{fatal[0].location()}: {fatal[0].message}" if fatal[0].location() else fatal[0].message
        more = (
            f" (and {len(fatal) - 1} more; run `rescue-bench data validate {source}`)"
            if len(fatal) > 1
            else ""
        )
        raise DataError(f"{first}{more}", fatal)
    for notice in report.notices[:_NOTICES_SHOWN]:
        _log.warning("%s", notice.render())
    if len(report.notices) > _NOTICES_SHOWN:
        _log.warning(
            "warning: %d more like these; run `rescue-bench data validate %s` to list them",
            len(report.notices) - _NOTICES_SHOWN,
            source,
        )
    return list(report.samples)


def read_source(source: str | Path, *, max_row_chars: int = DEFAULT_MAX_ROW_CHARS) -> LoadReport:
    """Read any supported source; content problems are reported, not raised.

    Raises:
        SourceNotFound: the path does not exist.
        UnreadableSource: the path is a symlink loop, a FIFO, a device, or cannot be examined.
        DataError: the Hugging Face dataset cannot be fetched, or the official release is not downloaded.
    """
    text = str(source)
    finish = _Finisher(text, max_row_chars)
    if text == DEMO:
        demo = resources.files("rescue_bench.data.demo").joinpath(_DEMO_FILE)
        with resources.as_file(demo) as path:
            return finish(_read_jsonl(path, display=DEMO))
    if text == RELEASE:
        return read_source(installed_release(), max_row_chars=max_row_chars)
    if text == HF or text.startswith(f"{HF}:"):
        snapshot = hf_snapshot(text.partition(":")[2] or HF_REPO)
        return read_source(release_jsonl_in(snapshot), max_row_chars=max_row_chars)
    path = Path(text).expanduser()
    kind_of_source = source_kind(path, text)
    if kind_of_source == "directory":
        return finish(_read_directory(path))
    return finish(_read_jsonl(path, display=text))


# -- per-format readers --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Item:
    """One sample as read (or ``None``), its problems, and its size in bytes (small ones are not measured)."""

    sample: Sample | None
    problems: list[Problem]
    size: int | None = None
    mojibake: bool = True
    """Whether its fields are scanned for mojibake (not when its JSON text shows there is none)."""


def _read_jsonl(path: Path, *, display: str) -> Iterator[_Item]:
    try:
        raw = read_regular(path)
    except OSError as exc:
        yield _Item(None, [Problem("error", describe_error(exc, path), file=display)])
        return
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
        bom = Problem("warning", "file starts with a UTF-8 byte-order mark (ignored)", file=display, line=1)
        yield _Item(None, [bom])
    if not raw.strip():
        yield _Item(
            None, [Problem("error", "file is empty: expected one JSON sample per line", file=display)]
        )
        return
    lines = raw.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        truncated = number == len(lines) and not raw.endswith(b"\n")
        yield _sample_from_line(line, number, display, truncated)


def _sample_from_line(line: bytes, number: int, display: str, last_unterminated: bool) -> _Item:
    where: dict[str, Any] = {"file": display, "line": number}
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _Item(None, [Problem("error", f"invalid UTF-8 at byte {exc.start}", **where)])
    duplicates = _DuplicateKeys()
    try:
        obj = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=duplicates)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        hint = " (the last line looks truncated)" if last_unterminated else ""
        return _Item(None, [Problem("error", f"not valid JSON: {_json_reason(exc)}{hint}", **where)])
    if not isinstance(obj, dict):
        return _Item(None, [Problem("error", f"expected a JSON object per line, got {kind(obj)}", **where)])
    raw = RawSample.of(obj)
    fallback_id = _id_from_source_file(raw.source_file) or f"{Path(display).stem}/line{number}"
    sample, problems = build_raw(raw, fallback_id=fallback_id, file=display, line=number)
    sample_id = raw.sample_id or fallback_id
    found = duplicates.problems(**where, sample_id=sample_id) + problems
    return _Item(sample, found, len(line), may_hold_mojibake(text))


def _read_directory(root: Path) -> Iterator[_Item]:
    found = False
    for entry in sample_files(root):
        found = True
        if isinstance(entry, Unreadable):
            yield _Item(None, [Problem("error", entry.reason, file=str(entry.path))])
        else:
            yield _sample_from_file(entry, entry.relative_to(root).with_suffix("").as_posix())
    if not found:
        message = "directory holds no sample files (*.json with a 'rows' list)"
        yield _Item(None, [Problem("error", message, file=str(root))])


def _sample_from_file(path: Path, sample_id: str) -> _Item:
    where: dict[str, Any] = {"file": str(path), "sample_id": sample_id}
    try:
        data = read_regular(path)
    except OSError as exc:
        return _Item(None, [Problem("error", describe_error(exc, path), **where)])
    duplicates = _DuplicateKeys()
    try:
        text = data.decode("utf-8-sig")
        obj = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=duplicates)
    except UnicodeDecodeError as exc:
        return _Item(None, [Problem("error", f"invalid UTF-8 at byte {exc.start}", **where)])
    except (ValueError, RecursionError) as exc:
        return _Item(None, [Problem("error", f"not valid JSON: {_json_reason(exc)}", **where)])
    if isinstance(obj, list):
        obj = {"rows": obj}
    if not isinstance(obj, dict):
        return _Item(None, [Problem("error", f"expected a JSON object, got {kind(obj)}", **where)])
    raw = RawSample.of(obj)
    sample, problems = build_raw(raw, fallback_id=sample_id, file=str(path), line=None)
    where["sample_id"] = raw.sample_id or sample_id
    return _Item(sample, duplicates.problems(**where) + problems, len(data), may_hold_mojibake(text))


@dataclass(frozen=True, slots=True)
class _Finisher:
    """Gathers the read samples: refuses duplicate ids and adds every sample's checks."""

    source: str
    max_row_chars: int

    def __call__(self, items: Iterable[_Item]) -> LoadReport:
        samples: list[Sample] = []
        problems: list[Problem] = []
        notices: list[Problem] = []
        seen: dict[str, str] = {}
        for item in items:
            problems.extend(item.problems)
            sample = item.sample
            if sample is None:
                continue
            origin = sample.origin or self.source
            file, _, line = (
                origin.rpartition(":") if origin.rpartition(":")[2].isdigit() else (origin, "", "")
            )
            line_number = int(line) if line else None
            if sample.sample_id in seen:
                message = f"duplicate sample_id (first seen at {seen[sample.sample_id]})"
                problems.append(
                    Problem("error", message, file=file, line=line_number, sample_id=sample.sample_id)
                )
                continue
            seen[sample.sample_id] = origin
            problems.extend(check_sample(sample, file=file, line=line_number, mojibake=item.mojibake))
            found = reach_problems(
                sample, file=file, line=line_number, max_row_chars=self.max_row_chars, size_hint=item.size
            )
            problems.extend(found)
            notices.extend(found)
            samples.append(sample)
        if not samples and not any(p.severity == "error" for p in problems):
            problems.append(Problem("error", "no samples found", file=self.source))
        return LoadReport(self.source, tuple(samples), tuple(problems), tuple(notices))


# -- helpers -------------------------------------------------------------------------------------------------


def _id_from_source_file(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    marker = "therapy_merged_all/"
    tail = value.split(marker, 1)[1] if marker in value else Path(value).name
    path = Path(tail)
    # A name like "/" or "x/." has no file name, and with_suffix() refuses it.
    return path.with_suffix("").as_posix() if path.name else None


class _DuplicateKeys:
    """A ``json.loads`` object hook that keeps a repeated key's last value, as plain ``json.loads`` does, and
    remembers the key: a repeated annotation field may hide a conflicting label, so it is reported.

    >>> hook = _DuplicateKeys()
    >>> json.loads('{"a": 1, "b": {"c": 2, "c": 3}}', object_pairs_hook=hook)
    {'a': 1, 'b': {'c': 3}}
    >>> hook.keys
    ['c']
    """

    def __init__(self) -> None:
        self.keys: list[str] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    self.keys.append(key)
                seen.add(key)
        return obj

    def problems(self, **where: Any) -> list[Problem]:
        return [
            Problem(
                "warning", f"key {key!r} appears twice in one JSON object; its last value is used", **where
            )
            for key in dict.fromkeys(self.keys)
        ]


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _json_reason(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)
