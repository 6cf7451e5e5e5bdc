"""Study directories for the viewer: a directory with ``study.json`` (written by ``sweep``) opens as its runs.

Read here from the file's own format (``runs[].dir``, relative to the study directory), because the viewer
and the study package are separate layers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from rescue_bench.rundir import PREDICTIONS_FILE
from rescue_bench.view.data import ViewError

STUDY_FILE = "study.json"


def is_study(path: Path) -> bool:
    """A study directory: ``study.json`` and no predictions of its own."""
    return (path / STUDY_FILE).is_file() and not (path / PREDICTIONS_FILE).exists()


def expand_runs(paths: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """Run directories of ``paths``, a study directory (``study.json``) opening as its runs in the study's
    order; and a note per study run that has nothing to show yet (pending, or its directory missing).

    Raises:
        ViewError: a study file that cannot be read (named, with the reason).
    """
    out: list[Path] = []
    notes: list[str] = []
    for path in paths:
        if not is_study(path):
            out.append(path)
            continue
        for entry in _study_runs(path / STUDY_FILE):
            run_dir = path / entry
            if (run_dir / PREDICTIONS_FILE).exists():
                out.append(run_dir)
            else:
                notes.append(f"{run_dir}: nothing to show yet (no {PREDICTIONS_FILE})")
    return out, notes


def _study_runs(study: Path) -> list[str]:
    try:
        record = json.loads(study.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ViewError(f"{study}: cannot be read ({exc})") from None
    runs = record.get("runs") if isinstance(record, dict) else None
    dirs = (
        [r.get("dir") for r in runs]
        if isinstance(runs, list) and all(isinstance(r, dict) for r in runs)
        else None
    )
    if dirs is None or not all(
        isinstance(d, str) and d and not Path(d).is_absolute() and ".." not in Path(d).parts for d in dirs
    ):
        raise ViewError(f"{study}: 'runs' must be a list of objects with a relative 'dir'")
    return [str(d) for d in dirs]
