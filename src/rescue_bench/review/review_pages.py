"""Pages of independent review: the per-annotator queue, the adjudication pages and the agreement page, and
what the row view needs to edit an annotator's own review.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue_bench.review import forms, reviews
from rescue_bench.review.agreement import agreement
from rescue_bench.review.db import Adjudication, Review, RowRecord, User
from rescue_bench.review.media import clip_root_of
from rescue_bench.review.settings import ProjectSettings, project_settings
from rescue_bench.review.web import (
    DB,
    CheckedForm,
    CurrentUser,
    EditorForm,
    Forbidden,
    NotFound,
    Pk,
    form_id,
    one,
    redirect,
    render,
    state,
)

router = APIRouter()

Button = tuple[str, str, str]
"""(action, label, accesskey) of an editor button."""

SHARED_BUTTONS: tuple[Button, ...] = (
    ("save", "Save", "s"),
    ("save_review", "Save and mark reviewed", "r"),
    ("save_review_next", "Save, mark reviewed and go to the next row", "n"),
)
OWN_REVIEW_BUTTONS: tuple[Button, ...] = (
    ("save_review", "Save my review", "r"),
    ("save_review_next", "Save my review and go to the next row", "n"),
)
ADJUDICATE_BUTTONS: tuple[Button, ...] = (("adjudicate", "Decide this value", "d"),)


def own_review_context(
    session: Session, project: ProjectSettings, row: RowRecord, user: User
) -> dict[str, Any]:
    """The row view's extra context in an independent-review project: the user's own review (what the editor
    starts from), and the others' reviews unless the project is blind."""
    mine = reviews.own_review(session, row, user)
    found = reviews.statuses(session, project, [row.id])[row.id]
    others = [] if project.is_blind else [r for r in found.reviews if r.user_id != user.id]
    return {
        "independent": True,
        "blind": project.is_blind,
        "my_review": mine if mine is not None and mine.active else None,
        "row_status": found,
        "other_reviews": others,
        "base_version": mine.version if mine is not None else 0,
        "buttons": OWN_REVIEW_BUTTONS,
    }


def own_review_start(session: Session, row: RowRecord, user: User) -> dict[str, Any]:
    """What the editor shows first: the user's own review, else the row's draft."""
    mine = reviews.own_review(session, row, user)
    return mine.data if mine is not None else row.data


def own_review_base(session: Session, row: RowRecord, user: User, base_version: int) -> dict[str, Any] | None:
    """The values an edit of the user's review started from, ``None`` when the page was stale."""
    mine = reviews.own_review(session, row, user)
    if mine is None:
        return row.data if base_version == 0 else None
    return mine.data if mine.version == base_version else None


@router.get("/next")
def next_row(user: CurrentUser, session: DB) -> Response:
    """The user's next row to review, or the dashboard when their queue is empty."""
    found = reviews.next_row(session, project_settings(session), user)
    return redirect(f"/rows/{found.id}" if found is not None else "/?notice=queue_empty")


# -- adjudication --------------------------------------------------------------------------------------------


def _adjudicator(user: User) -> User:
    if not user.can_adjudicate:
        raise Forbidden()
    return user


@router.get("/adjudicate")
def disputed(request: Request, user: CurrentUser, session: DB) -> Response:
    _adjudicator(user)
    found = reviews.disputed_rows(session, project_settings(session))
    decided = session.scalars(select(Adjudication).order_by(Adjudication.id.desc()).limit(50)).all()
    return render(request, "adjudicate_list.html", user=user, disputed=found, decided=decided)


def _adjudication_page(
    request: Request, session: Session, row: RowRecord, user: User, start: dict[str, Any], errors: list[str]
) -> Response:
    status = reviews.statuses(session, project_settings(session), [row.id])[row.id]
    segment = row.segment
    clip_root = clip_root_of(state(request).settings.media_roots, segment.source_path, row.clip_path)
    return render(
        request,
        "adjudicate.html",
        status_code=400 if errors else 200,
        user=user,
        row=row,
        segment=segment,
        row_status=status,
        clip_ok=clip_root is not None,
        clip_query=f"?root={clip_root}" if clip_root else "",
        state=forms.state_from_row(start),
        errors=errors,
        base_version=0,
        conflict_id=None,
        editor_action=f"/adjudicate/{row.id}",
        buttons=ADJUDICATE_BUTTONS,
        scalars=forms.SCALARS,
        lists=forms.LISTS,
        choices=forms.choices(forms.as_scenario(segment.scenario), segment.participants),
        history=session.scalars(
            select(Adjudication).where(Adjudication.row_id == row.id).order_by(Adjudication.id)
        ).all(),
    )


def _start(session: Session, row: RowRecord) -> dict[str, Any]:
    """What the adjudication editor starts from: the decided value, else the first review, else the draft."""
    status = reviews.statuses(session, project_settings(session), [row.id])[row.id]
    return status.value or (status.reviews[0].data if status.reviews else row.data)


@router.get("/adjudicate/{pk}")
def adjudication_page(request: Request, pk: Pk, user: CurrentUser, session: DB) -> Response:
    _adjudicator(user)
    row = session.get(RowRecord, pk)
    if row is None:
        raise NotFound()
    return _adjudication_page(request, session, row, user, _start(session, row), [])


@router.post("/adjudicate/{pk}/pick")
def pick(pk: Pk, form: CheckedForm, user: CurrentUser, session: DB) -> Response:
    """Take one review's values as the row's final value."""
    _adjudicator(user)
    review = session.get(Review, form_id(form, "review_id") or 0)
    row = session.get(RowRecord, pk)
    if row is None or review is None or review.row_id != row.id or not review.active:
        raise NotFound()
    reviews.adjudicate(session, row, user, review.data, review)
    return redirect("/adjudicate?notice=decided")


@router.post("/adjudicate/{pk}")
def decide(request: Request, pk: Pk, posted_form: EditorForm, user: CurrentUser, session: DB) -> Response:
    """Decide an edited value (the editor posts here)."""
    _adjudicator(user)
    row = session.get(RowRecord, pk)
    if row is None:
        raise NotFound()
    posted = forms.state_from_form(posted_form.fields)
    action = one(posted_form.fields, "action")
    start = _start(session, row)
    if posted_form.too_large:
        return _adjudication_page(request, session, row, user, start, posted_form.too_large)
    if action != "adjudicate":  # adding or removing list entries is for the row view; nothing is decided
        return _adjudication_page(
            request, session, row, user, start, ["Nothing decided: use Decide this value."]
        )
    new, errors = forms.row_from_state(
        posted, start, forms.as_scenario(row.segment.scenario), row.segment.participants
    )
    if errors:
        return _adjudication_page(request, session, row, user, start, errors)
    reviews.adjudicate(session, row, user, new)
    return redirect("/adjudicate?notice=decided")


@router.get("/agreement")
def agreement_page(request: Request, user: CurrentUser, session: DB) -> Response:
    results = agreement(session)
    return render(request, "agreement.html", user=user, results=results, project=project_settings(session))
