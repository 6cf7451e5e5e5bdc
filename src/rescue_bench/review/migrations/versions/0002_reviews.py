"""Independent reviews, adjudications and segment assignments.

Revision ID: 0002
Revises: 0001
Create Date: 2025-02-01
"""

from __future__ import annotations

import hashlib
import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "reviews",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("row_id", sa.Integer(), sa.ForeignKey("rows.id"), nullable=False, index=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False, index=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("data_hash", sa.String(64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.UniqueConstraint("row_id", "user_id"),
    )
    op.create_table(
        "adjudications",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("row_id", sa.Integer(), sa.ForeignKey("rows.id"), nullable=False, index=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("picked_review_id", sa.Integer(), sa.ForeignKey("reviews.id"), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_table(
        "assignments",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("segment_pk", sa.Integer(), sa.ForeignKey("segments.id"), nullable=False, index=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False, index=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.UniqueConstraint("segment_pk", "user_id"),
    )
    _backfill_reviews()


def _backfill_reviews() -> None:
    """A row marked reviewed before this revision keeps counting as reviewed: its reviewer's review of the
    row's current values is recorded."""
    rows = sa.table(
        "rows",
        sa.column("id", sa.Integer()),
        sa.column("data", sa.JSON()),
        sa.column("reviewed", sa.Boolean()),
        sa.column("reviewed_by_id", sa.Integer()),
        sa.column("reviewed_at", _TS),
    )
    reviews = sa.table(
        "reviews",
        *(sa.column(name) for name in ("row_id", "user_id", "version", "active", "source", "data_hash")),
        sa.column("data", sa.JSON()),
        sa.column("created_at", _TS),
        sa.column("updated_at", _TS),
    )
    bind = op.get_bind()
    chosen = sa.select(rows.c.id, rows.c.reviewed_by_id, rows.c.data, rows.c.reviewed_at).where(
        rows.c.reviewed.is_(True), rows.c.reviewed_by_id.is_not(None), rows.c.reviewed_at.is_not(None)
    )
    found = [
        {
            "row_id": row_id, "user_id": user_id, "data": data, "data_hash": _hash(data), "version": 1,
            "active": True, "source": "web", "created_at": when, "updated_at": when,
        }
        for row_id, user_id, data, when in bind.execute(chosen)
    ]  # fmt: skip
    if found:
        bind.execute(reviews.insert(), found)


def _hash(data: object) -> str:
    """As ``rescue_bench.review.db.data_hash`` (kept here: a migration does not change with the models)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def downgrade() -> None:
    op.drop_table("assignments")
    op.drop_table("adjudications")
    op.drop_table("reviews")
