"""Study directories for the viewer: a directory with ``study.json`` (written by ``sweep``) opens as its runs,
read through :mod:`rescue_bench.rundir.study` like every other command that takes a study."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rescue_bench.rundir import PREDICTIONS_FILE, is_study, study_runs

__all__ = ["expand_runs", "is_study"]


def expand_runs(paths: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """Run directories of ``paths``, a study directory opening as its runs in the study's order; and a note
    per study run that has nothing to show yet (pending, or its directory missing).

    Raises:
        DataError: a study file that cannot be read, or that names a directory outside the study.
    """
    found, pending = study_runs(paths)
    return found, [f"{run}: nothing to show yet (no {PREDICTIONS_FILE})" for run in pending]
