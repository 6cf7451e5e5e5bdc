"""One typed, indexed row per instance of a run: what the instance list shows, filters and sorts on.

Built once per read of the run from the prediction records (judgments folded in), so a page of the list only
filters a list of small frozen records.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rescue_bench.judge.merge import (
    AGREEMENT_KEY,
    BERTSCORE_JUDGE,
    JUDGED_TASKS,
    current_lines,
)
from rescue_bench.metrics.plan import correct_top1, top1
from rescue_bench.report.analysis import target_kind
from rescue_bench.rundir import JudgmentLine, PredictionLine
from rescue_bench.tasks import mcnemar_tasks, task_info, task_infos
from rescue_bench.taxonomy import relation_labels

FAILURE_KINDS = ("request_failed", "parse_failure", "missing", "invalid_label", "judge_unscored")
LIST_TEXT_CAP = 1000
"""Characters of a text (gold, prediction, problem) the instance list shows: a reply of megabytes already in a
run directory must not make a list page of megabytes. The instance's own page shows it whole."""
JUDGE_SCORE = dict(AGREEMENT_KEY)
"""The per-instance judge score shown in the list (the one judges are compared on)."""


@dataclass(frozen=True, slots=True)
class InstanceRow:
    """The list view of one instance of one run."""

    position: int
    """Order in ``predictions.jsonl`` (task and batch order)."""
    instance_id: str
    task: str
    sample_id: str
    scenario: str
    row_index: int
    gold: str
    """The gold answer as text (a label, a name, or JSON for ER/VP)."""
    predicted: str
    """The top-1 answer (``<invalid>`` for an invalid prediction), or JSON for ER/VP."""
    valid: bool
    correct: bool | None
    """Top-1 correctness (ITP, RPP, STP, SSP); ``None`` for ER and VP."""
    failure: str
    """The kind of the first problem (:data:`FAILURE_KINDS`), or ``""``."""
    problems: tuple[str, ...]
    judge_score: float | None
    disagreement: float | None
    """Largest minus smallest LLM judge score of the instance (two judges or more)."""
    request_key: str | None
    prev_gold: str
    """The pattern task (RPP): the previous in-taxonomy gold label of the same conversation (the transition
    heatmap's row)."""
    gold_kind: str
    pred_kind: str
    """A task whose golds are people (STP): gold and prediction as kinds (group, same person, other person),
    as its confusion matrix."""
    search: str
    """Lower-cased prediction and reply text, for the text search."""
    repeat: int = 0
    """Which ask of the instance this is (``--repeats``; 0 in a run without repeats)."""

    @property
    def key(self) -> tuple[str, int]:
        """The row's (instance, repeat): unique in a run."""
        return self.instance_id, self.repeat


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def cut(text: str, cap: int = LIST_TEXT_CAP) -> str:
    """``text`` as the list shows it: at most ``cap`` characters, and how many more there are.

    >>> cut("abcdef", 3), cut("abc", 3)
    ('abc… (3 more characters)', 'abc')
    """
    return text if len(text) <= cap else f"{text[:cap]}… ({len(text) - cap:,} more characters)"


