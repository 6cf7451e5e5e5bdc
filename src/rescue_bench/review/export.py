"""Export verified segments as release-format JSONL.

A segment is verified when it is not discarded and every one of its rows is marked reviewed. The file is
written next to its destination, read back with the package's own loader, and only then moved into place: an
export that the benchmark could not read is never left behind.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from rescue_bench.atomic import atomic_path
from rescue_bench.data.load import read_source
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.review.db import Segment
from rescue_bench.review.loader import describe
from rescue_bench.review.store import segment_summaries


@dataclass(frozen=True, slots=True)
class ExportResult:
    samples: int
    rows: int
    unverified: int
    discarded: int


def sample_record(segment: Segment) -> dict[str, Any]:
    """One release JSONL object for a segment, rows in order with their current data."""
    out: dict[str, Any] = {
        "sample_id": segment.sample_id,
        "scenario": segment.scenario,
        "participants": list(segment.participants),
    }
    if segment.source_file is not None:
        out["source_file"] = segment.source_file
    out["rows"] = [row.data for row in sorted(segment.rows, key=lambda r: r.row_index)]
    return out


def verified_records(session: Session) -> tuple[list[dict[str, Any]], ExportResult]:
    summaries = segment_summaries(session)
    chosen = [s.segment for s in summaries if s.verified]
    records = [sample_record(segment) for segment in sorted(chosen, key=lambda s: s.sample_id)]
    result = ExportResult(
        samples=len(records),
        rows=sum(len(r["rows"]) for r in records),
        unverified=sum(1 for s in summaries if not s.segment.discarded and not s.verified),
        discarded=sum(1 for s in summaries if s.segment.discarded),
    )
    return records, result


def export_jsonl(session: Session, out: Path) -> ExportResult:
    """Write the verified segments to ``out``; :class:`DataError` if there are none or they do not load."""
    records, result = verified_records(session)
    if not records:
        raise DataError(
            f"nothing to export: no verified segments ({result.unverified} with unreviewed rows, "
            f"{result.discarded} discarded); a segment is verified when every row is marked reviewed"
        )
    if out.is_dir():
        raise ConfigError(f"{out}: is a directory; name the JSONL file to write")
    try:
        _write_checked(out, records)
    except OSError as exc:
        raise ConfigError(f"{out}: cannot write the export: {exc.strerror or exc}") from None
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


def export_text(session: Session) -> tuple[str, ExportResult]:
    """The export as text (for the admin's download), validated the same way."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "verified.jsonl"
        result = export_jsonl(session, path)
        return path.read_text(encoding="utf-8"), result
