"""Studies: many models (and perturbations) over one data set and settings, one resumable command.

:class:`~rescue_bench.study.spec.StudySpec` is the study file; :func:`~rescue_bench.study.runner.run_study`
runs it (``rescue-bench sweep``), writing ``study.json`` and the leaderboard
(:func:`write_study_leaderboard`).
See docs/studies.md.
"""

from __future__ import annotations

from rescue_bench.study.leaderboard import write_study_leaderboard
from rescue_bench.study.record import RunEntry, StudyRecord, read_record
from rescue_bench.study.runner import StudyOptions, run_study
from rescue_bench.study.spec import StudyRun, StudySpec, validate_study

__all__ = [
    "RunEntry",
    "StudyOptions",
    "StudyRecord",
    "StudyRun",
    "StudySpec",
    "read_record",
    "run_study",
    "validate_study",
    "write_study_leaderboard",
]
