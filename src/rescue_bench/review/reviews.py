"""Independent reviews of rows, their resolution, adjudication and per-annotator queues.

Every annotator's values for a row are their own :class:`~rescue_bench.review.db.Review`. A row is
*resolved* when it has at least the project's number of (active) reviews and they all hold the same values
(*agreed*), or when an adjudicator decided its value (*adjudicated*; the newest decision counts). Otherwise it
is *pending* (reviews missing) or *disputed* (reviews differ). Its released value is the agreed or
adjudicated one, never a value nobody approved.

In a single-review project (``reviews_per_row = 1``) the web flow stays the shared-value one: marking a row
reviewed records the reviewer's review of the row's current values, and editing it afterwards (or marking it
not reviewed) withdraws that review, so the row must be reviewed again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from rescue_bench.review.db import (
    Adjudication,
    Assignment,
    Event,
    Review,
    RowRecord,
    Segment,
    User,
    data_hash,
    utcnow,
)
from rescue_bench.review.settings import ProjectSettings

RowState = Literal["pending", "agreed", "disputed", "adjudicated"]
RESOLVED: frozenset[str] = frozenset({"agreed", "adjudicated"})


def whole_intensities(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every whole-number intensity written as an integer (``6.0`` -> ``6``), as the release
    writes them; everything else as it was.

    >>> whole_intensities({"internal_emotion": [{"intensity": 6.0}, {"intensity": 6.5}, {"intensity": "7"}]})
    {'internal_emotion': [{'intensity': 6}, {'intensity': 6.5}, {'intensity': '7'}]}
    """
    emotions = data.get("internal_emotion")
    if not isinstance(emotions, list):
        return data
    fixed = [
        {**item, "intensity": int(item["intensity"])}
        if isinstance(item, dict)
        and isinstance(item.get("intensity"), float)
        and item["intensity"].is_integer()
        else item
        for item in emotions
    ]
    return {**data, "internal_emotion": fixed}


@dataclass(frozen=True, slots=True)
class RowStatus:
    row_id: int
    state: RowState
    value: dict[str, Any] | None
    """The released value (agreed or adjudicated), ``None`` while unresolved."""
    reviews: tuple[Review, ...]
    adjudication: Adjudication | None
    needed: int

    @property
    def resolved(self) -> bool:
        return self.state in RESOLVED

    @property
    def reason(self) -> str:
        """Why the row is not resolved (empty when it is)."""
        if self.state == "pending":
            return f"{len(self.reviews)} of {self.needed} review(s)"
        if self.state == "disputed":
            return f"{len(self.reviews)} reviews disagree, not adjudicated"
        return ""


def row_status(
    needed: int, row_id: int, reviews: Sequence[Review], adjudication: Adjudication | None
) -> RowStatus:
    """The state of one row from its active reviews and its newest adjudication."""
    ordered = tuple(sorted(reviews, key=lambda r: r.id))
    if adjudication is not None:
        return RowStatus(row_id, "adjudicated", adjudication.data, ordered, adjudication, needed)
    if len(ordered) < needed:
        return RowStatus(row_id, "pending", None, ordered, None, needed)
    first = ordered[0]
    if all(r.data_hash == first.data_hash for r in ordered[1:]):  # as the aggregate of resolved_rows
        return RowStatus(row_id, "agreed", first.data, ordered, None, needed)
    return RowStatus(row_id, "disputed", None, ordered, None, needed)


def statuses(session: Session, settings: ProjectSettings, row_ids: Iterable[int]) -> dict[int, RowStatus]:
    """The status of each row of ``row_ids``, in three queries."""
    ids = list(row_ids)
    reviews: dict[int, list[Review]] = defaultdict(list)
    latest: dict[int, Adjudication] = {}
    for start in range(0, len(ids), 5000):  # keep the IN lists of a big store within the drivers' limits
        chunk = ids[start : start + 5000]
        found = select(Review).where(Review.row_id.in_(chunk), Review.active.is_(True))
        for review in session.scalars(found):
            reviews[review.row_id].append(review)
        decided = select(Adjudication).where(Adjudication.row_id.in_(chunk)).order_by(Adjudication.id)
        for adjudication in session.scalars(decided):
            latest[adjudication.row_id] = adjudication  # ordered by id: the newest wins
    return {i: row_status(settings.reviews_per_row, i, reviews[i], latest.get(i)) for i in ids}


