"""The review app's central store: SQLAlchemy models, engine set-up and schema migrations.

Tables:

* ``users``: accounts with an argon2 hash, a role and a session epoch (bumping it ends every session of the
  user);
* ``segments`` and ``rows``: the work, one row per annotated turn with its current release-format data, the
  draft it started from, its clip and its review status; ``rows.version`` is the optimistic-lock counter;
* ``row_versions``: every saved state of a row (who, when, before and after), version 1 being the loaded
  draft;
* ``conflicts``: edits refused because someone else saved first, kept so that nothing typed is lost;
* ``comments`` and ``events`` (reviews, discards, restores): the audit trail;
* ``reviews``: each annotator's own values for a row (one per user and row; ``version`` counts their saves),
  the independent reviews that decide a row when a project asks for more than one;
* ``adjudications``: every final value an adjudicator picked or edited for a row whose reviews disagree (the
  newest one counts; none is ever deleted);
* ``assignments``: which annotators an admin gave a segment to (a segment with none is open to everyone);
* ``rating_items`` and ``ratings``: the judge-calibration study;
* ``review_meta``: key/value settings such as the cookie-signing secret (never shown in a page).

The schema is created and upgraded by Alembic (``migrations/``), never by ``create_all``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    select,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship, sessionmaker

from rescue_bench.errors import ConfigError
from rescue_bench.redaction import scrub_text
from rescue_bench.review.dbfile import secure_sqlite_file

DEFAULT_DB_URL = "sqlite:///review.db"


def utcnow() -> datetime:
    return datetime.now(UTC)


def data_hash(data: Any) -> str:
    """SHA-256 of ``data`` as canonical JSON (keys sorted, no spaces): equal values, equal hashes.

    >>> data_hash({"b": 1, "a": [6]}) == data_hash({"a": [6], "b": 1}) != data_hash({"a": [6.0], "b": 1})
    True
    """
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JSON,
        list[Any]: JSON,
        datetime: DateTime(timezone=True),
    }


class Meta(Base):
    __tablename__ = "review_meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    password_hash: Mapped[str] = mapped_column(String(255))
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    session_epoch: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def can_adjudicate(self) -> bool:
        return self.role in ("admin", "adjudicator")


class Segment(Base):
    __tablename__ = "segments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    segment_id: Mapped[str] = mapped_column(String(255), unique=True)
    sample_id: Mapped[str] = mapped_column(String(255), unique=True)
    group_name: Mapped[str] = mapped_column(String(255), index=True)
    scenario: Mapped[str] = mapped_column(String(16))
    participants: Mapped[list[Any]] = mapped_column(JSON)
    source_file: Mapped[str | None] = mapped_column(Text, nullable=True)
    source_path: Mapped[str] = mapped_column(Text)
    """The file the segment came from (manifest or JSONL): the dashboard counts these as prepared files."""
    model: Mapped[str | None] = mapped_column(String(255), nullable=True)
    draft_notes: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    """The draft's overall status and segment-level rule violations, shown to the reviewers."""
    start_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    end_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    discarded: Mapped[bool] = mapped_column(Boolean, default=False)
    discard_reason: Mapped[str | None] = mapped_column(String(64), nullable=True)
    discard_note: Mapped[str | None] = mapped_column(Text, nullable=True)
    discarded_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    discarded_at: Mapped[datetime | None] = mapped_column(nullable=True)
    loaded_at: Mapped[datetime] = mapped_column(default=utcnow)

    rows: Mapped[list[RowRecord]] = relationship(back_populates="segment", order_by="RowRecord.row_index")
    discarded_by: Mapped[User | None] = relationship()


