"""Folding ``judgments.jsonl`` into the per-instance ER and VP scores that aggregation reads.

Per instance, after judging (keys as in docs/design.md):

* ER: ``s_emo`` (judge, 1-5), ``s_int`` (formula), ``s_er = (s_emo + s_int) / 2``, ``bertscore_f1``;
* VP: ``pairing`` 0-2, ``viewpoint`` 0-4, ``total`` (their sum, recomputed), ``llm = vp_to_five(total)``,
  ``bertscore_f1``.

Several judges: each judge score is the mean over the judges that gave a valid verdict. An instance that no
judge could score keeps the judge keys with ``null`` (unscored: left out of the judge means and counted by
:mod:`rescue_bench.metrics.generation`). An invalid prediction gets the floors (ER ``s_emo`` 1, VP 0).
BERTScore lines live in ``judgments.jsonl`` too, under the judge name ``bertscore``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from statistics import fmean
from typing import Any

from rescue_bench.judge.agreement import inter_judge_agreement
from rescue_bench.judge.rubric import judge_rubric
from rescue_bench.records import Json, ProblemKind
from rescue_bench.rundir import JudgmentLine, PredictionLine
from rescue_bench.tasks import judged_tasks

BERTSCORE_JUDGE = "bertscore"
JUDGED_TASKS = judged_tasks()
JUDGE_SCORE_KEYS = {task: judge_rubric(task).score_keys for task in JUDGED_TASKS}
AGREEMENT_KEY = {task: judge_rubric(task).agreement_key for task in JUDGED_TASKS}
"""The judge score compared between judges (and with humans)."""


AFTER_REASK = "after re-ask: "


def no_verdict(line: JudgmentLine) -> bool:
    """Whether a judgment line records a verdict the judge never gave (its request got no answer).

    Unlike an unscored verdict (the judge answered, unusably), this is unfinished work: the next pass asks it
    again, and until then the instance counts as not judged.

    >>> line = JudgmentLine(instance_id="i", task="er", judge="a/j", valid=False,
    ...                     problems=("out_of_range: 9", "after re-ask: request_failed: HTTP 503"))
    >>> no_verdict(line), no_verdict(line.model_copy(update={"problems": ("out_of_range: 9",)}))
    (True, False)
    """
    if line.valid or not line.problems:
        return False
    return ProblemKind.of(line.problems[-1].removeprefix(AFTER_REASK)) is ProblemKind.REQUEST_FAILED


def prediction_fingerprint(valid: bool, prediction: Json) -> str:
    """A short hash of what was judged: the prediction and whether it was valid.

    A judgment line carries the fingerprint of the prediction it scored (``prediction_hash``), so that a line
    about an earlier prediction of the same instance (``run --retry-failed`` replaced it) is neither folded in
    nor taken as done. Lines written before fingerprints existed have none and count as current.

    >>> a = prediction_fingerprint(True, {"emotion": "sad", "intensity": 3})
    >>> a == prediction_fingerprint(True, {"intensity": 3, "emotion": "sad"})
    True
    >>> a == prediction_fingerprint(False, {"emotion": "sad", "intensity": 3})
    False
    """
    canonical = json.dumps([valid, prediction], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def fingerprint_of(record: PredictionLine) -> str:
    return prediction_fingerprint(record.valid, record.prediction)


def is_current(line: JudgmentLine, fingerprint: str) -> bool:
    """Whether a judgment line scored the prediction with this fingerprint (or predates fingerprints)."""
    return line.prediction_hash in (None, fingerprint)


def current_lines(record: PredictionLine, lines: Iterable[JudgmentLine]) -> list[JudgmentLine]:
    """The judgment lines of one record that scored its present prediction, the last one per judge and judge
    repeat.

    >>> rec = PredictionLine(instance_id="i", task="er", valid=True, prediction="new")
    >>> line = JudgmentLine(instance_id="i", task="er", judge="a/x", valid=True)
    >>> old = line.model_copy(update={"prediction_hash": prediction_fingerprint(True, "old")})
    >>> new = line.model_copy(update={"prediction_hash": fingerprint_of(rec), "valid": False})
    >>> [(j.judge, j.valid) for j in current_lines(rec, [old, new, line.model_copy(update={"judge": "b/y"})])]
    [('a/x', False), ('b/y', True)]
    """
    fingerprint = fingerprint_of(record)
    last: dict[tuple[str, int], JudgmentLine] = {}
    for line in lines:
        if is_current(line, fingerprint):
            last.pop((line.judge, line.judge_repeat), None)
            last[(line.judge, line.judge_repeat)] = line
    return list(last.values())


def judge_names(judgments: Iterable[JudgmentLine]) -> list[str]:
    """LLM judges that appear in ``judgments``, in first-seen order (BERTScore excluded).

    >>> lines = [JudgmentLine(instance_id="i", task="er", judge=j, valid=True) for j in ("b/x", "bertscore")]
    >>> judge_names([*lines, lines[0].model_copy(update={"judge": "a/y"})])
    ['b/x', 'a/y']
    """
    return list(dict.fromkeys(j.judge for j in judgments if j.judge != BERTSCORE_JUDGE))


def _judge_means(task: str, lines: Sequence[JudgmentLine]) -> dict[str, float | None]:
    valid = [line.scores for line in lines if line.valid]
    keys = JUDGE_SCORE_KEYS[task]
    if not valid:
        return dict.fromkeys(keys)
    means: dict[str, float | None] = {k: fmean(number(s[k]) for s in valid) for k in keys}
    return means


def number(value: float | None) -> float:
    """A valid judgment line's score as a float (a null one is a broken line)."""
    if value is None:
        raise TypeError("a valid judgment line has a null score")
    return float(value)


