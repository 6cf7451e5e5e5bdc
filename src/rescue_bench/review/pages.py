"""The annotator's pages: dashboard, segment picker, row list, row view with the editor, history and
conflicts.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue_bench.review import forms, review_pages, reviews, store
from rescue_bench.review.db import Comment, Conflict, Event, RowRecord, RowVersion, Segment, User
from rescue_bench.review.media import MediaNotFound, clip_root_of, media_response
from rescue_bench.review.settings import project_settings
from rescue_bench.review.web import (
    DB,
    CheckedForm,
    CurrentUser,
    EditorForm,
    NotFound,
    Pk,
    check_length,
    form_id,
    one,
    parse_id,
    redirect,
    render,
    state,
)

router = APIRouter()

COMMENT_LIMIT = 5000
DISCARD_NOTE_LIMIT = 2000

NOTICES = {
    "saved": "Saved.",
    "reviewed": "Saved and marked reviewed.",
    "unchanged": "Nothing changed, so nothing was saved.",
    "unreviewed": "Marked as not reviewed.",
    "discarded": "Segment discarded.",
    "restored": "Discard undone.",
    "commented": "Comment added.",
    "noreason": "Not discarded: choose one of the listed reasons.",
    "stale": "The row was changed by someone else after you opened it: here is the current version.",
    "own_review": "Your review is saved.",
    "queue_empty": "Your queue is empty: every row open to you has your review or enough reviews.",
    "decided": "Decision saved.",
}


def _get(session: Session, model: type[Any], pk: int) -> Any:
    found = session.get(model, pk)
    if found is None:
        raise NotFound()
    return found


@router.get("/")
def dashboard(request: Request, user: CurrentUser, session: DB, notice: str = "") -> Response:
    figures = store.progress(session)
    summaries = store.segment_summaries(session)
    by_group: dict[str, list[store.SegmentSummary]] = {}
    for summary in summaries:
        by_group.setdefault(summary.segment.group_name, []).append(summary)
    project = project_settings(session)
    return render(
        request,
        "dashboard.html",
        user=user,
        p=figures,
        groups=by_group,
        backend=state(request).backend,
        project=project,
        last_row=reviews.last_touched(session, user),
        notice=NOTICES.get(notice),
    )


@router.get("/segments")
def picker(request: Request, user: CurrentUser, session: DB, group: str = "", segment: str = "") -> Response:
    if segment.strip():
        chosen_pk = parse_id(segment.strip())
        if chosen_pk is None:  # as for /segments/abc: there is no such segment
            raise NotFound()
        return redirect(f"/segments/{chosen_pk}")
    names = store.groups(session)
    chosen = group if group in names else next(iter(names), "")
    summaries = store.segment_summaries(session, chosen) if chosen else []
    return render(request, "picker.html", user=user, groups=names, group=chosen, summaries=summaries)


@router.get("/segments/{pk}")
def segment_page(request: Request, pk: Pk, user: CurrentUser, session: DB, notice: str = "") -> Response:
    segment: Segment = _get(session, Segment, pk)
    comments = session.scalars(select(Comment).where(Comment.segment_pk == pk).order_by(Comment.id)).all()
    events = session.scalars(
        select(Event).where(Event.segment_pk == pk, Event.kind.in_(("discard", "restore"))).order_by(Event.id)
    ).all()
    return render(
        request,
        "segment.html",
        user=user,
        segment=segment,
        rows=segment.rows,
        statuses=reviews.statuses(session, project_settings(session), [r.id for r in segment.rows]),
        comments=comments,
        events=events,
        reasons=store.DISCARD_REASONS,
        notice=NOTICES.get(notice),
    )


@router.post("/segments/{pk}/discard")
def discard(pk: Pk, form: CheckedForm, user: CurrentUser, session: DB) -> Response:
    segment: Segment = _get(session, Segment, pk)
    reason = one(form, "reason")
    if reason not in store.DISCARD_REASONS:
        return redirect(f"/segments/{pk}?notice=noreason")
    note = check_length(form, "note", "note", DISCARD_NOTE_LIMIT)
    if not segment.discarded:
        store.discard(session, segment, reason, note, user)
    return redirect(f"/segments/{pk}?notice=discarded")


@router.post("/segments/{pk}/restore")
def restore(pk: Pk, form: CheckedForm, user: CurrentUser, session: DB) -> Response:
    segment: Segment = _get(session, Segment, pk)
    if segment.discarded:
        store.restore(session, segment, user)
    return redirect(f"/segments/{pk}?notice=restored")


@router.post("/segments/{pk}/comments")
def comment(pk: Pk, form: CheckedForm, user: CurrentUser, session: DB) -> Response:
    segment: Segment = _get(session, Segment, pk)
    text = check_length(form, "text", "comment", COMMENT_LIMIT)
    row_id = form_id(form, "row_id")
    row = session.get(RowRecord, row_id) if row_id is not None else None
    if row is not None and row.segment_pk != segment.id:
        raise NotFound()
    if text:
        store.add_comment(session, segment, row, text, user)
    back = f"/rows/{row.id}?notice=commented" if row else f"/segments/{pk}?notice=commented"
    return redirect(back)


# -- the row view --------------------------------------------------------------------------------------------


def _row_page(
    request: Request,
    session: Session,
    row: RowRecord,
    user: User,
    state_: forms.FormState,
    status: int | None = None,
    **extra: Any,
) -> Response:
    segment = row.segment
    siblings = [r.id for r in segment.rows]
    position = siblings.index(row.id)
    comments = session.scalars(select(Comment).where(Comment.row_id == row.id).order_by(Comment.id)).all()
    clip_root = clip_root_of(state(request).settings.media_roots, segment.source_path, row.clip_path)
    context: dict[str, Any] = {
        "user": user,
        "row": row,
        "segment": segment,
        "state": state_,
        "base_version": row.version,
        "conflict_id": None,
        "errors": [],
        "notice": None,
        "clip_ok": clip_root is not None,
        "clip_query": f"?root={clip_root}" if clip_root else "",
        "comments": comments,
        "prev_id": siblings[position - 1] if position > 0 else None,
        "next_id": siblings[position + 1] if position + 1 < len(siblings) else None,
        "conflicts": store.open_conflicts(session, row.id, user),
    }
    project = project_settings(session)
    if project.independent:
        context.update(review_pages.own_review_context(session, project, row, user))
    context.update(extra)
    return render(
        request,
        "row.html",
        status_code=status or (400 if context["errors"] else 200),
        **{**_editor_context(segment), **context},
    )


def _editor_context(segment: Segment) -> dict[str, Any]:
    return {
        "scalars": forms.SCALARS,
        "lists": forms.LISTS,
        "choices": forms.choices(forms.as_scenario(segment.scenario), segment.participants),
        "editor_action": None,
        "buttons": review_pages.SHARED_BUTTONS,
        "independent": False,
    }


@router.get("/rows/{pk}")
def row_page(request: Request, pk: Pk, user: CurrentUser, session: DB, notice: str = "") -> Response:
    row: RowRecord = _get(session, RowRecord, pk)
    start = row.data
    if project_settings(session).independent:
        start = review_pages.own_review_start(session, row, user)
    return _row_page(request, session, row, user, forms.state_from_row(start), notice=NOTICES.get(notice))


@router.post("/rows/{pk}")
def row_submit(request: Request, pk: Pk, posted_form: EditorForm, user: CurrentUser, session: DB) -> Response:
    row: RowRecord = _get(session, RowRecord, pk)
    form = posted_form.fields
    action = one(form, "action", "save")
    base_version = form_id(form, "base_version") or 0
    independent = project_settings(session).independent
    conflict = None if independent else _own_conflict(session, form_id(form, "conflict_id"), row, user)
    if independent:
        base = review_pages.own_review_base(session, row, user, base_version)
    else:
        base = conflict.data if conflict else store.data_at(session, row, base_version)
    posted = forms.state_from_form(form)
    keep = {"base_version": base_version, "conflict_id": conflict.id if conflict else None}
    if base is None:  # a forged or unknown version: start again from the current one
        return redirect(f"/rows/{pk}?notice=stale")
    if posted_form.too_large:  # shown again with the user's text, which is not saved
        return _row_page(
            request, session, row, user, posted, errors=posted_form.too_large, status=413, **keep
        )
    if action.startswith(("add:", "remove:")):
        return _row_page(request, session, row, user, _restructure(posted, action), **keep)
    new, errors = forms.row_from_state(
        posted, base, forms.as_scenario(row.segment.scenario), row.segment.participants
    )
    if errors:
        return _row_page(request, session, row, user, posted, errors=errors, **keep)
    go_on = action == "save_review_next"
    if independent:
        mine = reviews.save_review(session, row, user, new, base_version=base_version)
        if mine.status == "conflict":
            return redirect(f"/rows/{pk}?notice=stale")
        return redirect("/next" if go_on else f"/rows/{pk}?notice=own_review")
    mark = action in ("save_review", "save_review_next")
    outcome = store.save_row(session, row, base_version, new, user, review=mark)
    if outcome.status == "conflict":
        if conflict is not None:  # the new conflict holds this newer edit
            conflict.resolved = True
            session.commit()
        if outcome.conflict_id is None:
            return redirect(f"/rows/{pk}?notice=stale")
        return redirect(f"/conflicts/{outcome.conflict_id}")
    if conflict is not None:
        conflict.resolved = True
        session.commit()
    if go_on:
        return redirect("/next")
    notice = "reviewed" if mark else outcome.status
    return redirect(f"/rows/{pk}?notice={notice}")


def _own_conflict(session: Session, conflict_id: int | None, row: RowRecord, user: User) -> Conflict | None:
    if conflict_id is None:
        return None
    conflict = session.get(Conflict, conflict_id)
    if conflict is None or conflict.row_id != row.id or conflict.user_id != user.id:
        raise NotFound()
    return conflict


def _restructure(posted: forms.FormState, action: str) -> forms.FormState:
    verb, _, rest = action.partition(":")
    list_key, _, position = rest.partition(":")
    if list_key not in forms.LIST_KEYS:
        raise NotFound()
    if verb == "add":
        return forms.with_blank(posted, list_key)
    index = parse_id(position)
    return forms.without(posted, list_key, index) if index is not None else posted


@router.post("/rows/{pk}/review")
def review(pk: Pk, form: CheckedForm, user: CurrentUser, session: DB) -> Response:
    row: RowRecord = _get(session, RowRecord, pk)
    if project_settings(session).independent:  # each annotator submits their own review from the editor
        return redirect(f"/rows/{pk}")
    base = form_id(form, "base_version")
    reviewed = one(form, "reviewed") == "1"
    outcome = store.set_reviewed(session, row, -1 if base is None else base, user, reviewed=reviewed)
    if outcome.status == "conflict":
        return redirect(f"/rows/{pk}?notice=stale")
    return redirect(f"/rows/{pk}?notice={'reviewed' if reviewed else 'unreviewed'}")


@router.get("/rows/{pk}/history")
def history(request: Request, pk: Pk, user: CurrentUser, session: DB) -> Response:
    row: RowRecord = _get(session, RowRecord, pk)
    versions = session.scalars(
        select(RowVersion).where(RowVersion.row_id == pk).order_by(RowVersion.version.desc())
    )
    changes = [(v, forms.changed_fields(v.before, v.after)) for v in versions]
    events = session.scalars(select(Event).where(Event.row_id == pk).order_by(Event.id.desc())).all()
    conflicts = session.scalars(
        select(Conflict).where(Conflict.row_id == pk).order_by(Conflict.id.desc())
    ).all()
    return render(
        request, "history.html", user=user, row=row, changes=changes, events=events, conflicts=conflicts
    )


@router.get("/conflicts/{pk}")
def conflict_page(request: Request, pk: Pk, user: CurrentUser, session: DB) -> Response:
    conflict: Conflict = _get(session, Conflict, pk)
    if conflict.user_id != user.id:
        raise NotFound()
    row: RowRecord = _get(session, RowRecord, conflict.row_id)
    fields = forms.changed_fields(row.data, conflict.data)
    return render(
        request,
        "conflict.html",
        user=user,
        conflict=conflict,
        row=row,
        fields=fields,
        state=forms.state_from_row(conflict.data),
        base_version=row.version,
        conflict_id=conflict.id,
        errors=[],
        **_editor_context(row.segment),
    )


@router.post("/conflicts/{pk}/dismiss")
def dismiss_conflict(pk: Pk, form: CheckedForm, user: CurrentUser, session: DB) -> Response:
    conflict: Conflict = _get(session, Conflict, pk)
    if conflict.user_id != user.id:
        raise NotFound()
    conflict.resolved = True  # kept in the history; only hidden from the row view
    session.commit()
    return redirect(f"/rows/{conflict.row_id}")


@router.get("/media/{path:path}")
def media(request: Request, path: str, user: CurrentUser, root: int = 0) -> Response:
    roots = state(request).settings.media_roots
    if not 0 <= root < len(roots):
        raise NotFound()
    try:
        return media_response(roots[root], path)
    except (MediaNotFound, OSError):
        raise NotFound() from None
