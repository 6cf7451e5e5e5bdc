"""Import work into the review store: an annotation work directory (manifests, drafts, clips) or release
JSONL.

The work-directory format is in ``docs/design.md``. Drafts are validated with the package's own sample
builder, so the review starts from rows the benchmark can read. Loading is idempotent: a segment already in
the store is kept as it is (with its edits) and reported as skipped, never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue_bench.data.load import build_sample, read_source
from rescue_bench.data.schema import Row, Sample
from rescue_bench.errors import DataError
from rescue_bench.problems import Problem
from rescue_bench.review.db import RowRecord, RowVersion, Segment
from rescue_bench.review.reviews import whole_intensities
from rescue_bench.review.workfiles import DraftFile, MediaRow, SegmentFile, WorkInfo, read_record


@dataclass(frozen=True, slots=True)
class RowInput:
    data: dict[str, Any]
    subtitle_text: str | None = None
    clip_path: str | None = None
    duration_sec: float | None = None
    violations: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class SegmentInput:
    segment_id: str
    sample_id: str
    group_name: str
    scenario: str
    participants: tuple[str, ...]
    source_path: str
    rows: tuple[RowInput, ...]
    source_file: str | None = None
    model: str | None = None
    draft_notes: dict[str, Any] = field(default_factory=dict)
    start_time: float | None = None
    end_time: float | None = None


@dataclass(frozen=True, slots=True)
class LoadResult:
    added: tuple[str, ...]
    skipped: tuple[str, ...]
    rows: int
    warnings: tuple[str, ...]


def load_work(session: Session, source: Path) -> LoadResult:
    """Read ``source`` (a work directory or release JSONL) and add its new segments to the store."""
    segments, warnings = read_work(source)
    return store_segments(session, segments, warnings)


def read_work(source: Path) -> tuple[list[SegmentInput], list[str]]:
    """Segments and warnings from a work directory (with ``workdir.json`` or ``segments/``) or a release."""
    if source.is_dir() and ((source / "workdir.json").is_file() or (source / "segments").is_dir()):
        # absolute: the app finds each segment's media root (one of several --workdir) from this path
        return read_workdir(source.resolve())
    return read_release(source), []


def group_of(sample_id: str, fallback: str) -> str:
    """The picker group of a sample: its parent path, else ``fallback``.

    >>> group_of("couple_therapy/ep01/seg_03", "x"), group_of("seg_03", "ep01")
    ('couple_therapy/ep01', 'ep01')
    """
    parent = PurePosixPath(sample_id).parent.as_posix()
    return parent if parent not in ("", ".") else fallback


def describe(problem: Problem) -> str:
    """A problem for an error message: where, then what (the CLI adds ``error:`` itself)."""
    where = problem.location()
    return f"{where}: {problem.message}" if where else problem.message


# -- release format ------------------------------------------------------------------------------------------


def read_release(source: Path) -> list[SegmentInput]:
    report = read_source(source)
    if report.errors:
        more = f" (and {len(report.errors) - 1} more)" if len(report.errors) > 1 else ""
        raise DataError(f"{describe(report.errors[0])}{more}", report.errors)
    fallback = source.stem or source.name
    return [_release_segment(sample, str(source), fallback) for sample in report.samples]


def _release_segment(sample: Sample, source_path: str, fallback_group: str) -> SegmentInput:
    rows = tuple(
        RowInput(
            data=whole_intensities(row.to_release()),
            subtitle_text=row.dialogue_cleaned,
            duration_sec=_duration(row.start_time, row.end_time),
        )
        for row in sample.rows
    )
    return SegmentInput(
        segment_id=sample.sample_id,
        sample_id=sample.sample_id,
        group_name=group_of(sample.sample_id, fallback_group),
        scenario=sample.scenario,
        participants=sample.participants,
        source_path=source_path,
        rows=rows,
        source_file=sample.source_file,
        start_time=sample.rows[0].start_time,
        end_time=sample.rows[-1].end_time,
    )


def _duration(start: float | None, end: float | None) -> float | None:
    return round(end - start, 3) if start is not None and end is not None and end >= start else None


# -- work directory ------------------------------------------------------------------------------------------


ROWS_OBJECT = "an object with a 'rows' list"


def read_workdir(root: Path) -> tuple[list[SegmentInput], list[str]]:
    info_path = root / "workdir.json"
    info = read_record(info_path, WorkInfo, "a JSON object") if info_path.is_file() else WorkInfo()
    manifests = sorted((root / "segments").glob("*/manifest.json"))
    if not manifests:
        raise DataError(
            f"{root}: no segments/<segment_id>/manifest.json found (run `rescue-bench annotate ingest`)"
        )
    fallback = Path(info.video).stem if info.video else root.resolve().name
    segments: list[SegmentInput] = []
    warnings: list[str] = []
    for manifest_path in manifests:
        segment, found = _workdir_segment(root, manifest_path, info, fallback)
        segments.append(segment)
        warnings.extend(found)
    return segments, warnings


def _workdir_segment(
    root: Path, manifest_path: Path, info: WorkInfo, fallback_group: str
) -> tuple[SegmentInput, list[str]]:
    manifest = read_record(manifest_path, SegmentFile, ROWS_OBJECT)
    segment_id, sample_id, scenario, participants = _identity(manifest, info, manifest_path)
    media = {entry.index: entry for entry in manifest.rows}
    draft_path = manifest_path.parent / "draft.json"
    draft = _draft_rows(draft_path, manifest_path, media)
    warnings = list(draft.warnings)
    sample_obj = {
        "sample_id": sample_id,
        "scenario": scenario,
        "participants": participants,
        "rows": draft.rows,
    }
    sample, problems = build_sample(sample_obj, fallback_id=sample_id, file=str(draft_path), line=None)
    errors = [p for p in problems if p.severity == "error"]
    if sample is None or errors:
        raise DataError(describe(errors[0]) if errors else f"{draft_path}: unreadable draft", errors)
    rows = tuple(_row_input(row, media.get(row.row_index), draft.violations) for row in sample.rows)
    warnings += [
        f"{manifest_path}: row {i}: clip {m.clip_path} is missing"
        for i, m in sorted(media.items())
        if m.clip_path and not (root / m.clip_path).is_file()
    ]
    warnings += [
        f"{manifest_path}: row {i} has no draft row"
        for i in sorted(set(media) - {r.row_index for r in sample.rows})
    ]
    segment = SegmentInput(
        segment_id=segment_id,
        sample_id=sample_id,
        group_name=group_of(sample_id, fallback_group),
        scenario=scenario,
        participants=sample.participants,
        source_path=str(manifest_path),
        rows=rows,
        model=draft.model,
        draft_notes=draft.notes,
        start_time=manifest.start_time,
        end_time=manifest.end_time,
    )
    return segment, warnings


def _identity(manifest: SegmentFile, info: WorkInfo, path: Path) -> tuple[str, str, str, list[str]]:
    """Segment id, sample id, scenario and participants of a manifest (workdir.json fills gaps)."""
    segment_id = manifest.segment_id or path.parent.name
    sample_id = manifest.sample_id or segment_id
    scenario = manifest.scenario or info.scenario
    if scenario not in ("couple", "family"):
        raise DataError(f"{path}: scenario must be 'couple' or 'family' (got {scenario!r})")
    participants = manifest.participants or info.participants or []
    if not isinstance(participants, list) or not all(isinstance(p, str) for p in participants):
        raise DataError(f"{path}: participants must be a list of names")
    return segment_id, sample_id, scenario, participants


@dataclass(frozen=True, slots=True)
class _Draft:
    rows: list[Any]
    model: str | None = None
    violations: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _draft_rows(draft_path: Path, manifest_path: Path, media: dict[int, MediaRow]) -> _Draft:
    if not draft_path.is_file():
        rows = [
            {
                "row_index": i,
                "start_time": m.start_time,
                "end_time": m.end_time,
                "primary_speaker": m.speaker,
                "dialogue_cleaned": m.text,
            }
            for i, m in sorted(media.items())
        ]
        return _Draft(
            rows, warnings=[f"{manifest_path.parent}: no draft.json; rows start from the manifest only"]
        )
    draft = read_record(draft_path, DraftFile, ROWS_OBJECT)
    notes = {"status": draft.status, "segment_violations": draft.segment_violations}
    return _Draft(draft.rows, draft.model, draft.violations, notes)


def _row_input(row: Row, media: MediaRow | None, violations: dict[str, Any]) -> RowInput:
    found = violations.get(str(row.row_index)) or []
    duration = media.duration_sec if media else None
    return RowInput(
        data=whole_intensities(row.to_release()),
        subtitle_text=media.text if media and media.text is not None else row.dialogue_cleaned,
        clip_path=media.clip_path if media else None,
        duration_sec=duration if duration is not None else _duration(row.start_time, row.end_time),
        violations=tuple(found) if isinstance(found, list) else (found,),
    )


# -- store ---------------------------------------------------------------------------------------------------


def store_segments(
    session: Session, segments: list[SegmentInput], warnings: list[str] | None = None
) -> LoadResult:
    """Add the segments that are new (by segment id and sample id) in one transaction."""
    known_segments = set(session.scalars(select(Segment.segment_id)))
    known_samples = set(session.scalars(select(Segment.sample_id)))
    added: list[str] = []
    skipped: list[str] = []
    rows = 0
    for item in segments:
        if item.segment_id in known_segments or item.sample_id in known_samples:
            skipped.append(item.segment_id)
            continue
        known_segments.add(item.segment_id)
        known_samples.add(item.sample_id)
        _add_segment(session, item)
        added.append(item.segment_id)
        rows += len(item.rows)
    session.commit()
    return LoadResult(tuple(added), tuple(skipped), rows, tuple(warnings or ()))


def _add_segment(session: Session, item: SegmentInput) -> None:
    segment = Segment(
        segment_id=item.segment_id,
        sample_id=item.sample_id,
        group_name=item.group_name,
        scenario=item.scenario,
        participants=list(item.participants),
        source_file=item.source_file,
        source_path=item.source_path,
        model=item.model,
        draft_notes=item.draft_notes,
        start_time=item.start_time,
        end_time=item.end_time,
        discarded=False,
    )
    session.add(segment)
    session.flush()
    for row in item.rows:
        record = RowRecord(
            segment_pk=segment.id,
            row_index=row.data["row_index"],
            data=row.data,
            draft=row.data,
            subtitle_text=row.subtitle_text,
            clip_path=row.clip_path,
            duration_sec=row.duration_sec,
            violations=list(row.violations),
            version=1,
            reviewed=False,
        )
        session.add(record)
        session.flush()
        session.add(RowVersion(row_id=record.id, version=1, action="load", before=None, after=row.data))
