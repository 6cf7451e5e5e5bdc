"""Live progress of a run on stderr: per task done/total, cache hits, retries, failures and tokens.

Rich draws it only on a terminal and without ``--quiet``; otherwise :class:`Progress` does nothing, so logs
and CI output stay clean.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress


@dataclass(slots=True)
class TaskCounters:
    total: int
    done: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    tokens: int = 0

    def summary(self) -> str:
        return (
            f"hits {self.cache_hits} · retries {self.retries} · failed {self.failures} · "
            f"tokens {self.tokens:,}"
        )


@dataclass(slots=True)
class Progress:
    """Per-task counters, drawn live when ``enabled``."""

    enabled: bool
    console: Console | None = None
    """Where to draw (default: stderr)."""
    counters: dict[str, TaskCounters] = field(default_factory=dict)
    _bar: RichProgress | None = None
    _ids: dict[str, TaskID] = field(default_factory=dict)

    @classmethod
    def for_terminal(cls, quiet: bool) -> Progress:
        return cls(enabled=not quiet and sys.stderr.isatty())

    def start(self, totals: dict[str, tuple[int, int]]) -> None:
        """``totals``: task -> (instances in total, instances already finished)."""
        for task, (total, done) in totals.items():
            self.counters[task] = TaskCounters(total=total, done=done)
        if not self.enabled:
            return
        self._bar = RichProgress(
            TextColumn("{task.description:>4}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            console=self.console or Console(stderr=True),
            transient=False,
        )
        for task, counters in self.counters.items():
            self._ids[task] = self._bar.add_task(
                task, total=counters.total, completed=counters.done, info=counters.summary()
            )
        self._bar.start()

    def update(
        self,
        task: str,
        *,
        done: int = 0,
        cache_hits: int = 0,
        retries: int = 0,
        failures: int = 0,
        tokens: int = 0,
    ) -> None:
        counters = self.counters[task]
        counters.done += done
        counters.cache_hits += cache_hits
        counters.retries += retries
        counters.failures += failures
        counters.tokens += tokens
        if self._bar is not None:
            self._bar.update(self._ids[task], completed=counters.done, info=counters.summary())

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