def resolved_rows(session: Session, settings: ProjectSettings, segment_ids: Sequence[int]) -> dict[int, int]:
    """Resolved rows per segment, from aggregates only (reviews agree when their data hashes do)."""
    agreed = (
        select(Review.row_id)
        .where(Review.active.is_(True))
        .group_by(Review.row_id)
        .having(func.count() >= settings.reviews_per_row, func.count(func.distinct(Review.data_hash)) == 1)
    )
    decided = select(Adjudication.row_id)
    stmt = (
        select(RowRecord.segment_pk, func.count())
        .where(RowRecord.segment_pk.in_(segment_ids), RowRecord.id.in_(agreed) | RowRecord.id.in_(decided))
        .group_by(RowRecord.segment_pk)
    )
    return {pk: int(n) for pk, n in session.execute(stmt)}


def segment_statuses(session: Session, settings: ProjectSettings, segment: Segment) -> list[RowStatus]:
    rows = sorted(segment.rows, key=lambda r: r.row_index)
    found = statuses(session, settings, [r.id for r in rows])
    return [found[r.id] for r in rows]


# -- saving --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    status: Literal["saved", "unchanged", "conflict"]
    version: int


def own_review(session: Session, row: RowRecord, user: User) -> Review | None:
    return session.scalars(select(Review).where(Review.row_id == row.id, Review.user_id == user.id)).first()


def save_review(
    session: Session,
    row: RowRecord,
    user: User,
    data: dict[str, Any],
    *,
    base_version: int | None = None,
    source: str = "web",
    commit: bool = True,
    event: bool = True,
    known: dict[int, Review] | None = None,
) -> ReviewOutcome:
    """Record ``data`` as ``user``'s review of ``row``.

    ``base_version`` is the version of the user's review the edit started from (0 when they had none): a
    save from an older page (another tab of the same user) is refused as a conflict. ``None`` skips the check
    (an import). ``event=False`` when the caller records the audit event itself. ``known``: all the user's
    reviews by row id, when the caller has them (an import: no query per row).
    """
    data = whole_intensities(data)
    review = known.get(row.id) if known is not None else own_review(session, row, user)
    current = review.version if review is not None else 0
    if base_version is not None and base_version != current:
        return ReviewOutcome("conflict", current)
    now = utcnow()
    if review is None:
        review = Review(
            row_id=row.id,
            user_id=user.id,
            data=data,
            data_hash=data_hash(data),
            version=1,
            active=True,
            source=source,
        )
        review.created_at = review.updated_at = now
        session.add(review)
    elif review.data_hash == data_hash(data) and review.active:
        return ReviewOutcome("unchanged", review.version)
    else:
        review.data, review.data_hash, review.active = data, data_hash(data), True
        review.source, review.updated_at = source, now
        review.version += 1
    if event:
        detail = {"review_version": review.version, "source": source}
        session.add(
            Event(
                kind="review",
                segment_pk=row.segment_pk,
                row_id=row.id,
                user_id=user.id,
                created_at=now,
                detail=detail,
            )
        )
    if commit:
        session.commit()
    return ReviewOutcome("saved", review.version)


def withdraw_reviews(session: Session, row_id: int) -> None:
    """Withdraw the row's active reviews (its values changed under them); the caller commits."""
    for review in session.scalars(select(Review).where(Review.row_id == row_id, Review.active.is_(True))):
        review.active = False
        review.updated_at = utcnow()


