"""The leaderboard of a study's record (:mod:`rescue_bench.report.leaderboard` does the tables and files)."""

from __future__ import annotations

from pathlib import Path

from rescue_bench.metrics.multiplicity import Adjustment
from rescue_bench.report.build import Report
from rescue_bench.report.leaderboard import Entry, leaderboard_report, write_leaderboard
from rescue_bench.study.record import StudyRecord


def write_study_leaderboard(
    folder: Path,
    record: StudyRecord,
    *,
    with_paper: bool = False,
    method: Adjustment = "holm",
    level: float = 0.05,
) -> tuple[Report, list[Path]]:
    """Write ``leaderboard.md|html|csv`` into the study directory ``folder``; returns the leaderboard (for
    the terminal) and the paths written."""
    entries = [Entry(r.label, folder / r.dir, r.perturbation, r.status, r.reason) for r in record.runs]
    report = leaderboard_report(entries, with_paper=with_paper, method=method, level=level)
    return report, write_leaderboard(report, folder)
