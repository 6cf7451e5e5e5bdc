"""The schema comes from the Alembic migrations and matches the models."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from rescue_bench.errors import ConfigError
from rescue_bench.review.db import Base, make_engine, migrate, open_store, secret_key


def test_migrations_build_the_models_schema(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    migrate(engine)
    migrate(engine)  # idempotent
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
        assert context.get_current_revision() == "0001"
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
