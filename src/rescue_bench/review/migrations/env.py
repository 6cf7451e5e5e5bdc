"""Alembic environment of the review app; run programmatically by :func:`rescue_bench.review.db.migrate`.

With the alembic command line, pass the database URL in ``alembic.ini`` (``sqlalchemy.url``) or with ``-x
url=...``.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from rescue_bench.review.db import Base, normalize_url

config = context.config
target_metadata = Base.metadata


def _run(connection: object) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)  # type: ignore[arg-type]
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("give the database URL: alembic -x url=sqlite:///review.db upgrade head")
    engine = create_engine(normalize_url(url))
    with engine.begin() as own_connection:
        _run(own_connection)