def failure_kind(problems: Sequence[str], scores: Mapping[str, Any], task: str) -> str:
    """The kind of the first problem, or ``judge_unscored`` for an ER/VP instance no judge could score.

    >>> failure_kind(["normalized: 'X' -> 'x'", "invalid_label: 'foo'"], {}, "rpp")
    'invalid_label'
    >>> failure_kind([], {"s_emo": None}, "er"), failure_kind([], {"s_emo": 4.0}, "er")
    ('judge_unscored', '')
    """
    for problem in problems:
        kind = problem.split(":", 1)[0]
        if kind in FAILURE_KINDS:
            return kind
    if task in JUDGE_SCORE and JUDGE_SCORE[task] in scores and scores[JUDGE_SCORE[task]] is None:
        return "judge_unscored"
    return ""


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def disagreement(record: PredictionLine, lines: Sequence[JudgmentLine]) -> float | None:
    """Spread of the LLM judges' scores on the instance's present prediction (``None`` below two judges).

    >>> rec = PredictionLine(instance_id="i", task="er", valid=True, prediction="x")
    >>> line = JudgmentLine(instance_id="i", task="er", judge="a", valid=True, scores={"s_emo": 2})
    >>> disagreement(rec, [line, line.model_copy(update={"judge": "b", "scores": {"s_emo": 5}})])
    3.0
    """
    if record.task not in JUDGED_TASKS:
        return None
    key = AGREEMENT_KEY[record.task]
    values = [
        v
        for line in current_lines(record, lines)
        if line.judge != BERTSCORE_JUDGE and line.valid
        if (v := _number(line.scores.get(key))) is not None
    ]
    return max(values) - min(values) if len(values) >= 2 else None


def _previous_golds(records: Sequence[PredictionLine]) -> dict[str, str]:
    """Instance id of the pattern task (``TaskInfo.pattern_analyses``, RPP) -> the gold of the previous
    in-taxonomy row of that task in its conversation."""
    pattern_tasks = {info.name for info in task_infos() if info.pattern_analyses}
    by_sample: dict[str, list[PredictionLine]] = {}
    for r in records:
        if r.task in pattern_tasks:
            by_sample.setdefault(r.sample_id, []).append(r)
    out: dict[str, str] = {}
    for members in by_sample.values():
        allowed = set(relation_labels(members[0].scenario))  # type: ignore[arg-type]
        previous = ""
        for r in sorted(members, key=lambda r: r.row_index):
            out[r.instance_id] = previous
            if str(r.gold) in allowed:
                previous = str(r.gold)
    return out


def _correct(task: str, record: PredictionLine) -> bool | None:
    return correct_top1(task_info(task).kind, record) if task in mcnemar_tasks() else None


def _target_kind_tasks() -> set[str]:
    return {info.name for info in task_infos() if info.target_kinds}


def make_row(
    position: int,
    record: PredictionLine,
    lines: Sequence[JudgmentLine],
    reply_text: str,
    prev_gold: str,
) -> InstanceRow:
    """The list row of one prediction record (judgments folded in)."""
    task = record.task
    scores = record.scores
    problems = record.problems
    generation = task in JUDGED_TASKS
    value = record.prediction
    predicted = _text(value) if generation and value is not None else top1(record)
    kinds = target_kind(str(record.gold), predicted) if task in _target_kind_tasks() else ("", "")
    return InstanceRow(
        position=position,
        instance_id=record.instance_id,
        task=task,
        sample_id=record.sample_id,
        scenario=record.scenario,
        row_index=record.row_index,
        gold=cut(_text(record.gold)),
        predicted=cut(predicted),
        valid=record.valid,
        correct=_correct(task, record),
        failure=failure_kind(problems, scores, task),
        problems=tuple(cut(p) for p in problems),
        judge_score=_number(scores.get(JUDGE_SCORE[task])) if generation else None,
        disagreement=disagreement(record, lines),
        request_key=record.request_key or None,
        prev_gold=prev_gold,
        gold_kind=kinds[0],
        pred_kind=kinds[1],
        search=f"{_text(record.prediction)}\n{reply_text}".lower(),
        repeat=record.repeat,
    )


def index_rows(
    records: Sequence[PredictionLine],
    judgments: Mapping[str, Sequence[JudgmentLine]],
    reply_texts: Mapping[tuple[str, int], str],
) -> list[InstanceRow]:
    """One row per record, in file order; ``reply_texts`` by (request key, repeat)."""
    previous = _previous_golds(records)
    return [
        make_row(
            position,
            record,
            judgments.get(record.key, ()),
            reply_texts.get((str(record.request_key), record.repeat), ""),
            previous.get(record.instance_id, ""),
        )
        for position, record in enumerate(records)
    ]
