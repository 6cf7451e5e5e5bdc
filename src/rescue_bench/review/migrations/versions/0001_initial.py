"""Initial schema of the review app.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "review_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("session_epoch", sa.Integer(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_table(
        "segments",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("segment_id", sa.String(255), nullable=False, unique=True),
        sa.Column("sample_id", sa.String(255), nullable=False, unique=True),
        sa.Column("group_name", sa.String(255), nullable=False, index=True),
        sa.Column("scenario", sa.String(16), nullable=False),
        sa.Column("participants", sa.JSON(), nullable=False),
        sa.Column("source_file", sa.Text(), nullable=True),
        sa.Column("source_path", sa.Text(), nullable=False),
        sa.Column("model", sa.String(255), nullable=True),
        sa.Column("draft_notes", sa.JSON(), nullable=False),
        sa.Column("start_time", sa.Float(), nullable=True),
        sa.Column("end_time", sa.Float(), nullable=True),
        sa.Column("discarded", sa.Boolean(), nullable=False),
        sa.Column("discard_reason", sa.String(64), nullable=True),
        sa.Column("discard_note", sa.Text(), nullable=True),
        sa.Column("discarded_by_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=True),
        sa.Column("discarded_at", _TS, nullable=True),
        sa.Column("loaded_at", _TS, nullable=False),
    )
    op.create_table(
        "rows",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("segment_pk", sa.Integer(), sa.ForeignKey("segments.id"), nullable=False, index=True),
        sa.Column("row_index", sa.Integer(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("draft", sa.JSON(), nullable=False),
        sa.Column("subtitle_text", sa.Text(), nullable=True),
        sa.Column("clip_path", sa.Text(), nullable=True),
        sa.Column("duration_sec", sa.Float(), nullable=True),
        sa.Column("violations", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("edited", sa.Boolean(), nullable=False),
        sa.Column("reviewed", sa.Boolean(), nullable=False),
        sa.Column("reviewed_by_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=True),
        sa.Column("reviewed_at", _TS, nullable=True),
        sa.Column("updated_by_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=True),
        sa.Column("updated_at", _TS, nullable=True),
        sa.UniqueConstraint("segment_pk", "row_index"),
    )
    op.create_table(
        "row_versions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("row_id", sa.Integer(), sa.ForeignKey("rows.id"), nullable=False, index=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=False),
        sa.UniqueConstraint("row_id", "version"),
    )
    op.create_table(
        "conflicts",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("row_id", sa.Integer(), sa.ForeignKey("rows.id"), nullable=False, index=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("base_version", sa.Integer(), nullable=False),
        sa.Column("current_version", sa.Integer(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("resolved", sa.Boolean(), nullable=False),
    )
    op.create_table(
        "comments",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("segment_pk", sa.Integer(), sa.ForeignKey("segments.id"), nullable=False, index=True),
        sa.Column("row_id", sa.Integer(), sa.ForeignKey("rows.id"), nullable=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("segment_pk", sa.Integer(), sa.ForeignKey("segments.id"), nullable=False, index=True),
        sa.Column("row_id", sa.Integer(), sa.ForeignKey("rows.id"), nullable=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
    )
    op.create_table(
        "rating_items",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("run_dir", sa.Text(), nullable=False),
        sa.Column("instance_id", sa.String(512), nullable=False),
        sa.Column("task", sa.String(8), nullable=False),
        sa.Column("scenario", sa.String(16), nullable=True),
        sa.Column("gold", sa.JSON(), nullable=True),
        sa.Column("prediction", sa.JSON(), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.UniqueConstraint("run_dir", "instance_id"),
    )
    op.create_table(
        "ratings",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("rating_items.id"), nullable=False, index=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("score", sa.Integer(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.UniqueConstraint("item_id", "user_id"),
    )


def downgrade() -> None:
    for table in (
        "ratings",
        "rating_items",
        "events",
        "comments",
        "conflicts",
        "row_versions",
        "rows",
        "segments",
        "users",
        "review_meta",
    ):
        op.drop_table(table)
