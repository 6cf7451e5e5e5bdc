"""``review import-reviews``: an annotator's labels from a release-format file, as their independent review.

For teams that annotate offline or in another tool. The file must load as release data (the package's own
reader checks it). Each sample is matched to a segment by its sample id and each row by its row index; a
sample or row that matches nothing is named with its file and line, and then nothing is imported, so a file
is taken whole or not at all. Importing the same file again changes nothing; a changed file updates the
user's reviews (their versions go up).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from rescue_bench.data.load import read_source
from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.problems import Problem
from rescue_bench.review.db import Review, RowRecord, Segment, user_by_name
from rescue_bench.review.loader import describe
from rescue_bench.review.reviews import save_review, whole_intensities

MAX_SHOWN = 10


@dataclass(frozen=True, slots=True)
class ImportResult:
    samples: int
    rows: int
    changed: int
    """Rows whose review by this user is new or now holds other values."""
    not_in_file: int
    """Rows of the matched segments that the file leaves out (not reviewed by this import)."""


def _where(sample: Sample, source: Path) -> tuple[str, int | None]:
    origin = sample.origin or str(source)
    path, _, line = origin.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else (origin, None)


def _match(
    samples: tuple[Sample, ...], segments: dict[str, Segment], source: Path
) -> tuple[list[tuple[RowRecord, Sample, int]], list[Problem]]:
    """Pairs (stored row, sample, its row's position), and a problem for each sample or row matching
    nothing."""
    pairs: list[tuple[RowRecord, Sample, int]] = []
    problems: list[Problem] = []
    for sample in samples:
        file, line = _where(sample, source)
        segment = segments.get(sample.sample_id)
        if segment is None:
            problems.append(
                Problem("error", "no such sample in the review store", file, line, sample.sample_id)
            )
            continue
        rows = {row.row_index: row for row in segment.rows}
        for position, row in enumerate(sample.rows):
            stored = rows.get(row.row_index)
            if stored is None:
                message = f"no row {row.row_index} in the stored segment (it has rows 1-{len(rows)})"
                problems.append(Problem("error", message, file, line, sample.sample_id, row.row_index))
                continue
            pairs.append((stored, sample, position))
    return pairs, problems


def import_reviews(session: Session, source: Path, user_name: str) -> ImportResult:
    """Record every row of ``source`` as ``user_name``'s review; :class:`DataError` (nothing saved) when the
    file does not load or names a sample or row the store does not have."""
    user = user_by_name(session, user_name)
    if user is None:
        raise ConfigError(
            f"no user {user_name!r} in the review store; add one with `rescue-bench review add-user`"
        )
    if not source.exists():
        raise ConfigError(f"{source}: no such file or directory")
    report = read_source(source)
    problems = list(report.errors)
    ids = [sample.sample_id for sample in report.samples]
    stmt = select(Segment).where(Segment.sample_id.in_(ids)).options(selectinload(Segment.rows))
    segments = {segment.sample_id: segment for segment in session.scalars(stmt)}
    pairs, unmatched = _match(report.samples, segments, source)
    problems += unmatched
    if problems:
        shown = "; ".join(describe(p) for p in problems[:MAX_SHOWN])
        more = f" (and {len(problems) - MAX_SHOWN} more)" if len(problems) > MAX_SHOWN else ""
        raise DataError(f"nothing imported: {shown}{more}", problems)
    changed = 0
    mine = {r.row_id: r for r in session.scalars(select(Review).where(Review.user_id == user.id))}
    for stored, sample, position in pairs:
        data = whole_intensities(sample.rows[position].to_release())
        outcome = save_review(session, stored, user, data, source="import", commit=False, known=mine)
        changed += outcome.status == "saved"
    session.commit()
    matched = {sample.sample_id for sample in report.samples}
    total = sum(len(segments[s].rows) for s in matched)
    return ImportResult(
        samples=len(matched), rows=len(pairs), changed=changed, not_in_file=total - len(pairs)
    )
