"""What the pages do to the store: progress figures, saving rows with versions and optimistic locking, review
status, discards and comments.

A save names the version it started from. The update only succeeds while the row is still at that version (one
``UPDATE ... WHERE version = :base``, so two savers cannot both win, on SQLite or PostgreSQL). A refused save
is kept as a :class:`~rescue_bench.review.db.Conflict` with the full edit, so nothing typed is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import case, distinct, func, select, update
from sqlalchemy.orm import Session

from rescue_bench.review.db import (
    Comment,
    Conflict,
    Event,
    Review,
    RowRecord,
    RowVersion,
    Segment,
    User,
    utcnow,
)
from rescue_bench.review.reviews import resolved_rows, save_review, withdraw_reviews
from rescue_bench.review.settings import project_settings

# The paper's grounds for dropping a segment (App. G.4).
DISCARD_REASONS: dict[str, str] = {
    "subtitle_errors": "Severe subtitle errors",
    "speaker_mismatch": "Unresolved speaker mismatch",
    "video_evidence": "Missing or ambiguous video evidence",
    "incomplete_context": "Incomplete context",
    "relational_information": "Insufficient relational information",
}


@dataclass(frozen=True, slots=True)
class AnnotatorProgress:
    name: str
    role: str
    reviewed_rows: int
    edits: int
    comments: int
    last_active: datetime | None


@dataclass(frozen=True, slots=True)
class Progress:
    prepared_files: int
    total_segments: int
    discarded_segments: int
    total_rows: int
    reviewed_rows: int
    remaining_rows: int
    edited_rows: int
    commented_segments: int
    verified_segments: int
    annotators: tuple[AnnotatorProgress, ...]


@dataclass(frozen=True, slots=True)
class SegmentSummary:
    segment: Segment
    rows: int
    reviewed: int
    edited: int
    comments: int

    @property
    def verified(self) -> bool:
        return not self.segment.discarded and self.rows > 0 and self.reviewed == self.rows


@dataclass(frozen=True, slots=True)
class SaveOutcome:
    status: Literal["saved", "unchanged", "conflict"]
    version: int
    conflict_id: int | None = None


def progress(session: Session) -> Progress:
    """The dashboard figures. A row counts as reviewed once it is resolved (its reviews agree, as many as the
    project needs, or it was adjudicated). Rows of discarded segments count neither as reviewed nor as
    remaining."""
    active = select(Segment.id).where(Segment.discarded.is_(False))
    rows_active = select(func.count()).select_from(RowRecord).where(RowRecord.segment_pk.in_(active))
    total_rows = session.scalar(rows_active) or 0
    summaries = segment_summaries(session)
    reviewed = sum(s.reviewed for s in summaries if not s.segment.discarded)
    return Progress(
        prepared_files=session.scalar(select(func.count(distinct(Segment.source_path)))) or 0,
        total_segments=len(summaries),
        discarded_segments=sum(1 for s in summaries if s.segment.discarded),
        total_rows=total_rows,
        reviewed_rows=reviewed,
        remaining_rows=total_rows - reviewed,
        edited_rows=sum(s.edited for s in summaries if not s.segment.discarded),
        commented_segments=session.scalar(select(func.count(distinct(Comment.segment_pk)))) or 0,
        verified_segments=sum(1 for s in summaries if s.verified),
        annotators=annotator_progress(session),
    )


def annotator_progress(session: Session) -> tuple[AnnotatorProgress, ...]:
    def counts(stmt: Any) -> dict[int, int]:
        return {uid: n for uid, n in session.execute(stmt) if uid is not None}

    # standing reviews: rows marked reviewed, or independent reviews submitted
    reviewed = counts(
        select(Review.user_id, func.count()).where(Review.active.is_(True)).group_by(Review.user_id)
    )
    edits = counts(
        select(RowVersion.user_id, func.count())
        .where(RowVersion.action == "edit")
        .group_by(RowVersion.user_id)
    )
    comments = counts(select(Comment.user_id, func.count()).group_by(Comment.user_id))
    last: dict[int, datetime] = {}
    for stmt in (
        select(RowVersion.user_id, func.max(RowVersion.created_at)).group_by(RowVersion.user_id),
        select(Event.user_id, func.max(Event.created_at)).group_by(Event.user_id),
        select(Review.user_id, func.max(Review.updated_at)).group_by(Review.user_id),
    ):
        for uid, when in session.execute(stmt):
            if uid is not None and when is not None and (uid not in last or when > last[uid]):
                last[uid] = when
    users = session.scalars(select(User).order_by(User.name))
    return tuple(
        AnnotatorProgress(
            u.name, u.role, reviewed.get(u.id, 0), edits.get(u.id, 0), comments.get(u.id, 0), last.get(u.id)
        )
        for u in users
    )


def segment_summaries(session: Session, group: str | None = None) -> list[SegmentSummary]:
    stmt = select(Segment).order_by(Segment.group_name, Segment.segment_id)
    if group is not None:
        stmt = stmt.where(Segment.group_name == group)
    segments = list(session.scalars(stmt))
    ids = [s.id for s in segments]
    counts = (
        select(
            RowRecord.segment_pk,
            func.count(),
            func.sum(case((RowRecord.reviewed.is_(True), 1), else_=0)),
            func.sum(case((RowRecord.edited.is_(True), 1), else_=0)),
        )
        .where(RowRecord.segment_pk.in_(ids))
        .group_by(RowRecord.segment_pk)
    )
    tally = {
        pk: (rows, int(reviewed or 0), int(edited or 0))
        for pk, rows, reviewed, edited in session.execute(counts)
    }
    resolved = resolved_rows(session, project_settings(session), ids)
    comment_counts = select(Comment.segment_pk, func.count()).where(Comment.segment_pk.in_(ids))
    comments = {pk: n for pk, n in session.execute(comment_counts.group_by(Comment.segment_pk))}
    return [
        SegmentSummary(
            s,
            rows=tally.get(s.id, (0, 0, 0))[0],
            reviewed=resolved.get(s.id, 0),
            edited=tally.get(s.id, (0, 0, 0))[2],
            comments=comments.get(s.id, 0),
        )
        for s in segments
    ]


def groups(session: Session) -> list[str]:
    return list(session.scalars(select(Segment.group_name).distinct().order_by(Segment.group_name)))


def data_at(session: Session, row: RowRecord, version: int) -> dict[str, Any] | None:
    """The row's data as saved at ``version`` (``None`` if there is no such version)."""
    if version == row.version:
        return row.data
    stored = session.scalars(
        select(RowVersion.after).where(RowVersion.row_id == row.id, RowVersion.version == version)
    ).first()
    return stored


