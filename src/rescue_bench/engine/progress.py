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

    def summary(self, window: tuple[int, int] | None = None) -> str:
        """The counters, and the in-flight window when it is below its ceiling (``window``: now, ceiling).

        >>> TaskCounters(4).summary((2, 16))
        'hits 0 · retries 0 · failed 0 · tokens 0 · in flight ≤ 2 of 16'
        """
        shown = f" · in flight ≤ {window[0]} of {window[1]}" if window and window[0] < window[1] else ""
        return (
            f"hits {self.cache_hits} · retries {self.retries} · failed {self.failures} · "
            f"tokens {self.tokens:,}{shown}"
        )


@dataclass(slots=True)
class Progress:
    """Per-task counters, drawn live when ``enabled``."""

    enabled: bool
    console: Console | None = None
    """Where to draw (default: stderr)."""
    counters: dict[str, TaskCounters] = field(default_factory=dict)
    window: tuple[int, int] | None = None
    """The engine's in-flight window (now, ceiling), as last reported."""
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
        window: tuple[int, int] | None = None,
    ) -> None:
        """Add to ``task``'s counters; ``window`` is the engine's in-flight window (now, ceiling)."""
        self.window = window or self.window
        counters = self.counters[task]
        counters.done += done
        counters.cache_hits += cache_hits
        counters.retries += retries
        counters.failures += failures
        counters.tokens += tokens
        if self._bar is not None:
            for name in self._ids if window else (task,):  # the window is every task's line
                shown = self.counters[name]
                self._bar.update(self._ids[name], completed=shown.done, info=shown.summary(self.window))

    def stop(self) -> None:
        """Draw the final counts, then stop: each line ends on what was done, without the window."""
        if self._bar is not None:
            for task, counters in self.counters.items():
                self._bar.update(self._ids[task], completed=counters.done, info=counters.summary())
            self._bar.refresh()
            self._bar.stop()
            self._bar = None
