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
from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean
from typing import Any

from rescue_bench.judge.agreement import inter_judge_agreement
from rescue_bench.judge.rubric import judge_rubric
from rescue_bench.tasks import judged_tasks

Record = Mapping[str, Any]
BERTSCORE_JUDGE = "bertscore"
JUDGED_TASKS = judged_tasks()
JUDGE_SCORE_KEYS = {task: judge_rubric(task).score_keys for task in JUDGED_TASKS}
AGREEMENT_KEY = {task: judge_rubric(task).agreement_key for task in JUDGED_TASKS}
"""The judge score compared between judges (and with humans)."""


def prediction_fingerprint(record: Record) -> str:
    """A short hash of what was judged: the prediction and whether it was valid.

    A judgment line carries the fingerprint of the prediction it scored (``prediction_hash``), so that a line
    about an earlier prediction of the same instance (``run --retry-failed`` replaced it) is neither folded in
    nor taken as done. Lines written before fingerprints existed have none and count as current.

    >>> a = prediction_fingerprint({"valid": True, "prediction": {"emotion": "sad", "intensity": 3}})
    >>> a == prediction_fingerprint({"prediction": {"intensity": 3, "emotion": "sad"}, "valid": True})
    True
    >>> a == prediction_fingerprint({"valid": False, "prediction": {"emotion": "sad", "intensity": 3}})
    False
    """
    canonical = json.dumps(
        [bool(record.get("valid")), record.get("prediction")], sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def is_current(line: Record, fingerprint: str) -> bool:
    """Whether a judgment line scored the prediction with this fingerprint (or predates fingerprints)."""
    return line.get("prediction_hash") in (None, fingerprint)


def current_lines(record: Record, lines: Iterable[Record]) -> list[Record]:
    """The judgment lines of one record that scored its present prediction, the last one per judge.

    >>> rec = {"valid": True, "prediction": "new"}
    >>> old = {"judge": "a/x", "prediction_hash": prediction_fingerprint({**rec, "prediction": "old"})}
    >>> new = {"judge": "a/x", "prediction_hash": prediction_fingerprint(rec), "n": 2}
    >>> current_lines(rec, [old, new, {"judge": "b/y"}])
    [{'judge': 'a/x', 'prediction_hash': '...', 'n': 2}, {'judge': 'b/y'}]
    """
    fingerprint = prediction_fingerprint(record)
    last: dict[str, Record] = {}
    for line in lines:
        if is_current(line, fingerprint):
            last.pop(str(line.get("judge")), None)
            last[str(line.get("judge"))] = line
    return list(last.values())


def judge_names(judgments: Iterable[Record]) -> list[str]:
    """LLM judges that appear in ``judgments``, in first-seen order (BERTScore excluded).

    >>> judge_names([{"judge": "b/x"}, {"judge": "bertscore"}, {"judge": "a/y"}, {"judge": "b/x"}])
    ['b/x', 'a/y']
    """
    return list(dict.fromkeys(str(j["judge"]) for j in judgments if j.get("judge") != BERTSCORE_JUDGE))


def _judge_means(task: str, lines: Sequence[Record]) -> dict[str, float | None]:
    valid = [line["scores"] for line in lines if line.get("valid")]
    keys = JUDGE_SCORE_KEYS[task]
    if not valid:
        return dict.fromkeys(keys)
    means: dict[str, float | None] = {k: fmean(float(s[k]) for s in valid) for k in keys}
    return means


def merged_scores(record: Record, lines: Sequence[Record], judged: bool) -> dict[str, Any]:
    """The ``scores`` of one ER/VP record with its judgment lines folded in.

    ``judged`` says whether the run was judged at all (then an invalid prediction gets the judge floors).

    >>> rec = {"task": "er", "valid": True, "scores": {"s_int": 3.0}}
    >>> lines = [{"judge": "a/x", "valid": True, "scores": {"s_emo": 4.0}},
    ...          {"judge": "b/y", "valid": True, "scores": {"s_emo": 5.0}},
    ...          {"judge": "bertscore", "valid": True, "scores": {"bertscore_f1": 0.8}}]
    >>> merged_scores(rec, lines, judged=True)
    {'s_int': 3.0, 'bertscore_f1': 0.8, 's_emo': 4.5, 's_er': 3.75}
    >>> merged_scores({"task": "vp", "valid": False, "scores": {}}, [], judged=True)
    {'pairing': 0.0, 'viewpoint': 0.0, 'total': 0.0, 'llm': 1.0}
    """
    task = str(record["task"])
    scores: dict[str, Any] = dict(record.get("scores") or {})
    bert = [line for line in lines if line.get("judge") == BERTSCORE_JUDGE and line.get("valid")]
    if bert:
        scores["bertscore_f1"] = float(bert[-1]["scores"]["bertscore_f1"])
    verdicts = [line for line in lines if line.get("judge") != BERTSCORE_JUDGE]
    if not record.get("valid"):
        if judged:
            scores.update(judge_rubric(task).floors)
        return _derived(task, record, scores) if judged else scores
    if not verdicts:
        return scores
    scores.update(_judge_means(task, verdicts))
    return _derived(task, record, scores)


def _derived(task: str, record: Record, scores: dict[str, Any]) -> dict[str, Any]:
    derive = judge_rubric(task).derive
    scores.update(derive(scores, record.get("gold"), record.get("prediction"), bool(record.get("valid"))))
    return scores


def judged_records(predictions: Iterable[Record], judgments: Iterable[Record]) -> list[dict[str, Any]]:
    """Prediction records with their judgments folded into ``scores`` (other tasks pass through unchanged)."""
    by_instance: dict[str, list[Record]] = {}
    judgment_list = list(judgments)
    for line in judgment_list:
        by_instance.setdefault(str(line["instance_id"]), []).append(line)
    judged = bool(judge_names(judgment_list))
    out = []
    for record in predictions:
        if record.get("task") in JUDGED_TASKS:
            lines = current_lines(record, by_instance.get(str(record["instance_id"]), []))
            record = {**record, "scores": merged_scores(record, lines, judged)}
        out.append(dict(record))
    return out


def judge_values(judgments: Iterable[Record], task: str) -> dict[str, dict[str, float | None]]:
    """Per judge, per instance, the score compared across judges (ER ``s_emo``, VP ``total``); ``None`` for an
    unscored verdict.

    >>> line = {"judge": "a/x", "task": "vp", "instance_id": "i", "valid": True, "scores": {"total": 5.0}}
    >>> judge_values([line, {**line, "instance_id": "j", "valid": False, "scores": {}}], "vp")
    {'a/x': {'i': 5.0, 'j': None}}
    """
    key = AGREEMENT_KEY[task]
    out: dict[str, dict[str, float | None]] = {}
    for line in judgments:
        if line.get("task") != task or line.get("judge") == BERTSCORE_JUDGE:
            continue
        scores = line.get("scores") or {}
        value = float(scores[key]) if line.get("valid") and key in scores else None
        out.setdefault(str(line["judge"]), {})[str(line["instance_id"])] = value
    return out


SCALES = {task: judge_rubric(task).scale for task in JUDGED_TASKS}
"""The ordinal value domain of the compared judge score."""


def judge_agreement(judgments: Iterable[Record]) -> dict[str, Any]:
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
