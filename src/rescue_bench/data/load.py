"""Read RESCUE-Bench data from any of its forms into validated :class:`Sample` records.

Sources (see :func:`read_source`):

* a release JSONL file, one sample per line (like the official ``data/benchmark_191.jsonl``);
* a directory tree of per-sample ``*.json`` files ``{"rows": [...]}``; ``sample_id`` is the path relative to
  the root without suffix, and ``manifest.json`` files are skipped;
* ``hf`` or ``hf:<repo_id>``: the Hugging Face dataset (default ``tomhu/relation_therapy``) from the user
  cache;
* ``demo``: the project's own fictional demo data, shipped with the package.

Problems are never silent: a sample that cannot be read is reported as an error :class:`Problem` with its
file, line, sample, row and field, and left out of the usable samples. :func:`load_samples` raises
:class:`DataError` when there are errors, so nothing downstream runs on a silently shortened dataset.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rescue_bench.data.schema import Row, Sample
from rescue_bench.errors import DataError
from rescue_bench.problems import Problem
from rescue_bench.taxonomy import NON_CLIENT_SPEAKERS, Scenario

DEFAULT_HF_REPO = "tomhu/relation_therapy"
_DEMO_FILE = "demo.jsonl"


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What reading a source gave: the usable samples and every problem found on the way."""

    source: str
    samples: tuple[Sample, ...]
    problems: tuple[Problem, ...] = field(default=())

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "warning")


class SourceNotFound(DataError):
    """The source path does not exist (a usage error: exit code 2 in the CLI)."""


def load_samples(source: str | Path, *, strict: bool = False) -> list[Sample]:
    """Read ``source`` and return its samples; raise :class:`DataError` if any sample has errors.

    With ``strict``, warnings count as errors too.
    """
    report = read_source(source)
    fatal = report.problems if strict else report.errors
    if fatal:
        first = f"{fatal[0].location()}: {fatal[0].message}" if fatal[0].location() else fatal[0].message
        more = (
            f" (and {len(fatal) - 1} more; run `rescue-bench data validate {source}`)"
            if len(fatal) > 1
            else ""
        )
        raise DataError(f"{first}{more}", fatal)
    return list(report.samples)


def read_source(source: str | Path) -> LoadReport:
    """Read any supported source; content problems are reported, not raised."""
    text = str(source)
    if text == "demo":
        demo = resources.files("rescue_bench.data.demo").joinpath(_DEMO_FILE)
        with resources.as_file(demo) as path, _no_gc():
            return _finish("demo", _read_jsonl(path, display="demo"))
    if text == "hf" or text.startswith("hf:"):
        return read_source(_hf_sample_source(_hf_snapshot(text.partition(":")[2] or DEFAULT_HF_REPO)))
    path = Path(text).expanduser()
    if not path.exists():
        raise SourceNotFound(
            f"{text}: no such file or directory (give a JSONL file, a directory, 'demo' or 'hf')"
        )
    with _no_gc():
        if path.is_dir():
            return _finish(text, _read_directory(path))
        return _finish(text, _read_jsonl(path, display=text))


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building records.

    Reading creates hundreds of thousands of small acyclic objects, which set off needless full collections
    (at 70,000 rows they took 40% of the load time).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# -- per-format readers --------------------------------------------------------------------------------------

_Item = tuple[Sample | None, list[Problem]]


def _read_jsonl(path: Path, *, display: str) -> Iterator[_Item]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        yield None, [Problem("error", f"cannot read file: {exc.strerror or exc}", file=display)]
        return
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
        yield (
            None,
            [Problem("warning", "file starts with a UTF-8 byte-order mark (ignored)", file=display, line=1)],
        )
    if not raw.strip():
        yield None, [Problem("error", "file is empty: expected one JSON sample per line", file=display)]
        return
    lines = raw.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        truncated = number == len(lines) and not raw.endswith(b"\n")
        yield _sample_from_line(line, number, display, truncated)


def _sample_from_line(line: bytes, number: int, display: str, last_unterminated: bool) -> _Item:
    where = {"file": display, "line": number}
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [Problem("error", f"invalid UTF-8 at byte {exc.start}", **where)]  # type: ignore[arg-type]
    duplicates = _DuplicateKeys()
    try:
        obj = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=duplicates)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        hint = " (the last line looks truncated)" if last_unterminated else ""
        return None, [Problem("error", f"not valid JSON: {_json_reason(exc)}{hint}", **where)]  # type: ignore[arg-type]
    if not isinstance(obj, dict):
        return None, [Problem("error", f"expected a JSON object per line, got {_kind(obj)}", **where)]  # type: ignore[arg-type]
    fallback_id = _id_from_source_file(obj.get("source_file")) or f"{Path(display).stem}/line{number}"
    sample, problems = build_sample(obj, fallback_id=fallback_id, file=display, line=number)
    return sample, duplicates.problems(
        file=display, line=number, sample_id=_sample_id(obj, fallback_id)
    ) + problems


