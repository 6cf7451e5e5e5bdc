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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, TypeAdapter

from rescue_bench.errors import DataError
from rescue_bench.jsonfile import (
    OptionalInt,
    OptionalNumber,
    OptionalText,
    StrictFloat,
    StrictInt,
    StrictStr,
    Text,
    read_json,
    validate,
)
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


_READ = ConfigDict(extra="ignore")


def _names(value: tuple[str, ...]) -> tuple[str, ...]:
    if not all(v.strip() for v in value):
        raise ValueError("must be a list of names")
    return tuple(v.strip() for v in value)


Names = Annotated[tuple[StrictStr, ...], AfterValidator(_names)]


@dataclass(frozen=True, slots=True)
class ManifestRow:
    """One row as the subtitles give it: timing, speaker (when marked), words and the row's clip."""

    __pydantic_config__ = _READ

    index: StrictInt
    start_time: StrictFloat
    end_time: StrictFloat
    speaker: OptionalText
    text: Text
    clip_path: OptionalText = None
    """Relative to the work directory."""
    duration_sec: OptionalNumber = None
    """The clip's duration as ffprobe measured it."""
    cue: OptionalInt = None

    def to_json(self) -> dict[str, Json]:
        return {
            "index": self.index, "start_time": self.start_time, "end_time": self.end_time,
            "speaker": self.speaker, "text": self.text, "clip_path": self.clip_path,
            "duration_sec": self.duration_sec, "cue": self.cue,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class SegmentManifest:
    """One segment: a self-contained stretch of the conversation, the unit of a release sample."""

    __pydantic_config__ = _READ

    segment_id: StrictStr
    sample_id: StrictStr
    scenario: Scenario
    participants: Names
    start_time: StrictFloat
    end_time: StrictFloat
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

    __pydantic_config__ = _READ

    scenario: Scenario
    participants: Names
    video: Text = ""
    subtitles: Text = ""
    created: Text = ""
    video_duration_sec: OptionalNumber = None
    draft_spend_usd: OptionalNumber = None
    """Dollars the drafting requests cost so far, over every resumed ``annotate draft`` (when priced)."""
    settings: Annotated[dict[str, Json], BeforeValidator(lambda v: v if isinstance(v, dict) else {})] = field(
        default_factory=dict
    )

    def to_json(self) -> dict[str, Json]:
        return {
            "format": FORMAT, "scenario": self.scenario, "participants": list(self.participants),
            "video": self.video, "subtitles": self.subtitles, "created": self.created,
            "video_duration_sec": self.video_duration_sec, "draft_spend_usd": self.draft_spend_usd,
            "settings": self.settings,
        }  # fmt: skip


def _status(value: Any) -> Any:
    return value if value in ("clean", "unusable") else "violations"


@dataclass(frozen=True, slots=True)
class Draft:
    """``draft.json``: release-format rows and what is still wrong with them, per row index."""

    __pydantic_config__ = _READ

    model: Text = ""
    rows: tuple[dict[str, Json], ...] = ()
    violations: dict[str, list[Annotated[str, BeforeValidator(str)]]] = field(default_factory=dict)
    status: Annotated[DraftStatus, BeforeValidator(_status)] = "violations"
    """Anything but ``clean`` or ``unusable`` (an older draft without it, say) reads as ``violations``."""
    segment_violations: tuple[Annotated[str, BeforeValidator(str)], ...] = ()

    def to_json(self) -> dict[str, Json]:
        return {
            "model": self.model, "status": self.status, "rows": list(self.rows),
            "violations": dict(self.violations), "segment_violations": list(self.segment_violations),
        }  # fmt: skip


# -- reading -------------------------------------------------------------------------------------------------

_INFO = TypeAdapter(WorkdirInfo)
_MANIFEST = TypeAdapter(SegmentManifest)
_DRAFT = TypeAdapter(Draft)


def read_info(root: Path) -> WorkdirInfo:
    """``workdir.json`` of ``root``; :class:`DataError` when ``root`` is not a work directory."""
    path = root / WORKDIR_FILE
    if not path.is_file():
        raise DataError(
            f"{root}: not an annotation work directory (no {WORKDIR_FILE}; run `annotate ingest`)"
        )
    return validate(_INFO, read_json(path), path)


def manifest_paths(root: Path) -> list[Path]:
    return sorted((root / SEGMENTS_DIR).glob(f"*/{MANIFEST_FILE}"))


def read_manifest(path: Path) -> SegmentManifest:
    """One segment manifest, checked field by field; the ids default to the segment's directory name."""
    obj = read_json(path)
    if not isinstance(obj, dict):
        raise DataError(f"{path}: expected an object with a 'rows' list")
    segment_id = obj.pop("segment_id", None) or path.parent.name
    sample_id = obj.pop("sample_id", None) or segment_id
    manifest = validate(_MANIFEST, {"segment_id": segment_id, "sample_id": sample_id, **obj}, path)
    for position, row in enumerate(manifest.rows, start=1):
        if row.index != position:
            raise DataError(f"{path}: rows[{position - 1}].index is {row.index}, expected {position}")
    return manifest


def read_draft(path: Path) -> Draft | None:
    """A segment's draft, or ``None`` when it has none yet."""
    if not path.is_file():
        return None
    return validate(_DRAFT, read_json(path), path)


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
