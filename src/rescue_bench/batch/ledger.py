"""``batches.jsonl``: the record of a run's Batch API submissions (``run --batch``), append-only.

Two kinds of line (docs/design.md, "Run directory"):

* ``{"event": "submitted", "batch_id", "input_file_id", "custom_ids": [...], "resubmitted", "time"}``, written
  as soon as ``batches.create`` returned, before the first poll: a killed run finds the batch here and polls
  it again instead of uploading its requests a second time;
* ``{"event": "status", "batch_id", "status", "output_file_id", "error_file_id", "completed", "failed",
  "total", "time"}``, written whenever a poll finds the batch in another state (the last one wins).

A torn last line (a kill mid-write) is cut off by the appender; a damaged line elsewhere is an error naming
``batches.jsonl:<line>``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rescue_bench.records import Json
from rescue_bench.rundir import JsonlAppender, numbered_jsonl
from rescue_bench.rundir.lines import Line

BATCHES_FILE = "batches.jsonl"
Status = Literal[
    "validating", "in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled"
]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "expired", "cancelled"})


class BatchState(BaseModel):
    """What one poll of a batch found."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    batch_id: str
    status: Status
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    total: int = 0


class BatchEvent(Line):
    """One line of ``batches.jsonl``."""

    event: Literal["submitted", "status"]
    batch_id: str
    time: float = 0.0
    input_file_id: str | None = None
    custom_ids: tuple[str, ...] = ()
    resubmitted: int = 0
    """Requests of this batch that were in an earlier one (failed, expired, or left by a cancelled one)."""
    status: Status | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    total: int = 0

    def state(self) -> BatchState | None:
        if self.status is None:
            return None
        return BatchState(
            batch_id=self.batch_id,
            status=self.status,
            output_file_id=self.output_file_id,
            error_file_id=self.error_file_id,
            completed=self.completed,
            failed=self.failed,
            total=self.total,
        )


class BatchLedger:
    """``batches.jsonl`` of one run directory: read at the start of a session, appended to as it goes."""

    def __init__(self, root: Path) -> None:
        self.path = Path(root) / BATCHES_FILE
        self.events = [
            BatchEvent.from_json(record, f"{self.path}:{number}")
            for number, record in (numbered_jsonl(self.path) if self.path.is_file() else ())
        ]
        self._ended_before = {e.batch_id for e in self.events if e.event == "status" and e.status in TERMINAL}
        self._sent: Counter[str] = Counter(c for e in self.batches() for c in e.custom_ids)
        self._appender: JsonlAppender | None = None

    def batches(self) -> list[BatchEvent]:
        """The submissions, oldest first."""
        return [e for e in self.events if e.event == "submitted"]

    def state(self, batch_id: str) -> BatchState | None:
        """The last state recorded for ``batch_id``."""
        states = [e.state() for e in self.events if e.event == "status" and e.batch_id == batch_id]
        return states[-1] if states else None

    def submissions(self, cid: str) -> int:
        """How many batches held the request ``cid`` so far."""
        return self._sent[cid]

    def ended_before(self, batch_id: str) -> bool:
        """Whether the batch had ended before this session (its end was seen and reported then)."""
        return batch_id in self._ended_before

    def submitted(self, batch_id: str, input_file_id: str, custom_ids: Sequence[str]) -> BatchEvent:
        again = sum(self._sent[c] > 0 for c in custom_ids)
        event = BatchEvent(
            event="submitted",
            batch_id=batch_id,
            time=round(time.time(), 3),
            input_file_id=input_file_id,
            custom_ids=tuple(custom_ids),
            resubmitted=again,
        )
        self._sent.update(custom_ids)
        self._append(event)
        return event

    def status(self, state: BatchState) -> None:
        self._append(BatchEvent(event="status", time=round(time.time(), 3), **state.model_dump()))

    def _append(self, event: BatchEvent) -> None:
        if self._appender is None:
            self._appender = JsonlAppender(self.path)
        self._appender.append([event.model_dump(mode="json", exclude_defaults=False)])
        self.events.append(event)

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()
            self._appender = None

    def summary(self) -> dict[str, Json]:
        """What ``run.json`` records under ``options.batch``: batches by how they ended, re-submissions."""
        ends: Counter[str] = Counter()
        for event in self.batches():
            state = self.state(event.batch_id)
            ends[state.status if state is not None and state.status in TERMINAL else "active"] += 1
        return {
            "batches": len(self.batches()),
            "requests_sent": sum(len(e.custom_ids) for e in self.batches()),
            "resubmitted": sum(e.resubmitted for e in self.batches()),
            **{end: ends[end] for end in ("completed", "failed", "expired", "cancelled", "active")},
        }
