"""The run directory: file names, reading, writing and typed records (layout in docs/design.md).

A leaf of the package: it imports only ``records``, ``redaction`` and ``errors``, so every layer that
touches a run directory (engine, judge, report, review) reads and writes it through here.

* ``run.json``: the engine's manifest (:class:`Manifest`), replaced atomically whenever it changes; written by
  :class:`RunStore` only.
* ``requests.jsonl``, ``predictions.jsonl``, ``judgments.jsonl``: append-only (:class:`JsonlAppender`), read
  as :class:`RequestLine`, :class:`PredictionLine`, :class:`JudgmentLine`.
* ``scores.json`` (:class:`Scores`) and ``judging.json`` (:class:`Judging`, the judge pass's own record).
* a study directory's run directories (:func:`expand_run_dirs`, from its ``study.json``).
"""

from rescue_bench.rundir.counts import Counts, TokenCounts
from rescue_bench.rundir.files import (
    BATCH_EXPORT_FILE,
    FORMAT,
    JUDGING_FILE,
    JUDGMENTS_FILE,
    LOCK_FILE,
    PREDICTIONS_FILE,
    REQUESTS_FILE,
    RUN_FILE,
    SCORES_FILE,
    JsonlAppender,
    RunDirError,
    atomic_write_json,
    atomic_write_lines,
    cut_torn_tail,
    numbered_jsonl,
    read_json_object,
    read_jsonl,
)
from rescue_bench.rundir.judging import BertScoreSetting, JudgeCounts, JudgeSession, Judging
from rescue_bench.rundir.lines import (
    JudgmentLine,
    PredictionLine,
    RequestLine,
    line_key,
)
from rescue_bench.rundir.manifest import PROTOCOL, ConfigFacts, Manifest, Perturbed, judging_of
from rescue_bench.rundir.read import (
    RunData,
    check_run_dir,
    latest,
    load_judging,
    load_run,
    read_judgments,
    read_predictions,
    read_requests,
)
from rescue_bench.rundir.scores import ScoreEntry, Scores, ScoresMeta
from rescue_bench.rundir.store import RunStore, describe_changes, locked_run, run_lock
from rescue_bench.rundir.study import (
    STUDY_FILE,
    StudyMember,
    expand_run_dirs,
    is_study,
    study_members,
    study_runs,
)

__all__ = [
    "BATCH_EXPORT_FILE",
    "FORMAT",
    "JUDGING_FILE",
    "JUDGMENTS_FILE",
    "LOCK_FILE",
    "PREDICTIONS_FILE",
    "PROTOCOL",
    "REQUESTS_FILE",
    "RUN_FILE",
    "SCORES_FILE",
    "STUDY_FILE",
    "BertScoreSetting",
    "ConfigFacts",
    "Counts",
    "JsonlAppender",
    "JudgeCounts",
    "JudgeSession",
    "Judging",
    "JudgmentLine",
    "Manifest",
    "Perturbed",
    "PredictionLine",
    "RequestLine",
    "RunData",
    "RunDirError",
    "RunStore",
    "ScoreEntry",
    "Scores",
    "ScoresMeta",
    "StudyMember",
    "TokenCounts",
    "atomic_write_json",
    "atomic_write_lines",
    "check_run_dir",
    "cut_torn_tail",
    "describe_changes",
    "expand_run_dirs",
    "is_study",
    "judging_of",
    "latest",
    "line_key",
    "load_judging",
    "load_run",
    "locked_run",
    "numbered_jsonl",
    "read_json_object",
    "read_jsonl",
    "read_judgments",
    "read_predictions",
    "read_requests",
    "run_lock",
    "study_members",
    "study_runs",
]