class RowRecord(Base):
    __tablename__ = "rows"
    __table_args__ = (UniqueConstraint("segment_pk", "row_index"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    segment_pk: Mapped[int] = mapped_column(ForeignKey("segments.id"), index=True)
    row_index: Mapped[int] = mapped_column(Integer)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    """The row's current release-format dict."""
    draft: Mapped[dict[str, Any]] = mapped_column(JSON)
    """The row as loaded."""
    subtitle_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    clip_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    duration_sec: Mapped[float | None] = mapped_column(Float, nullable=True)
    violations: Mapped[list[Any]] = mapped_column(JSON, default=list)
    version: Mapped[int] = mapped_column(Integer, default=1)
    edited: Mapped[bool] = mapped_column(Boolean, default=False)
    """``data != draft``, kept as a column so that progress figures are one aggregate query."""
    reviewed: Mapped[bool] = mapped_column(Boolean, default=False)
    reviewed_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    reviewed_at: Mapped[datetime | None] = mapped_column(nullable=True)
    updated_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    updated_at: Mapped[datetime | None] = mapped_column(nullable=True)

    segment: Mapped[Segment] = relationship(back_populates="rows")
    reviewed_by: Mapped[User | None] = relationship(foreign_keys=[reviewed_by_id])
    updated_by: Mapped[User | None] = relationship(foreign_keys=[updated_by_id])


class RowVersion(Base):
    __tablename__ = "row_versions"
    __table_args__ = (UniqueConstraint("row_id", "version"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    row_id: Mapped[int] = mapped_column(ForeignKey("rows.id"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(16))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    before: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    after: Mapped[dict[str, Any]] = mapped_column(JSON)

    user: Mapped[User | None] = relationship()


class Conflict(Base):
    __tablename__ = "conflicts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    row_id: Mapped[int] = mapped_column(ForeignKey("rows.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    base_version: Mapped[int] = mapped_column(Integer)
    """The version the refused edit started from."""
    current_version: Mapped[int] = mapped_column(Integer)
    """The version that was current when the edit was refused."""
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    """The refused edit, in full."""
    resolved: Mapped[bool] = mapped_column(Boolean, default=False)

    user: Mapped[User] = relationship()


class Comment(Base):
    __tablename__ = "comments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    segment_pk: Mapped[int] = mapped_column(ForeignKey("segments.id"), index=True)
    row_id: Mapped[int | None] = mapped_column(ForeignKey("rows.id"), nullable=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    text: Mapped[str] = mapped_column(Text)

    user: Mapped[User] = relationship()
    row: Mapped[RowRecord | None] = relationship()


class Event(Base):
    """An audit entry: ``review``, ``unreview``, ``discard`` or ``restore``."""

    __tablename__ = "events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    segment_pk: Mapped[int] = mapped_column(ForeignKey("segments.id"), index=True)
    row_id: Mapped[int | None] = mapped_column(ForeignKey("rows.id"), nullable=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    user: Mapped[User] = relationship()


class Review(Base):
    """One annotator's independent review of a row: their values, as last saved."""

    __tablename__ = "reviews"
    __table_args__ = (UniqueConstraint("row_id", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    row_id: Mapped[int] = mapped_column(ForeignKey("rows.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    data_hash: Mapped[str] = mapped_column(String(64))
    """SHA-256 of ``data`` as canonical JSON (:func:`data_hash`): whether reviews agree is one aggregate
    query."""
    version: Mapped[int] = mapped_column(Integer, default=1)
    """1 for the first save, one more for each later save that changed the values."""
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    """False once withdrawn (the row was marked not reviewed, or edited after it, in single-review
    projects)."""
    source: Mapped[str] = mapped_column(String(16), default="web")
    """``web`` or ``import`` (``review import-reviews``)."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

    user: Mapped[User] = relationship()
    row: Mapped[RowRecord] = relationship()


class Adjudication(Base):
    """A final value decided for a row whose reviews disagree; the newest of a row counts."""

    __tablename__ = "adjudications"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    row_id: Mapped[int] = mapped_column(ForeignKey("rows.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    picked_review_id: Mapped[int | None] = mapped_column(ForeignKey("reviews.id"), nullable=True)
    """The review taken as it was, or ``None`` when the adjudicator edited the value."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    user: Mapped[User] = relationship()


class Assignment(Base):
    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("segment_pk", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    segment_pk: Mapped[int] = mapped_column(ForeignKey("segments.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    user: Mapped[User] = relationship()


class RatingItem(Base):
    __tablename__ = "rating_items"
    __table_args__ = (UniqueConstraint("run_dir", "instance_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_dir: Mapped[str] = mapped_column(Text)
    """Where the prediction came from; never shown to raters (a run's name often names its model)."""
    instance_id: Mapped[str] = mapped_column(String(512))
    task: Mapped[str] = mapped_column(String(8))
    scenario: Mapped[str | None] = mapped_column(String(16), nullable=True)
    gold: Mapped[Any] = mapped_column(JSON, nullable=True)
    prediction: Mapped[Any] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Rating(Base):
    __tablename__ = "ratings"
    __table_args__ = (UniqueConstraint("item_id", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("rating_items.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    score: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

    user: Mapped[User] = relationship()
    item: Mapped[RatingItem] = relationship()


# -- engine and migrations -----------------------------------------------------------------------------------


def normalize_url(url: str) -> str:
    """Use the psycopg 3 driver for PostgreSQL URLs; reject anything but SQLite and PostgreSQL.

    >>> normalize_url("postgresql://u@127.0.0.1:5432/review")
    'postgresql+psycopg://u@127.0.0.1:5432/review'
    >>> normalize_url("sqlite:///review.db")
    'sqlite:///review.db'
    """
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    if url.startswith(("sqlite:", "postgresql+psycopg:")):
        return url
    raise ConfigError(f"unsupported database URL {scrub_text(url)!r}: use sqlite:///FILE or postgresql://...")


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets foreign keys, WAL and a busy timeout for concurrent annotators."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 15})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision (idempotent)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def open_store(url: str, notice: Callable[[str], None] | None = None) -> sessionmaker[Session]:
    """Connect to ``url``, migrate it, and return a session factory (for the CLI and the app).

    A SQLite file is made owner-only first (see :mod:`rescue_bench.review.dbfile`). When other users could
    read it, its signing secret may have been copied, so a new one replaces it (every session ends) and
    ``notice`` is told.
    """
    check = secure_sqlite_file(url)
    engine = make_engine(url)
    try:
        migrate(engine)
    except DBAPIError as exc:  # unreachable server, or a file that is not a SQLite database
        engine.dispose()
        raise ConfigError(f"cannot open the review database {scrub_text(url)}: {exc.orig}") from None
    sessions = session_factory(engine)
    if check.exposed:
        with sessions() as session:
            _replace_secret(session)
        if notice is not None:
            notice(
                f"made the review database owner-only (mode 0600): {', '.join(check.exposed)}; other users "
                "could read its signing secret, so it was replaced and everyone must sign in again"
            )
    return sessions


def _replace_secret(session: Session) -> None:
    row = session.get(Meta, "secret_key")
    if row is not None:
        row.value = secrets.token_urlsafe(48)
        session.commit()


def secret_key(session: Session) -> str:
    """The cookie-signing secret, created on first use and kept in the database."""
    row = session.get(Meta, "secret_key")
    if row is not None:
        return row.value
    session.add(Meta(key="secret_key", value=secrets.token_urlsafe(48)))
    try:
        session.commit()
    except IntegrityError:  # another process created it first: use theirs
        session.rollback()
    stored = session.get(Meta, "secret_key")
    assert stored is not None
    return stored.value


def user_by_name(session: Session, name: str) -> User | None:
    return session.scalars(select(User).where(User.name == name)).first()
