"""The study's live display: one line per run (done/total, failures, cost), read from the run directories.

The engine writes every batch to ``predictions.jsonl`` and ``requests.jsonl`` as it lands, so the display
tails those files (only the bytes appended since the last look) instead of reaching into the engine. Drawn
with rich on a terminal, and not at all under ``--quiet`` or when stderr is not a terminal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from rescue_bench.pricing import Prices
from rescue_bench.rundir import PREDICTIONS_FILE, REQUESTS_FILE, PredictionLine, RequestLine
from rescue_bench.rundir.files import RunDirError
from rescue_bench.rundir.lines import Line

L = TypeVar("L", bound=Line)


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
        for prediction in _lines(self.predictions.new_lines(), PredictionLine):
            self.done.add(prediction.key)
            (self.invalid.discard if prediction.valid else self.invalid.add)(prediction.key)
        for request in _lines(self.requests.new_lines(), RequestLine):
            if request.cached:
                continue
            prompt, completion = request.usage.prompt_tokens, request.usage.completion_tokens
            self.tokens += prompt + completion
            if self.prices is not None:
                self.cost += self.prices.cost(prompt, completion)

    def summary(self) -> str:
        spent = f"${self.cost:.4f}" if self.prices is not None else f"{self.tokens:,} tokens"
        return f"{self.status} · failed {len(self.invalid)} · {spent}"


def _lines(texts: Sequence[str], kind: type[L]) -> Iterator[L]:
    """The records of new lines; a damaged line counts as nothing here (the run's own reader names it)."""
    for text in texts:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            try:
                yield kind.from_json(value)
            except RunDirError:
                continue


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