def save_row(
    session: Session,
    row: RowRecord,
    base_version: int,
    new: dict[str, Any],
    user: User,
    *,
    review: bool = False,
) -> SaveOutcome:
    """Save ``new`` as the next version if the row is still at ``base_version``; else record a conflict."""
    before = data_at(session, row, base_version)
    if before is not None and before == new:  # nothing typed: never a conflict, and never a new version
        if review:
            return set_reviewed(session, row, base_version, user, reviewed=True)
        return SaveOutcome("unchanged", row.version)
    now = utcnow()
    values: dict[str, Any] = {
        "data": new,
        "version": base_version + 1,
        "edited": new != row.draft,
        "updated_by_id": user.id,
        "updated_at": now,
    }
    if review:
        values.update(reviewed=True, reviewed_by_id=user.id, reviewed_at=now)
    else:  # new values nobody approved yet: the row must be reviewed again
        values.update(reviewed=False, reviewed_by_id=None, reviewed_at=None)
    if not _update_at(session, row.id, base_version, values):
        return _conflict(session, row.id, base_version, new, user)
    withdraw_reviews(session, row.id)
    if review:
        save_review(session, row, user, new, commit=False, event=False)
    version = RowVersion(
        row_id=row.id, version=base_version + 1, action="edit", user_id=user.id, created_at=now
    )
    version.before, version.after = before, new
    session.add(version)
    if review:
        session.add(_review_event(row, user, base_version + 1, now))
    session.commit()
    session.refresh(row)
    return SaveOutcome("saved", base_version + 1)


