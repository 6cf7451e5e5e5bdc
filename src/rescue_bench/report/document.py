"""A report: its tables and figures, what the runs measured, and whether it is partial.

:mod:`rescue_bench.report.build` assembles one from run directories; :mod:`rescue_bench.report.writers` and
:mod:`rescue_bench.report.html` write it out.
"""

from __future__ import annotations

from dataclasses import dataclass

from rescue_bench.report.figures import Figure
from rescue_bench.report.measured import PARTIAL
from rescue_bench.report.tables import Table
from rescue_bench.version import __version__


@dataclass(frozen=True, slots=True)
class Report:
    title: str
    runs: tuple[str, ...]
    tables: tuple[Table, ...]
    figures: tuple[Figure, ...]
    version: str = __version__
    partial: tuple[str, ...] = ()
    """One line per unfinished run (:meth:`Progress.describe`) of a partial report; empty otherwise."""
    subtitle: str = ""
    """What the runs measured (:func:`rescue_bench.report.measured.heading`), shown under the title."""

    def table(self, key: str) -> Table:
        return next(t for t in self.tables if t.key == key)

    @property
    def banner(self) -> str:
        """``PARTIAL: <counts of each unfinished run>``, or empty for a report of finished runs."""
        return f"{PARTIAL}: " + "; ".join(self.partial) if self.partial else ""
