"""``judge calibrate``: human ratings against a run's judge scores, in the layout of the paper's Table 12.

The ratings CSV (docs/design.md) has the columns ``item_id,instance_id,task,annotator,human_score``, with
``human_score`` an integer 1-5 and ``instance_id`` joining ``judgments.jsonl``. The judge score on the same
1-5 scale is ER ``s_emo``, and VP's 0-6 total read as the run reads it: mapped linearly by default (so it can
fall between integers; the |difference| histogram then rounds half up, see
:func:`rescue_bench.judge.agreement.calibration_table`), rounded to a whole score for a run on
``--vp-judge-scale integer``. With several judges the per-instance mean is used
unless one judge is named. Ratings whose instance has no valid judge score are counted and listed, not dropped
silently.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rescue_bench.errors import ConfigError, DataError
from rescue_bench.judge.agreement import CalibrationRow, RatingPair, calibration_table
from rescue_bench.judge.merge import BERTSCORE_JUDGE, judge_names, number
from rescue_bench.judge.rubric import judge_rubric
from rescue_bench.records import Json
from rescue_bench.rundir import JudgmentLine
from rescue_bench.tasks import judged_tasks

COLUMNS = ("item_id", "instance_id", "task", "annotator", "human_score")
TASKS = judged_tasks()
EXPECTED_TASKS = " or ".join(task.upper() for task in TASKS)
MAX_DIFF = 4


@dataclass(frozen=True, slots=True)
class HumanRating:
    item_id: str
    instance_id: str
    task: str
    """A judged task (ER, VP)."""
    annotator: str
    score: int
    line: int


def _rating(row: Mapping[str, str | None], where: str, line: int) -> HumanRating:
    values = {name: (row.get(name) or "").strip() for name in COLUMNS}
    for name in ("instance_id", "annotator", "task", "human_score"):
        if not values[name]:
            raise DataError(f"{where}:{line}: field {name!r} is empty")
    task = values["task"].lower()
    if task not in TASKS:
        raise DataError(f"{where}:{line}: field 'task' is {values['task']!r}, expected {EXPECTED_TASKS}")
    try:
        score = int(values["human_score"])
    except ValueError:
        score = 0
    if not 1 <= score <= 5 or values["human_score"] != str(score):
        raise DataError(
            f"{where}:{line}: field 'human_score' is {values['human_score']!r}, expected an integer 1-5"
        )
    return HumanRating(values["item_id"], values["instance_id"], task, values["annotator"], score, line)


def read_ratings(path: Path) -> list[HumanRating]:
    """Read and check a ratings CSV.

    Raises:
        DataError: the file is missing or unreadable, lacks a column, or has a bad value (file and line
            named).
    """
    if not path.is_file():
        raise DataError(f"ratings file {path} does not exist")
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
            if missing:
                raise DataError(
                    f"{path}:1: missing column(s) {', '.join(missing)}; expected {','.join(COLUMNS)}"
                )
            ratings = [_rating(row, str(path), number) for number, row in enumerate(reader, start=2)]
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None
    if not ratings:
        raise DataError(f"{path}: no ratings")
    first: dict[tuple[str, str], int] = {}
    for r in ratings:  # a rating counted twice would weigh its instance twice in the table
        seen = first.setdefault((r.annotator, r.instance_id), r.line)
        if seen != r.line:
            raise DataError(
                f"{path}:{r.line}: annotator {r.annotator!r} rated instance {r.instance_id!r} already "
                f"(line {seen}); keep one rating per annotator and instance"
            )
    return ratings


def judge_scores(
    judgments: Iterable[JudgmentLine], judge: str | None = None, config: Mapping[str, Json] | None = None
) -> dict[str, float]:
    """Instance id -> the judge score on 1-5 (mean over judges unless ``judge`` is given); unscored left out.
    ``config``: the run's recorded config, whose options say how a task's total is read on 1-5 (VP's
    ``--vp-judge-scale``); none: the rubric's own reading.

    >>> lines = [JudgmentLine(instance_id=i, task=t, judge=j, valid=True, scores=s) for i, t, j, s in [
    ...     ("a", "vp", "x/j", {"total": 3.0}), ("b", "er", "x/j", {"s_emo": 4.0}),
    ...     ("b", "er", "y/k", {"s_emo": 5.0})]]
    >>> judge_scores(lines), judge_scores(lines, "y/k")
    ({'a': 3.0, 'b': 4.5}, {'b': 5.0})
    >>> vp = [JudgmentLine(instance_id="c", task="vp", judge="x/j", valid=True, scores={"total": 4.0})]
    >>> judge_scores(vp), judge_scores(vp, config={"task_options": {"vp": {"judge_scale": "integer"}}})
    ({'c': 3.6666666666666665}, {'c': 4.0})
    """
    readings = {task: judge_rubric(task).read(config or {}) for task in TASKS}
    values: dict[str, list[float]] = {}
    for line in judgments:
        if line.judge == BERTSCORE_JUDGE or not line.valid or judge not in (None, line.judge):
            continue
        scores, task = line.scores, line.task
        key = judge_rubric(task).agreement_key if task in TASKS else None
        if key is None or key not in scores:
            continue
        to_five = readings[task].to_score or judge_rubric(task).to_five
        value = to_five(number(scores[key]))
        values.setdefault(line.instance_id, []).append(value)
    return {iid: sum(v) / len(v) for iid, v in values.items()}


@dataclass(frozen=True, slots=True)
class Calibration:
    judge: str
    rows: tuple[CalibrationRow, ...]
    matched: int
    unmatched: tuple[str, ...]
    """Instance ids of ratings without a valid judge score in the run."""

    def to_json(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "matched": self.matched,
            "unmatched": list(self.unmatched),
            "rows": [row.to_json() for row in self.rows],
        }


def calibrate(
    ratings: Sequence[HumanRating],
    judgments: Sequence[JudgmentLine],
    judge: str | None = None,
    where: str = "ratings",
    config: Mapping[str, Json] | None = None,
) -> Calibration:
    """Pair every rating with the judge score of its instance and tabulate (paper Table 12 layout).

    Raises:
        ConfigError: the run has no judgments, the named judge is not among them, or nothing matches.
        DataError: a rating's task is not its instance's (``where:line`` named).
    """
    tasks = {line.instance_id: line.task for line in judgments}
    for r in ratings:
        if tasks.get(r.instance_id, r.task) != r.task:
            raise DataError(
                f"{where}:{r.line}: field 'task' is {r.task.upper()!r}, but instance {r.instance_id!r} is "
                f"{tasks[r.instance_id].upper()!r} in the run"
            )
    names = judge_names(judgments)
    if not names:
        raise ConfigError("the run has no judge verdicts; run `rescue-bench score RUN --judge MODEL` first")
    if judge is not None and judge not in names:
        raise ConfigError(f"judge {judge!r} did not judge this run; judges: {', '.join(names)}")
    scores = judge_scores(judgments, judge, config)
    pairs = [
        RatingPair(r.annotator, r.task.upper(), float(r.score), scores[r.instance_id])
        for r in ratings
        if r.instance_id in scores
    ]
    unmatched = tuple(dict.fromkeys(r.instance_id for r in ratings if r.instance_id not in scores))
    if not pairs:
        raise ConfigError(f"none of the {len(ratings)} ratings matches a judged instance of the run")
    label = judge or (names[0] if len(names) == 1 else "mean of " + ", ".join(names))
    rows = tuple(calibration_table(pairs, max_diff=MAX_DIFF))
    return Calibration(label, rows, len(pairs), unmatched)


def table12_columns() -> tuple[str, ...]:
    return (
        "Annotator",
        "Task",
        "# Samples",
        "Exact Match",
        *(f"Diff = {d}" for d in range(1, MAX_DIFF + 1)),
        "MAE",
    )


def table12_rows(calibration: Calibration) -> list[tuple[str | int | float, ...]]:
    """The rows as displayed in Table 12 (MAE to 3 decimals); the diff columns are |difference| 1..4.

    >>> cal = Calibration("x/j", (CalibrationRow("A1", "ER", 2, 1, (1, 0, 1, 0, 0), 1.0),), 2, ())
    >>> table12_rows(cal)
    [('A1', 'ER', 2, 1, 0, 1, 0, 0, 1.0)]
    """
    return [
        (row.annotator, row.task, row.n, row.exact, *row.diff_counts[1:], round(row.mae, 3))
        for row in calibration.rows
    ]