def _review_event(row: RowRecord, user: User, version: int, now: datetime, *, reviewed: bool = True) -> Event:
    kind = "review" if reviewed else "unreview"
    return Event(
        kind=kind,
        segment_pk=row.segment_pk,
        row_id=row.id,
        user_id=user.id,
        created_at=now,
        detail={"version": version},
    )


def _update_at(session: Session, row_id: int, version: int, values: dict[str, Any]) -> bool:
    """Apply ``values`` only if the row is still at ``version`` (the optimistic lock); roll back if not."""
    result = session.execute(
        update(RowRecord)
        .where(RowRecord.id == row_id, RowRecord.version == version)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        session.rollback()
        return False
    return True


def _conflict(
    session: Session, row_id: int, base_version: int, new: dict[str, Any], user: User
) -> SaveOutcome:
    current = session.get(RowRecord, row_id, populate_existing=True)
    assert current is not None
    conflict = Conflict(
        row_id=row_id,
        user_id=user.id,
        base_version=base_version,
        current_version=current.version,
        data=new,
        resolved=False,
    )
    session.add(conflict)
    session.commit()
    return SaveOutcome("conflict", current.version, conflict.id)


def set_reviewed(
    session: Session, row: RowRecord, base_version: int, user: User, *, reviewed: bool
) -> SaveOutcome:
    """Mark the row (un)reviewed, provided nobody saved it since ``base_version`` was shown."""
    now = utcnow()
    values: dict[str, Any] = {
        "reviewed": reviewed,
        "reviewed_by_id": user.id if reviewed else None,
        "reviewed_at": now if reviewed else None,
    }
    if not _update_at(session, row.id, base_version, values):
        current = session.get(RowRecord, row.id, populate_existing=True)
        return SaveOutcome("conflict", current.version if current else base_version)
    if reviewed:
        save_review(session, row, user, row.data, commit=False, event=False)
    else:
        withdraw_reviews(session, row.id)
    session.add(_review_event(row, user, base_version, now, reviewed=reviewed))
    session.commit()
    session.refresh(row)
    return SaveOutcome("saved", row.version)


def discard(session: Session, segment: Segment, reason: str, note: str, user: User) -> None:
    if reason not in DISCARD_REASONS:
        raise ValueError(f"unknown discard reason {reason!r}")
    now = utcnow()
    segment.discarded, segment.discard_reason, segment.discard_note = True, reason, note or None
    segment.discarded_by_id, segment.discarded_at = user.id, now
    session.add(
        Event(
            kind="discard",
            segment_pk=segment.id,
            user_id=user.id,
            created_at=now,
            detail={"reason": reason, "note": note},
        )
    )
    session.commit()


def restore(session: Session, segment: Segment, user: User) -> None:
    """Undo a discard (the discard stays in the segment's history)."""
    previous = {"reason": segment.discard_reason, "note": segment.discard_note}
    segment.discarded, segment.discard_reason, segment.discard_note = False, None, None
    segment.discarded_by_id, segment.discarded_at = None, None
    session.add(Event(kind="restore", segment_pk=segment.id, user_id=user.id, detail={"undid": previous}))
    session.commit()


def add_comment(session: Session, segment: Segment, row: RowRecord | None, text: str, user: User) -> None:
    session.add(Comment(segment_pk=segment.id, row_id=row.id if row else None, user_id=user.id, text=text))
    session.commit()


def open_conflicts(session: Session, row_id: int, user: User) -> list[Conflict]:
    return list(
        session.scalars(
            select(Conflict)
            .where(Conflict.row_id == row_id, Conflict.user_id == user.id, Conflict.resolved.is_(False))
            .order_by(Conflict.id)
        )
    )
