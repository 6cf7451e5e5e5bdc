"""The schema comes from the Alembic migrations and matches the models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

from rescue_bench.errors import ConfigError
from rescue_bench.review.db import Base, make_engine, migrate, open_store, secret_key


def test_migrations_build_the_models_schema(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    migrate(engine)
    migrate(engine)  # idempotent
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
        assert context.get_current_revision() == "0002"
    assert set(inspect(engine).get_table_names()) == set(Base.metadata.tables) | {"alembic_version"}
    engine.dispose()


def test_secret_key_is_made_once_and_kept(empty_db_url: str) -> None:
    sessions = open_store(empty_db_url)
    with sessions() as session:
        first = secret_key(session)
    with sessions() as session:
        assert secret_key(session) == first and len(first) >= 48
    sessions.kw["bind"].dispose()


def test_unsupported_or_unreachable_databases() -> None:
    with pytest.raises(ConfigError, match="unsupported database URL 'mysql://h/db'"):
        make_engine("mysql://u:pw@h/db?password=s3cret")  # the one redaction: user info and query go
    with pytest.raises(ConfigError, match="cannot open the review database") as caught:
        open_store("sqlite:////nonexistent-dir/review.db")
    assert "pw" not in str(caught.value)


def test_rows_reviewed_before_independent_reviews_keep_their_reviewer(tmp_path: Path) -> None:
    """0001 -> 0002: a row marked reviewed becomes its reviewer's review, so it still exports."""
    from alembic import command
    from alembic.config import Config

    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    config = Config()
    config.set_main_option("script_location", str(Path(migrate.__code__.co_filename).parent / "migrations"))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    users = "users (id, name, role, password_hash, active, session_epoch, created_at)"
    segments = (
        "segments (id, segment_id, sample_id, group_name, scenario, participants, source_path, draft_notes, "
        "discarded, loaded_at)"
    )
    rows = (
        "rows (id, segment_pk, row_index, data, draft, violations, version, edited, reviewed, "
        "reviewed_by_id, reviewed_at)"
    )
    with engine.begin() as conn:
        conn.execute(text(f"INSERT INTO {users} VALUES (1, 'ann', 'annotator', 'x', 1, 0, '2025-01-01')"))
        conn.execute(
            text(
                f"INSERT INTO {segments} VALUES "
                "(1, 's', 's', 'g', 'couple', '[]', 'p', '{}', 0, '2025-01-01')"
            )
        )
        for row_id, reviewed in ((1, 1), (2, 0)):
            conn.execute(
                text(
                    f"INSERT INTO {rows} VALUES "
                    "(:id, 1, :id, :data, '{}', '[]', 1, 0, :r, :by, '2025-01-02')"
                ),
                {"id": row_id, "r": reviewed, "by": 1 if reviewed else None, "data": '{"row_index": 6}'},
            )
    migrate(engine)
    with engine.connect() as conn:
        found = conn.execute(text("SELECT row_id, user_id, data, version, active FROM reviews")).all()
    engine.dispose()
    assert [(r[0], r[1], json.loads(r[2]), r[3], bool(r[4])) for r in found] == [
        (1, 1, {"row_index": 6}, 1, True)
    ]
