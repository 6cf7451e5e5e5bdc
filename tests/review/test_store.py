"""The store under concurrent saves: exactly one saver of a version wins, every other edit is kept."""

from __future__ import annotations

import threading

from fastapi import FastAPI
from sqlalchemy import func, select

from rescue_bench.review.db import Conflict, RowRecord, RowVersion, User
from rescue_bench.review.store import SaveOutcome, save_row


def test_parallel_saves_of_one_version(app: FastAPI) -> None:
    sessions = app.state.review.sessions
    savers = 6
    outcomes: list[SaveOutcome] = []
    barrier = threading.Barrier(savers)
    lock = threading.Lock()

    def save(i: int) -> None:
        with sessions() as session:
            row = session.get(RowRecord, 2)
            user = session.scalars(select(User).where(User.name == ("ann" if i % 2 else "ben"))).one()
            assert row is not None
            new = {**row.data, "tone_of_voice": f"edit {i}"}
            barrier.wait()  # all savers hold version 1 before anyone saves
            outcome = save_row(session, row, 1, new, user)
            with lock:
                outcomes.append(outcome)

    threads = [threading.Thread(target=save, args=(i,)) for i in range(savers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(o.status for o in outcomes) == ["conflict"] * (savers - 1) + ["saved"]
    with sessions() as session:
        row = session.get(RowRecord, 2)
        assert row is not None and row.version == 2
        kept = {c.data["tone_of_voice"] for c in session.scalars(select(Conflict))}
        assert kept | {row.data["tone_of_voice"]} == {f"edit {i}" for i in range(savers)}
        versions = session.scalar(select(func.count()).select_from(RowVersion).where(RowVersion.row_id == 2))
        assert versions == 2