def merged_scores(record: PredictionLine, lines: Sequence[JudgmentLine], judged: bool) -> dict[str, Any]:
    """The ``scores`` of one ER/VP record with its judgment lines folded in.

    ``judged`` says whether the run was judged at all (then an invalid prediction gets the judge floors).

    >>> rec = PredictionLine(instance_id="i", task="er", valid=True, scores={"s_int": 3.0})
    >>> lines = [JudgmentLine(instance_id="i", task="er", judge=j, valid=True, scores=s) for j, s in [
    ...     ("a/x", {"s_emo": 4.0}), ("b/y", {"s_emo": 5.0}), ("bertscore", {"bertscore_f1": 0.8})]]
    >>> merged_scores(rec, lines, judged=True)
    {'s_int': 3.0, 'bertscore_f1': 0.8, 's_emo': 4.5, 's_er': 3.75}
    >>> merged_scores(PredictionLine(instance_id="i", task="vp"), [], judged=True)
    {'pairing': 0.0, 'viewpoint': 0.0, 'total': 0.0, 'llm': 1.0}
    """
    task = record.task
    scores: dict[str, Any] = dict(record.scores)
    bert = [line for line in lines if line.judge == BERTSCORE_JUDGE and line.valid]
    if bert:
        scores["bertscore_f1"] = number(bert[-1].scores["bertscore_f1"])
    verdicts = [line for line in lines if line.judge != BERTSCORE_JUDGE]
    if not record.valid:
        if judged:
            scores.update(judge_rubric(task).floors)
        return _derived(task, record, scores) if judged else scores
    if not verdicts:
        return scores
    scores.update(_judge_means(task, verdicts))
    return _derived(task, record, scores)


def _derived(task: str, record: PredictionLine, scores: dict[str, Any]) -> dict[str, Any]:
    derive = judge_rubric(task).derive
    scores.update(derive(scores, record.gold, record.prediction, record.valid))
    return scores


def judged_lines(
    predictions: Iterable[PredictionLine], judgments: Iterable[JudgmentLine]
) -> list[PredictionLine]:
    """Prediction lines with their judgments folded into ``scores`` (other tasks pass through unchanged).

    Judgments join predictions by line key (instance and repeat); a judge's repeats are pooled in its mean.
    """
    by_key: dict[str, list[JudgmentLine]] = {}
    judgment_list = list(judgments)
    for line in judgment_list:
        if not no_verdict(line):  # no verdict yet: the instance is not judged (not unscored)
            by_key.setdefault(line.key, []).append(line)
    judged = bool(judge_names(judgment_list))
    out: list[PredictionLine] = []
    for record in predictions:
        if record.task in JUDGED_TASKS:
            lines = current_lines(record, by_key.get(record.key, []))
            record = record.model_copy(update={"scores": merged_scores(record, lines, judged)})
        out.append(record)
    return out


def judge_repeat_count(judgments: Iterable[JudgmentLine]) -> int:
    """How often each reply was judged (``judge_repeats``): 1 + the highest judge repeat present."""
    return 1 + max((line.judge_repeat for line in judgments), default=0)


def judge_repeat_lines(
    predictions: Iterable[PredictionLine], judgments: Sequence[JudgmentLine], judge_repeats: int
) -> list[PredictionLine]:
    """The judged tasks' lines once per (repeat r, judge repeat j), as repeat ``r * judge_repeats + j``, each
    with only judge repeat j's verdicts folded in (BERTScore, asked once, in all): the aggregation of
    repeats (:mod:`rescue_bench.metrics.repeats`) then sees every (prediction, verdict) ask as a repeat."""
    judged = [p for p in predictions if p.task in JUDGED_TASKS]
    out: list[PredictionLine] = []
    for j in range(judge_repeats):
        mine = [x for x in judgments if x.judge == BERTSCORE_JUDGE or x.judge_repeat == j]
        for line in judged_lines(judged, mine):
            out.append(line.model_copy(update={"repeat": line.repeat * judge_repeats + j}))
    return out


def judge_values(judgments: Iterable[JudgmentLine], task: str) -> dict[str, dict[str, float | None]]:
    """Per judge, per instance, the score compared across judges (ER ``s_emo``, VP ``total``); ``None`` for an
    unscored verdict.

    >>> line = JudgmentLine(judge="a/x", task="vp", instance_id="i", valid=True, scores={"total": 5.0})
    >>> judge_values([line, line.model_copy(update={"instance_id": "j", "valid": False})], "vp")
    {'a/x': {'i': 5.0, 'j': None}}
    """
    key = AGREEMENT_KEY[task]
    out: dict[str, dict[str, float | None]] = {}
    for line in judgments:
        if line.task != task or line.judge == BERTSCORE_JUDGE:
            continue
        value = line.scores[key] if line.valid and key in line.scores else None
        item = line.key if line.judge_repeat == 0 else f"{line.key}@{line.judge_repeat}"
        out.setdefault(line.judge, {})[item] = None if value is None else float(value)
    return out


SCALES = {task: judge_rubric(task).scale for task in JUDGED_TASKS}
"""The ordinal value domain of the compared judge score."""


def judge_agreement(judgments: Iterable[JudgmentLine]) -> dict[str, Any]:
    """Inter-judge agreement per task (:func:`rescue_bench.judge.agreement.inter_judge_agreement`): ordinal
    Krippendorff's alpha, exact agreement and MAE of ER ``s_emo`` (1-5) and VP ``total`` (0-6)."""
    lines = list(judgments)
    out: dict[str, Any] = {}
    for task in JUDGED_TASKS:
        ratings = judge_values(lines, task)
        if len(ratings) >= 2:
            out[task] = {
                "score": AGREEMENT_KEY[task],
                **inter_judge_agreement(ratings, value_domain=SCALES[task]),
            }
    return out
