"""Admin pages: accounts and the export download."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue_bench.errors import BenchError
from rescue_bench.review import export, store
from rescue_bench.review.auth import ROLES, check_new_user, create_user, hash_password
from rescue_bench.review.db import User
from rescue_bench.review.web import (
    DB,
    AdminUser,
    CheckedForm,
    NotFound,
    Pk,
    one,
    redirect,
    render,
    state,
)

router = APIRouter(prefix="/admin")


def _users_page(
    request: Request,
    session: Session,
    user: User,
    error: str | None = None,
    notice: str | None = None,
    status: int = 200,
) -> Response:
    users = session.scalars(select(User).order_by(User.name)).all()
    _records, result = export.verified_records(session)
    return render(
        request,
        "admin.html",
        status_code=status,
        user=user,
        users=users,
        roles=ROLES,
        error=error,
        notice=notice,
        export=result,
        progress=store.progress(session),
    )


@router.get("")
def admin_page(request: Request, user: AdminUser, session: DB, done: str = "") -> Response:
    notice = {"added": "User added.", "updated": "User updated."}.get(done)
    return _users_page(request, session, user, notice=notice)


@router.post("/users")
def add_user(request: Request, form: CheckedForm, user: AdminUser, session: DB) -> Response:
    try:
        create_user(
            session,
            one(form, "name").strip(),
            one(form, "role"),
            one(form, "password"),
            state(request).settings.hasher,
        )
    except BenchError as exc:
        return _users_page(request, session, user, error=str(exc), status=400)
    return redirect("/admin?done=added")


@router.post("/users/{pk}")
def change_user(request: Request, pk: Pk, form: CheckedForm, user: AdminUser, session: DB) -> Response:
    target = session.get(User, pk)
    if target is None:
        raise NotFound()
    action = one(form, "action")
    if target.id == user.id and action in ("deactivate", "role"):
        return _users_page(request, session, user, error="You cannot lock yourself out.", status=400)
    if action == "deactivate":
        target.active = False
    elif action == "activate":
        target.active = True
    elif action == "role" and one(form, "role") in ROLES:
        target.role = one(form, "role")
    elif action == "password":
        try:
            check_new_user(target.name, target.role, one(form, "password"))
        except BenchError as exc:
            return _users_page(request, session, user, error=str(exc), status=400)
        target.password_hash = hash_password(one(form, "password"), state(request).settings.hasher)
    else:
        raise NotFound()
    target.session_epoch += 1  # any change to an account ends its open sessions
    session.commit()
    return redirect("/admin?done=updated")


@router.get("/export")
def download(request: Request, user: AdminUser, session: DB) -> Response:
    try:
        text, _result = export.export_text(session)
    except BenchError as exc:
        return _users_page(request, session, user, error=str(exc), status=409)
    return Response(
        text,
        media_type="application/x-ndjson",
        headers={"Content-Disposition": 'attachment; filename="verified.jsonl"'},
    )


__all__ = ["router"]
