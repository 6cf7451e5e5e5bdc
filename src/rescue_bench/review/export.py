"""Export resolved segments as release-format JSONL, and say what is held back and why.

A segment is exported when it is not discarded and every one of its rows is resolved: its reviews agree (as
many as the project asks for) or an adjudicator decided it (see :mod:`rescue_bench.review.reviews`). Each row
carries its released value; values nobody touched keep their JSON form. The file is
written next to its destination, read back with the package's own loader, and only then moved into place: an
export that the benchmark could not read is never left behind.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue_bench.atomic import atomic_path, write_atomic
from rescue_bench.data.load import read_source
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.review.db import Segment, User
from rescue_bench.review.loader import describe
from rescue_bench.review.reviews import RowStatus, segment_statuses
from rescue_bench.review.settings import project_settings


@dataclass(frozen=True, slots=True)
class HeldBack:
    sample_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class ExportResult:
    samples: int
    rows: int
    unverified: int
    discarded: int
    held_back: tuple[HeldBack, ...] = ()


@dataclass(frozen=True, slots=True)
class _Resolved:
    segment: Segment
    statuses: list[RowStatus]


def sample_record(segment: Segment, values: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One release JSONL object for a segment: its rows in order, with ``values`` (the released ones) when
    given, else the rows' current data."""
    out: dict[str, Any] = {
        "sample_id": segment.sample_id,
        "scenario": segment.scenario,
        "participants": list(segment.participants),
    }
    if segment.source_file is not None:
        out["source_file"] = segment.source_file
    rows = sorted(segment.rows, key=lambda r: r.row_index)
    out["rows"] = values if values is not None else [row.data for row in rows]
    return out


def _hold_reason(segment: Segment, found: list[RowStatus]) -> str:
    """Why a segment is held back (empty when every row is resolved)."""
    if segment.discarded:
        return f"discarded ({segment.discard_reason or 'no reason'})"
    if not found:
        return "no rows"
    open_rows = [
        (row.row_index, status)
        for row, status in zip(segment.rows, found, strict=True)
        if not status.resolved
    ]
    if not open_rows:
        return ""
    shown = "; ".join(f"row {index}: {status.reason}" for index, status in open_rows[:5])
    more = f"; and {len(open_rows) - 5} more" if len(open_rows) > 5 else ""
    return f"{len(open_rows)} of {len(found)} row(s) unresolved: {shown}{more}"


def resolved_segments(session: Session) -> tuple[list[_Resolved], list[HeldBack], int]:
    """The segments whose rows are all resolved (by sample id), what is held back and why, and how many of
    those are discarded."""
    settings = project_settings(session)
    segments = list(session.scalars(select(Segment).order_by(Segment.sample_id)))
    ready: list[_Resolved] = []
    held: list[HeldBack] = []
    discarded = 0
    for segment in segments:
        found = segment_statuses(session, settings, segment)
        reason = _hold_reason(segment, found)
        if reason:
            held.append(HeldBack(segment.sample_id, reason))
            discarded += segment.discarded
        else:
            ready.append(_Resolved(segment, found))
    return ready, held, discarded


def verified_records(session: Session) -> tuple[list[dict[str, Any]], ExportResult]:
    ready, held, discarded = resolved_segments(session)
    records = [sample_record(r.segment, [s.value or {} for s in r.statuses]) for r in ready]
    result = ExportResult(
        samples=len(records),
        rows=sum(len(r["rows"]) for r in records),
        unverified=len(held) - discarded,
        discarded=discarded,
        held_back=tuple(held),
    )
    return records, result


def provenance_records(session: Session, ready: list[_Resolved]) -> list[dict[str, Any]]:
    """One record per exported row: the draft model, each reviewer (with their review's version and when),
    and the adjudicator when there was one."""
    names = {user.id: user.name for user in session.scalars(select(User))}
    out: list[dict[str, Any]] = []
    for item in ready:
        for row, status in zip(
            sorted(item.segment.rows, key=lambda r: r.row_index), item.statuses, strict=True
        ):
            decision = status.adjudication
            out.append(
                {
                    "sample_id": item.segment.sample_id,
                    "row_index": row.row_index,
                    "resolution": status.state,
                    "draft_model": item.segment.model,
                    "edited_from_draft": status.value != row.draft,
                    "reviewers": [
                        {
                            "user": names.get(review.user_id, "?"),
                            "review_version": review.version,
                            "source": review.source,
                            "at": review.updated_at.isoformat(),
                        }
                        for review in status.reviews
                    ],
                    "adjudicator": None
                    if decision is None
                    else {
                        "user": names.get(decision.user_id, "?"),
                        "picked_review": decision.picked_review_id,
                        "at": decision.created_at.isoformat(),
                    },
                }
            )
    return out


def export_jsonl(session: Session, out: Path, provenance: Path | None = None) -> ExportResult:
    """Write the resolved segments to ``out`` (and, when asked, one provenance record per row); nothing is
    written when there are none or they do not load (:class:`DataError`)."""
    records, result = verified_records(session)
    if not records:
        raise DataError(
            "nothing to export: no segment has every row resolved "
            f"({result.unverified} with unresolved rows, "
            f"{result.discarded} discarded); a row is resolved when its reviews agree or it was adjudicated"
        )
    for path in (out, provenance):
        if path is not None and path.is_dir():
            raise ConfigError(f"{path}: is a directory; name the JSONL file to write")
    try:
        _write_checked(out, records)
        if provenance is not None:
            ready, _, _ = resolved_segments(session)
            lines = "".join(
                json.dumps(r, ensure_ascii=False) + "\n" for r in provenance_records(session, ready)
            )
            _write_atomic(provenance, lines)
    except OSError as exc:
        raise ConfigError(f"{exc.filename or out}: cannot write the export: {exc.strerror or exc}") from None
    return result


def _write_checked(out: Path, records: list[dict[str, Any]]) -> None:
    """Write through a temporary file that must load as release data before it replaces ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        with tmp.open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        report = read_source(tmp)
        if report.errors:
            raise DataError(f"the export does not load: {describe(report.errors[0])}", report.errors)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text.encode("utf-8"))


def export_text(session: Session) -> tuple[str, ExportResult]:
    """The export as text (for the admin's download), validated the same way."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "verified.jsonl"
        result = export_jsonl(session, path)
        return path.read_text(encoding="utf-8"), result
