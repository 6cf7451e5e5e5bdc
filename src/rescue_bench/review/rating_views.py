"""Rating pages of the judge-calibration study: model output next to gold, a 1-5 score, nothing else."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from rescue_bench.review import ratings
from rescue_bench.review.db import RatingItem
from rescue_bench.review.web import (
    DB,
    CheckedForm,
    CurrentUser,
    NotFound,
    Pk,
    one,
    redirect,
    render,
)
from rescue_bench.tasks import TASK_NAMES, task_info

router = APIRouter(prefix="/ratings")

SCALE = (
    (1, "Unrelated or contradictory"),
    (2, "Mostly different"),
    (3, "Partly the same"),
    (4, "Mostly the same"),
    (5, "Same meaning"),
)


def title(task: str) -> str:
    """The page heading: the judged task's human-readable name (the task's name for any other task)."""
    info = task_info(task) if task in TASK_NAMES else None
    return info.judge.title if info is not None and info.judge is not None else task.upper()


@router.get("")
def next_item(request: Request, user: CurrentUser, session: DB) -> Response:
    item = ratings.next_unrated(session, user)
    if item is not None:
        return redirect(f"/ratings/{item.id}")
    mine, total = ratings.counts(session, user)
    return render(request, "rating_done.html", user=user, mine=mine, total=total)


@router.get("/{pk}")
def item_page(request: Request, pk: Pk, user: CurrentUser, session: DB) -> Response:
    item = session.get(RatingItem, pk)
    if item is None:
        raise NotFound()
    mine, total = ratings.counts(session, user)
    current = ratings.rating_of(session, item, user)
    return render(
        request,
        "rating.html",
        user=user,
        item=item,
        title=title(item.task),
        scale=SCALE,
        mine=mine,
        total=total,
        current=current.score if current else None,
        error=None,
    )


@router.post("/{pk}")
def rate(pk: Pk, form: CheckedForm, user: CurrentUser, session: DB) -> Response:
    item = session.get(RatingItem, pk)
    if item is None:
        raise NotFound()
    score = one(form, "score")
    if score not in {"1", "2", "3", "4", "5"}:
        return redirect(f"/ratings/{pk}")
    ratings.rate(session, item, user, int(score))
    return redirect("/ratings")
