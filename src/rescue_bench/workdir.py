"""The annotation work directory (format in ``docs/design.md``): typed records, reading, writing, export.

::

    WORKDIR/
      workdir.json                          what was ingested, and how
      segments/<segment_id>/manifest.json   rows from the subtitles, with their clips
      segments/<segment_id>/draft.json      release-format rows drafted by a model, with rule violations
      clips/<segment_id>/row_0001.mp4

Besides the keys of the design, a manifest row carries ``cue`` (the subtitle cue it came from),
``workdir.json`` carries ``video_duration_sec`` and ``settings``, and a draft carries ``status`` and
``segment_violations``; readers ignore keys they do not know. Writes go through a temporary file, so a
reader never sees half a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rescue_bench.errors import DataError
from rescue_bench.records import Json
from rescue_bench.rundir import atomic_write_json
from rescue_bench.taxonomy import Scenario

WORKDIR_FILE = "workdir.json"
SEGMENTS_DIR = "segments"
CLIPS_DIR = "clips"
MANIFEST_FILE = "manifest.json"
DRAFT_FILE = "draft.json"
FORMAT = 1

DraftStatus = Literal["clean", "violations", "unusable"]


@dataclass(frozen=True, slots=True)
class ManifestRow:
    """One row as the subtitles give it: timing, speaker (when marked), words and the row's clip."""

    index: int
    start_time: float
    end_time: float
    speaker: str | None
    text: str
    clip_path: str | None = None
    """Relative to the work directory."""
    duration_sec: float | None = None
    """The clip's duration as ffprobe measured it."""
    cue: int | None = None

    def to_json(self) -> dict[str, Json]:
        return {
            "index": self.index, "start_time": self.start_time, "end_time": self.end_time,
            "speaker": self.speaker, "text": self.text, "clip_path": self.clip_path,
            "duration_sec": self.duration_sec, "cue": self.cue,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class SegmentManifest:
    """One segment: a self-contained stretch of the conversation, the unit of a release sample."""

    segment_id: str
    sample_id: str
    scenario: Scenario
    participants: tuple[str, ...]
    start_time: float
    end_time: float
    rows: tuple[ManifestRow, ...]

    @property
    def duration(self) -> float:
        return self.end_time - self.start_time

    def row(self, index: int) -> ManifestRow | None:
        return self.rows[index - 1] if 1 <= index <= len(self.rows) else None

    def to_json(self) -> dict[str, Json]:
        return {
            "segment_id": self.segment_id, "sample_id": self.sample_id, "scenario": self.scenario,
            "participants": list(self.participants), "start_time": self.start_time, "end_time": self.end_time,
            "rows": [row.to_json() for row in self.rows],
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class WorkdirInfo:
    """``workdir.json``."""

    scenario: Scenario
    participants: tuple[str, ...]
    video: str
    subtitles: str
    created: str
    video_duration_sec: float | None = None
    settings: dict[str, Json] = field(default_factory=dict)

    def to_json(self) -> dict[str, Json]:
        return {
            "format": FORMAT, "scenario": self.scenario, "participants": list(self.participants),
            "video": self.video, "subtitles": self.subtitles, "created": self.created,
            "video_duration_sec": self.video_duration_sec, "settings": self.settings,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Draft:
    """``draft.json``: release-format rows and what is still wrong with them, per row index."""

    model: str
    rows: tuple[dict[str, Json], ...]
    violations: dict[str, list[str]]
    status: DraftStatus
    segment_violations: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Json]:
        return {
            "model": self.model, "status": self.status, "rows": list(self.rows),
            "violations": dict(self.violations), "segment_violations": list(self.segment_violations),
        }  # fmt: skip


# -- reading -------------------------------------------------------------------------------------------------


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None


def read_info(root: Path) -> WorkdirInfo:
    """``workdir.json`` of ``root``; :class:`DataError` when ``root`` is not a work directory."""
    path = root / WORKDIR_FILE
    if not path.is_file():
        raise DataError(
            f"{root}: not an annotation work directory (no {WORKDIR_FILE}; run `annotate ingest`)"
        )
    obj = read_json(path)
    if not isinstance(obj, dict) or obj.get("scenario") not in ("couple", "family"):
        raise DataError(f"{path}: expected an object with scenario 'couple' or 'family'")
    duration = obj.get("video_duration_sec")
    settings = obj.get("settings")
    return WorkdirInfo(
        scenario=obj["scenario"],
        participants=tuple(_names(obj.get("participants"), path, "participants")),
        video=str(obj.get("video") or ""),
        subtitles=str(obj.get("subtitles") or ""),
        created=str(obj.get("created") or ""),
        video_duration_sec=float(duration) if isinstance(duration, int | float) else None,
        settings=settings if isinstance(settings, dict) else {},
    )


def manifest_paths(root: Path) -> list[Path]:
    return sorted((root / SEGMENTS_DIR).glob(f"*/{MANIFEST_FILE}"))


def read_manifest(path: Path) -> SegmentManifest:
    """One segment manifest, checked field by field."""
    obj = read_json(path)
    if not isinstance(obj, dict) or not isinstance(obj.get("rows"), list):
        raise DataError(f"{path}: expected an object with a 'rows' list")
    if obj.get("scenario") not in ("couple", "family"):
        raise DataError(f"{path}: scenario must be 'couple' or 'family' (got {obj.get('scenario')!r})")
    rows = tuple(_manifest_row(entry, path, position) for position, entry in enumerate(obj["rows"]))
    for position, row in enumerate(rows, start=1):
        if row.index != position:
            raise DataError(f"{path}: rows[{position - 1}].index is {row.index}, expected {position}")
    segment_id = obj.get("segment_id") or path.parent.name
    return SegmentManifest(
        segment_id=str(segment_id),
        sample_id=str(obj.get("sample_id") or segment_id),
        scenario=obj["scenario"],
        participants=tuple(_names(obj.get("participants"), path, "participants")),
        start_time=_float(obj.get("start_time"), path, "start_time"),
        end_time=_float(obj.get("end_time"), path, "end_time"),
        rows=rows,
    )


def _manifest_row(entry: Any, path: Path, position: int) -> ManifestRow:
    where = f"rows[{position}]"
    if not isinstance(entry, dict):
        raise DataError(f"{path}: {where} is not an object")
    index = entry.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        raise DataError(f"{path}: {where}.index must be an integer")
    speaker, clip, cue = entry.get("speaker"), entry.get("clip_path"), entry.get("cue")
    return ManifestRow(
        index=index,
        start_time=_float(entry.get("start_time"), path, f"{where}.start_time"),
        end_time=_float(entry.get("end_time"), path, f"{where}.end_time"),
        speaker=speaker if isinstance(speaker, str) and speaker.strip() else None,
        text=str(entry.get("text") or ""),
        clip_path=clip if isinstance(clip, str) and clip else None,
        duration_sec=float(entry["duration_sec"]) if _is_number(entry.get("duration_sec")) else None,
        cue=cue if isinstance(cue, int) and not isinstance(cue, bool) else None,
    )


def read_draft(path: Path) -> Draft | None:
    """A segment's draft, or ``None`` when it has none yet."""
    if not path.is_file():
        return None
    obj = read_json(path)
    if not isinstance(obj, dict) or not isinstance(obj.get("rows"), list):
        raise DataError(f"{path}: expected an object with a 'rows' list")
    found = obj.get("violations")
    violations: dict[str, Any] = found if isinstance(found, dict) else {}
    status: DraftStatus = "violations"
    if obj.get("status") in ("clean", "unusable"):
        status = obj["status"]
    return Draft(
        model=str(obj.get("model") or ""),
        rows=tuple(r for r in obj["rows"] if isinstance(r, dict)),
        violations={str(k): [str(v) for v in vs] for k, vs in violations.items() if isinstance(vs, list)},
        status=status,
        segment_violations=tuple(str(v) for v in obj.get("segment_violations") or ()),
    )


def segment_dir(root: Path, segment_id: str) -> Path:
    return root / SEGMENTS_DIR / segment_id


def write_manifest(root: Path, manifest: SegmentManifest) -> Path:
    path = segment_dir(root, manifest.segment_id) / MANIFEST_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, manifest.to_json())
    return path


def write_draft(root: Path, segment_id: str, draft: Draft) -> Path:
    path = segment_dir(root, segment_id) / DRAFT_FILE
    atomic_write_json(path, draft.to_json())
    return path


def write_info(root: Path, info: WorkdirInfo) -> None:
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_json(root / WORKDIR_FILE, info.to_json())


# -- export --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Export:
    """Release-format samples built from drafts, and what was left out or is still flagged."""

    samples: tuple[dict[str, Json], ...]
    undrafted: tuple[str, ...]
    flagged_rows: int


def export_release(root: Path) -> Export:
    """One release sample per drafted segment, in segment order; segments without a draft are listed."""
    samples: list[dict[str, Json]] = []
    undrafted: list[str] = []
    flagged = 0
    for path in manifest_paths(root):
        manifest = read_manifest(path)
        draft = read_draft(path.parent / DRAFT_FILE)
        if draft is None:
            undrafted.append(manifest.segment_id)
            continue
        flagged += sum(1 for found in draft.violations.values() if found)
        samples.append(
            {
                "sample_id": manifest.sample_id,
                "scenario": manifest.scenario,
                "participants": list(manifest.participants),
                "rows": list(draft.rows),
            }
        )
    return Export(tuple(samples), tuple(undrafted), flagged)


# -- helpers -------------------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _float(value: Any, path: Path, name: str) -> float:
    if not _is_number(value):
        raise DataError(f"{path}: {name} must be a number of seconds (got {value!r})")
    return float(value)


def _names(value: Any, path: Path, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise DataError(f"{path}: {name} must be a list of names")
    return [v.strip() for v in value]