def _read_directory(root: Path) -> Iterator[_Item]:
    files = sorted(p for p in root.rglob("*.json") if p.is_file() and p.name != "manifest.json")
    if not files:
        yield (
            None,
            [Problem("error", "directory holds no sample files (*.json with a 'rows' list)", file=str(root))],
        )
        return
    for path in files:
        sample_id = path.relative_to(root).with_suffix("").as_posix()
        display = str(path)
        duplicates = _DuplicateKeys()
        try:
            obj = json.loads(
                path.read_text(encoding="utf-8-sig"),
                parse_constant=_reject_constant,
                object_pairs_hook=duplicates,
            )
        except UnicodeDecodeError as exc:
            yield (
                None,
                [Problem("error", f"invalid UTF-8 at byte {exc.start}", file=display, sample_id=sample_id)],
            )
            continue
        except (OSError, ValueError, RecursionError) as exc:
            yield (
                None,
                [Problem("error", f"not valid JSON: {_json_reason(exc)}", file=display, sample_id=sample_id)],
            )
            continue
        if isinstance(obj, list):
            obj = {"rows": obj}
        if not isinstance(obj, dict):
            yield (
                None,
                [
                    Problem(
                        "error",
                        f"expected a JSON object, got {_kind(obj)}",
                        file=display,
                        sample_id=sample_id,
                    )
                ],
            )
            continue
        obj = {**obj, "sample_id": obj.get("sample_id") or sample_id}
        sample, problems = build_sample(obj, fallback_id=sample_id, file=display, line=None)
        yield sample, duplicates.problems(file=display, sample_id=_sample_id(obj, sample_id)) + problems


def _finish(source: str, items: Iterable[_Item]) -> LoadReport:
    from rescue_bench.data.validate import check_sample

    samples: list[Sample] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for sample, found in items:
        problems.extend(found)
        if sample is None:
            continue
        origin = sample.origin or source
        file, _, line = origin.rpartition(":") if origin.rpartition(":")[2].isdigit() else (origin, "", "")
        line_number = int(line) if line else None
        if sample.sample_id in seen:
            message = f"duplicate sample_id (first seen at {seen[sample.sample_id]})"
            problems.append(
                Problem("error", message, file=file, line=line_number, sample_id=sample.sample_id)
            )
            continue
        seen[sample.sample_id] = origin
        problems.extend(check_sample(sample, file=file, line=line_number))
        samples.append(sample)
    if not samples and not any(p.severity == "error" for p in problems):
        problems.append(Problem("error", "no samples found", file=source))
    return LoadReport(source, tuple(samples), tuple(problems))


# -- one sample ----------------------------------------------------------------------------------------------


def build_sample(obj: dict[str, Any], *, fallback_id: str, file: str | None, line: int | None) -> _Item:
    """Validate one raw sample object; return the sample (or ``None``) and the problems found."""
    sample_id = _sample_id(obj, fallback_id)
    where: dict[str, Any] = {"file": file, "line": line, "sample_id": sample_id}
    rows_raw = obj.get("rows")
    if not isinstance(rows_raw, list):
        what = "missing" if rows_raw is None else f"a {_kind(rows_raw)}, not a list"
        return None, [Problem("error", f"'rows' is {what}", path="rows", **where)]
    if not rows_raw:
        return None, [Problem("error", "'rows' is empty", path="rows", **where)]
    rows, problems = _build_rows(rows_raw, where)
    if any(p.severity == "error" for p in problems):
        return None, problems
    scenario, scenario_problems = _scenario(obj.get("scenario"), sample_id, rows, where)
    problems += scenario_problems
    participants = _participants(obj.get("participants"), rows)
    source_file = obj.get("source_file") if isinstance(obj.get("source_file"), str) else None
    origin = f"{file}:{line}" if line else (file or sample_id)
    sample = Sample(
        sample_id=sample_id,
        scenario=scenario,
        participants=participants,
        rows=tuple(rows),
        source_file=source_file,
        origin=origin,
    )
    return sample, problems


def _build_rows(rows_raw: list[Any], where: dict[str, Any]) -> tuple[list[Row], list[Problem]]:
    rows: list[Row] = []
    problems: list[Problem] = []
    for position, raw in enumerate(rows_raw, start=1):
        path = f"rows[{position - 1}]"
        if not isinstance(raw, dict):
            problems.append(
                Problem(
                    "error", f"row is a {_kind(raw)}, not an object", path=path, row_index=position, **where
                )
            )
            continue
        index = raw.get("row_index", position)
        try:
            rows.append(Row.model_validate(raw if "row_index" in raw else {**raw, "row_index": position}))
        except ValidationError as exc:
            row_index = index if isinstance(index, int) and not isinstance(index, bool) else position
            problems.extend(_validation_problems(exc, path, row_index, where))
    if problems:
        return rows, problems
    problems += _row_index_problems(rows, where)
    for row in rows:
        for name in ("start_time", "end_time"):
            value = getattr(row, name)
            if value is not None and value < 0:
                problems.append(
                    Problem(
                        "error",
                        f"{name} is negative ({value})",
                        row_index=row.row_index,
                        path=f"rows[{rows.index(row)}].{name}",
                        **where,
                    )
                )
    return rows, problems


