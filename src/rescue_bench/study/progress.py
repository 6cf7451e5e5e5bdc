"""The study's live display: one line per run (done/total, failures, cost), read from the run directories.

The engine writes every batch to ``predictions.jsonl`` and ``requests.jsonl`` as it lands, so the display
tails those files (only the bytes appended since the last look) instead of reaching into the engine. Drawn
with rich on a terminal, and not at all under ``--quiet`` or when stderr is not a terminal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from rescue_bench.pricing import Prices
from rescue_bench.rundir import PREDICTIONS_FILE, REQUESTS_FILE


@dataclass(slots=True)
class _Tail:
    """The lines appended to one file since the last read (a rewritten, shorter file is read again)."""

    path: Path
    offset: int = 0

    def new_lines(self) -> list[str]:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return []
        if size < self.offset:  # compacted: start over
            self.offset = 0
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read(size - self.offset)
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next look
        self.offset += end
        return data[:end].decode("utf-8", errors="replace").splitlines()


@dataclass(slots=True)
class RunTally:
    """What one run's directory shows so far."""

    label: str
    total: int
    prices: Prices | None
    predictions: _Tail
    requests: _Tail
    done: set[str] = field(default_factory=set)
    invalid: set[str] = field(default_factory=set)
    cost: float = 0.0
    tokens: int = 0
    status: str = "pending"

    def refresh(self) -> None:
        for line in self.predictions.new_lines():
            record = _object(line)
            instance = str(record.get("instance_id", ""))
            if instance:
                self.done.add(instance)
                (self.invalid.discard if record.get("valid") else self.invalid.add)(instance)
        for line in self.requests.new_lines():
            record = _object(line)
            usage = record.get("usage")
            if record.get("cached") or not isinstance(usage, dict):
                continue
            prompt, completion = (
                int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or 0),
            )
            self.tokens += prompt + completion
            if self.prices is not None:
                self.cost += self.prices.cost(prompt, completion)

    def summary(self) -> str:
        spent = f"${self.cost:.4f}" if self.prices is not None else f"{self.tokens:,} tokens"
        return f"{self.status} · failed {len(self.invalid)} · {spent}"


def _object(line: str) -> dict[str, object]:
    """A JSON object line; a damaged line counts as nothing here (the run's own reader names it)."""
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class StudyProgress:
    """One bar per run; :meth:`refresh` re-reads the directories and redraws."""

    def __init__(self, tallies: Sequence[RunTally], *, enabled: bool) -> None:
        self.tallies = list(tallies)
        self._bar: RichProgress | None = None
        self._ids: list[TaskID] = []
        if enabled:
            self._bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
            )
            self._ids = [self._bar.add_task(t.label, total=t.total, info="") for t in self.tallies]

    @classmethod
    def of(cls, runs: Sequence[tuple[str, Path, int, Prices | None]], quiet: bool) -> StudyProgress:
        tallies = [
            RunTally(label, total, prices, _Tail(out / PREDICTIONS_FILE), _Tail(out / REQUESTS_FILE))
            for label, out, total, prices in runs
        ]
        return cls(tallies, enabled=not quiet and sys.stderr.isatty())

    def start(self) -> None:
        if self._bar is not None:
            self._bar.start()

    def refresh(self) -> None:
        for index, tally in enumerate(self.tallies):
            tally.refresh()
            if self._bar is not None:
                self._bar.update(self._ids[index], completed=len(tally.done), info=tally.summary())

    def stop(self) -> None:
        self.refresh()
        if self._bar is not None:
            self._bar.stop()