def adjudicate(
    session: Session, row: RowRecord, user: User, data: dict[str, Any], picked: Review | None = None
) -> Adjudication:
    """Record ``user``'s decision of ``row``'s final value (a review picked as it is, or an edited value)."""
    decision = Adjudication(
        row_id=row.id,
        user_id=user.id,
        data=whole_intensities(data),
        picked_review_id=picked.id if picked else None,
    )
    session.add(decision)
    session.flush()
    detail = {"adjudication": decision.id, "picked_review": decision.picked_review_id}
    session.add(
        Event(kind="adjudicate", segment_pk=row.segment_pk, row_id=row.id, user_id=user.id, detail=detail)
    )
    session.commit()
    return decision


# -- queues and assignments ----------------------------------------------------------------------------------


def open_to(user: User) -> Any:
    """Segments ``user`` may review: not discarded, and unassigned or assigned to them."""
    assigned = exists().where(Assignment.segment_pk == Segment.id)
    mine = exists().where(Assignment.segment_pk == Segment.id, Assignment.user_id == user.id)
    return Segment.discarded.is_(False) & (~assigned | mine)


def next_row(session: Session, settings: ProjectSettings, user: User) -> RowRecord | None:
    """The first row (by group, segment, row) that still needs a review and that ``user`` has not reviewed."""
    active = Review.row_id == RowRecord.id, Review.active.is_(True)
    reviewed_by_me = exists().where(*active, Review.user_id == user.id)
    count = select(func.count()).select_from(Review).where(*active).scalar_subquery()
    stmt = (
        select(RowRecord)
        .join(Segment, RowRecord.segment_pk == Segment.id)
        .where(open_to(user), ~reviewed_by_me, count < settings.reviews_per_row)
        .where(~exists().where(Adjudication.row_id == RowRecord.id))
        .order_by(Segment.group_name, Segment.segment_id, RowRecord.row_index)
        .limit(1)
    )
    return session.scalars(stmt).first()


def last_touched(session: Session, user: User) -> RowRecord | None:
    """The row ``user`` last reviewed or saved ("continue where I left off")."""
    event = session.scalars(
        select(Event)
        .where(Event.user_id == user.id, Event.row_id.is_not(None))
        .order_by(Event.id.desc())
        .limit(1)
    ).first()
    return session.get(RowRecord, event.row_id) if event is not None and event.row_id is not None else None


def assign(session: Session, segments: Sequence[Segment], user: User) -> int:
    """Give ``segments`` to ``user`` (already given ones are kept); the number newly assigned."""
    have = set(session.scalars(select(Assignment.segment_pk).where(Assignment.user_id == user.id)))
    added = 0
    for segment in segments:
        if segment.id not in have:
            session.add(Assignment(segment_pk=segment.id, user_id=user.id))
            have.add(segment.id)
            added += 1
    session.commit()
    return added


def assignees(session: Session, segment: Segment) -> list[str]:
    stmt = (
        select(User.name)
        .join(Assignment, Assignment.user_id == User.id)
        .where(Assignment.segment_pk == segment.id)
    )
    return sorted(session.scalars(stmt))


def disputed_rows(session: Session, settings: ProjectSettings) -> list[tuple[RowRecord, RowStatus]]:
    """Rows of active segments whose reviews disagree and that nobody adjudicated, in reading order."""
    several = (
        select(Review.row_id).where(Review.active.is_(True)).group_by(Review.row_id).having(func.count() >= 2)
    )
    stmt = (
        select(RowRecord)
        .join(Segment, RowRecord.segment_pk == Segment.id)
        .where(Segment.discarded.is_(False), RowRecord.id.in_(several))
        .order_by(Segment.group_name, Segment.segment_id, RowRecord.row_index)
    )
    rows = list(session.scalars(stmt))
    found = statuses(session, settings, [r.id for r in rows])
    return [(r, found[r.id]) for r in rows if found[r.id].state == "disputed"]