def _validation_problems(
    exc: ValidationError, path: str, row_index: int, where: dict[str, Any]
) -> list[Problem]:
    out = []
    for err in exc.errors():
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        got = _kind(err.get("input"))
        out.append(
            Problem(
                "error",
                f"{err['msg'].lower()} (got {got})",
                path=f"{path}{loc}",
                row_index=row_index,
                **where,
            )
        )
    return out


def _row_index_problems(rows: list[Row], where: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for position, row in enumerate(rows, start=1):
        if row.row_index != position:
            seen_before = any(r.row_index == row.row_index for r in rows[: position - 1])
            kind = "duplicate" if seen_before else "out of sequence"
            problems.append(
                Problem(
                    "error",
                    f"row_index {row.row_index} is {kind} (expected {position})",
                    row_index=row.row_index,
                    path=f"rows[{position - 1}].row_index",
                    **where,
                )
            )
            break
    return problems


def _scenario(
    value: Any, sample_id: str, rows: list[Row], where: dict[str, Any]
) -> tuple[Scenario, list[Problem]]:
    if value in ("couple", "family"):
        return value, []
    inferred = infer_scenario(sample_id, rows)
    if value in (None, ""):
        return inferred, []
    return inferred, [
        Problem("warning", f"unknown scenario {value!r}; inferred {inferred!r}", path="scenario", **where)
    ]


def infer_scenario(sample_id: str, rows: Iterable[Row]) -> Scenario:
    """``family`` for ids under ``family_therapy/`` or when anyone speaks to or as ``Family``; else couple.

    >>> infer_scenario("family_therapy/004/merged", []), infer_scenario("ann_and_bo/001", [])
    ('family', 'couple')
    """
    lowered = sample_id.lower()
    if lowered.startswith("family_therapy/") or "/family_therapy/" in lowered:
        return "family"
    for row in rows:
        names = [row.speaker, *row.targets, *(t for s in row.support_strategy for t in s.target)]
        if "Family" in (n.strip() for n in names if isinstance(n, str)):
            return "family"
    return "couple"


def infer_participants(rows: Iterable[Row]) -> tuple[str, ...]:
    """On-screen people in order of first appearance (speaker, then row targets, then strategy targets)."""
    seen: dict[str, None] = {}
    for row in rows:
        for name in (row.speaker, *row.targets, *(t for s in row.support_strategy for t in s.target)):
            clean = name.strip() if isinstance(name, str) else ""
            if clean and clean not in NON_CLIENT_SPEAKERS:
                seen.setdefault(clean, None)
    return tuple(seen)


def _participants(value: Any, rows: list[Row]) -> tuple[str, ...]:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        given = tuple(v.strip() for v in value if v.strip() and v.strip() not in NON_CLIENT_SPEAKERS)
        if given:
            return given
    return infer_participants(rows)


# -- helpers -------------------------------------------------------------------------------------------------


def _id_from_source_file(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    marker = "therapy_merged_all/"
    tail = value.split(marker, 1)[1] if marker in value else Path(value).name
    path = Path(tail)
    # A name like "/" or "x/." has no file name, and with_suffix() refuses it.
    return path.with_suffix("").as_posix() if path.name else None


def _sample_id(obj: dict[str, Any], fallback_id: str) -> str:
    raw_id = obj.get("sample_id")
    return raw_id if isinstance(raw_id, str) and raw_id else fallback_id


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


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return (
            "number" if not (isinstance(value, float) and not math.isfinite(value)) else "non-finite number"
        )
    names: dict[type, str] = {str: "string", list: "list", dict: "object"}
    return names.get(type(value), type(value).__name__)


def _hf_sample_source(snapshot: Path) -> Path:
    """The release JSONL inside a dataset snapshot, else the snapshot directory itself.

    The release keeps all samples in ``benchmark*.jsonl``, beside task files (``er.jsonl``, ``vp.jsonl``) that
    are not samples, so a lone JSONL file or one named ``benchmark*`` is taken.
    """
    candidates = sorted(snapshot.rglob("*.jsonl"))
    named = [p for p in candidates if p.name.startswith("benchmark")]
    if len(named) == 1:
        return named[0]
    return candidates[0] if len(candidates) == 1 else snapshot


def _hf_snapshot(repo_id: str) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:  # pragma: no cover - huggingface_hub is a core dependency
        raise DataError("huggingface_hub is not installed: pip install huggingface_hub") from exc
    try:
        return Path(snapshot_download(repo_id=repo_id, repo_type="dataset"))
    except Exception as exc:  # any hub failure gets the same advice
        raise DataError(
            f"cannot fetch the Hugging Face dataset {repo_id!r} ({type(exc).__name__}). When offline, "
            f"download it elsewhere with `huggingface-cli download {repo_id} --repo-type dataset "
            f"--local-dir DIR`, copy DIR here and pass its JSONL file (data/benchmark_191.jsonl) or DIR as "
            f"SOURCE; or set HF_HOME to a cache that holds it."
        ) from None
