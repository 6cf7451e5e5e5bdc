"""Scores of the generation tasks (ER, VP): the formula scores, and their aggregation over instances.

Aggregation works on the per-instance ``scores`` of ``predictions.jsonl`` (see docs/design.md) and follows
two rules:

* **An invalid prediction** (failed request, unparsable, missing) scores at the floor whatever its record
  says: ER ``s_int = s_emo = s_er = 1`` and BERTScore 0; VP pairing, viewpoint and total 0 (so ``llm`` 1) and
  BERTScore 0. It is counted in every mean, never dropped.
* **An unscored judge verdict** is different: the prediction was fine but the judge gave no usable score even
  after one re-ask (a judge failure, recorded as the judge key present with ``null``). Averaging it as a floor
  would blame the candidate model for the judge, and guessing a score would invent data, so it is **left out
  of the judge means and counted** as ``n_unscored`` next to them. Formula and BERTScore means still cover
  every instance.

A judge mean is ``None`` ("not judged") when no valid instance carries the judge key at all, i.e. the run was
never judged, and when no instance got a usable verdict (a judge that could not be reached, or whose every
verdict was unscored); likewise ``bertscore_f1`` is ``None`` when no instance has a BERTScore. A mean over
zero items is ``None`` (shown "–"), never 0.0: a judge scale starts at 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rescue_bench.metrics.classification import FloatArray, safe_div
from rescue_bench.records import Json

INTENSITY_FLOOR = 1.0
EMOTION_FLOOR = 1.0
BERTSCORE_FLOOR = 0.0


def intensity_score(predicted: int | None, gold: int) -> float:
    """The paper's S_int = max(1, 5 - |predicted - gold|); a missing prediction gets the floor, 1.

    >>> intensity_score(7, 7), intensity_score(5, 7), intensity_score(0, 10), intensity_score(None, 3)
    (5.0, 3.0, 1.0, 1.0)
    """
    if predicted is None:
        return INTENSITY_FLOOR
    return float(max(1, 5 - abs(predicted - gold)))


def emotion_score(s_emo: float, s_int: float) -> float:
    """The paper's final ER score S_ER = (S_emo + S_int) / 2, on 1-5.

    >>> emotion_score(4, 3)
    3.5
    """
    return (s_emo + s_int) / 2


def viewpoint_to_five(total: float) -> float:
    """Map the VP judge total (pairing 0-2 + viewpoint 0-4, so 0-6) linearly onto the paper's 1-5 scale.

    >>> viewpoint_to_five(0), viewpoint_to_five(6), viewpoint_to_five(3)
    (1.0, 5.0, 3.0)
    """
    return 1.0 + 4.0 * total / 6.0


Scores = Mapping[str, Json]


def score_value(scores: Scores, key: str) -> float | None:
    """A numeric score, or ``None`` when the key is absent, null or NaN.

    >>> score_value({"s_emo": 4}, "s_emo"), score_value({"s_emo": None}, "s_emo"), score_value({}, "s_emo")
    (4.0, None, None)
    """
    value = scores.get(key)
    if value is None or isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


def emotion_features(scores: Scores, valid: bool = True) -> list[float]:
    """Per-instance ER vector ``[1, s_int, judged, s_er, s_emo, has_bert, bertscore_f1]``; its sums give every
    ER mean (:func:`emotion_from_sums`). Judge and BERTScore parts are 0 when those scores are missing.

    >>> emotion_features({"s_int": 3.0, "s_emo": 5.0}), emotion_features({"s_emo": 5.0}, valid=False)
    ([1.0, 3.0, 1.0, 4.0, 5.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    """
    if not valid:
        return [
            1.0,
            INTENSITY_FLOOR,
            1.0,
            emotion_score(EMOTION_FLOOR, INTENSITY_FLOOR),
            EMOTION_FLOOR,
            1.0,
            BERTSCORE_FLOOR,
        ]
    s_int = score_value(scores, "s_int")
    s_int = INTENSITY_FLOOR if s_int is None else s_int
    s_emo = score_value(scores, "s_emo")
    bert = score_value(scores, "bertscore_f1")
    bert_part = [float(bert is not None), bert or 0.0]
    if s_emo is None:
        return [1.0, s_int, 0.0, 0.0, 0.0, *bert_part]
    s_er = score_value(scores, "s_er")
    return [1.0, s_int, 1.0, emotion_score(s_emo, s_int) if s_er is None else s_er, s_emo, *bert_part]


def emotion_from_sums(sums: FloatArray) -> dict[str, FloatArray]:
    """ER means from summed :func:`emotion_features` (works on stacks ``(..., 7)``). ``llm`` is the paper's
    column: the mean S_ER over judged instances.

    >>> {k: float(v) for k, v in emotion_from_sums(np.array([2.0, 8.0, 1.0, 4.0, 5.0, 0.0, 0.0])).items()}
    {'llm': 4.0, 's_emo': 5.0, 's_int': 4.0, 'bertscore_f1': 0.0}
    """
    s = np.asarray(sums, dtype=np.float64)
    return {
        "llm": safe_div(s[..., 3], s[..., 2]),
        "s_emo": safe_div(s[..., 4], s[..., 2]),
        "s_int": safe_div(s[..., 1], s[..., 0]),
        "bertscore_f1": safe_div(s[..., 6], s[..., 5]),
    }


def viewpoint_integer(total: float) -> float:
    """The integer reading of the VP judge scale (``--vp-judge-scale integer``): an instance's
    :func:`viewpoint_to_five` rounded to a whole 1-5 score (thirds never tie, so no rounding rule matters).

    >>> [viewpoint_integer(t) for t in range(7)]
    [1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0]
    """
    return float(math.floor(viewpoint_to_five(total) + 0.5))


def viewpoint_features(scores: Scores, valid: bool = True) -> list[float]:
    """Per-instance VP vector ``[1, judged, pairing, viewpoint, llm, has_bert, bertscore_f1]``
    (see :func:`viewpoint_from_sums`). The total is pairing + viewpoint by definition; ``llm`` is the
    instance's own 1-5 score when it carries one (the judge pass sets it by the run's VP judge scale), else
    :func:`viewpoint_to_five` of the total.

    >>> viewpoint_features({"pairing": 2, "viewpoint": 3, "bertscore_f1": 0.8})
    [1.0, 1.0, 2.0, 3.0, 4.333333333333334, 1.0, 0.8]
    >>> viewpoint_features({"pairing": 2, "viewpoint": 3, "llm": 4.0})[4]
    4.0
    >>> viewpoint_features({}, valid=False)
    [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0]
    """
    if not valid:
        return [1.0, 1.0, 0.0, 0.0, viewpoint_to_five(0.0), 1.0, BERTSCORE_FLOOR]
    pairing, viewpoint = score_value(scores, "pairing"), score_value(scores, "viewpoint")
    bert = score_value(scores, "bertscore_f1")
    if pairing is None or viewpoint is None:
        return [1.0, 0.0, 0.0, 0.0, 0.0, float(bert is not None), bert or 0.0]
    llm = score_value(scores, "llm")
    llm = viewpoint_to_five(pairing + viewpoint) if llm is None else llm
    return [1.0, 1.0, pairing, viewpoint, llm, float(bert is not None), bert or 0.0]


def viewpoint_from_sums(sums: FloatArray) -> dict[str, FloatArray]:
    """VP means from summed :func:`viewpoint_features` (works on stacks ``(..., 7)``): ``llm`` the mean of
    the instances' 1-5 scores (by default :func:`viewpoint_to_five` of the total, linear, so the map of the
    mean total); 0.0 when nothing is judged.

    >>> {k: float(v) for k, v in viewpoint_from_sums(np.array([2.0, 2.0, 2.0, 4.0, 6.0, 2.0, 1.6])).items()}
    {'llm': 3.0, 'total_0_6': 3.0, 'pairing': 1.0, 'viewpoint': 2.0, 'bertscore_f1': 0.8}
    """
    s = np.asarray(sums, dtype=np.float64)
    return {
        "llm": np.where(s[..., 1] > 0, safe_div(s[..., 4], s[..., 1]), 0.0),
        "total_0_6": safe_div(s[..., 2] + s[..., 3], s[..., 1]),
        "pairing": safe_div(s[..., 2], s[..., 1]),
        "viewpoint": safe_div(s[..., 3], s[..., 1]),
        "bertscore_f1": safe_div(s[..., 6], s[..., 5]),
    }


@dataclass(frozen=True, slots=True)
class GenerationMetrics:
    """How a generation task's per-instance scores become means (see the module docstring)."""

    features: Callable[[Scores, bool], list[float]]
    """The per-instance feature vector (width 7) from the record's ``scores`` and validity."""
    from_sums: Callable[[FloatArray], dict[str, FloatArray]]
    """Metric values from summed features."""
    judge_keys: tuple[str, ...]
    """Score keys the judge writes; all must be numeric for a judged instance."""
    judge_metrics: tuple[str, ...]
    """Means that come from the judge (``None`` when the run was never judged)."""
    judged_column: int
    """The feature column counting judged instances."""


EMOTION = GenerationMetrics(emotion_features, emotion_from_sums, ("s_emo",), ("llm", "s_emo"), 2)
"""ER: S_int from the formula, S_emo from the judge, ``llm`` their mean S_ER."""
VIEWPOINT = GenerationMetrics(
    viewpoint_features,
    viewpoint_from_sums,
    ("pairing", "viewpoint"),
    ("llm", "total_0_6", "pairing", "viewpoint"),
    1,
)
"""VP: pairing 0-2 and viewpoint 0-4 from the judge, ``llm`` their total mapped onto 1-5."""


def generation_summary(
    metrics: GenerationMetrics, scores: Sequence[Scores], valid: Sequence[bool] | None = None
) -> dict[str, Any]:
    """Means of an ER or VP task over instances, with ``n``, ``n_judged``, ``n_unscored`` and ``n_bertscore``.

    See the module docstring for the floor of invalid predictions, the exclusion (and count) of unscored judge
    verdicts, and ``None`` for scores that were never computed.

    >>> scores = [{"s_int": 5, "s_emo": 4}, {"s_int": 3, "s_emo": None}, {}]
    >>> er = generation_summary(EMOTION, scores, [True, True, False])
    >>> er["n"], er["n_judged"], er["n_unscored"], er["llm"], er["s_emo"], er["s_int"], er["bertscore_f1"]
    (3, 2, 1, 2.75, 2.5, 3.0, None)
    >>> generation_summary(VIEWPOINT, [{"pairing": 2, "viewpoint": 4}])["llm"]
    5.0
    >>> generation_summary(VIEWPOINT, [])["llm"] is None
    True
    >>> generation_summary(EMOTION, [{"s_int": 5, "s_emo": None}])["llm"] is None  # every verdict unscored
    True
    """
    valid = [True] * len(scores) if valid is None else list(valid)
    if len(valid) != len(scores):
        raise ValueError(f"{len(scores)} score records but {len(valid)} validity flags")
    rows = [metrics.features(s, v) for s, v in zip(scores, valid, strict=True)]
    sums = np.asarray(rows, dtype=np.float64).reshape(-1, 7).sum(axis=0)
    out: dict[str, Any] = {k: float(v) for k, v in metrics.from_sums(sums).items()}
    out["n"], out["n_judged"] = len(scores), int(sums[metrics.judged_column])
    out["n_bertscore"] = int(sums[5])
    valid_scores = [s for s, v in zip(scores, valid, strict=True) if v]
    keys = metrics.judge_keys
    out["n_unscored"] = sum(
        1
        for s in valid_scores
        if any(k in s for k in keys) and not (all(score_value(s, k) is not None for k in keys))
    )
    # A judged run gives its invalid answers the judge's floors (judge.merge): a run never judged has no judge
    # key on any line, valid or not, and its judge means are None (a degraded run of invalid answers with no
    # judge shows "–", not LLM 1.00); likewise BERTScore.
    never_judged = not any(k in s for s in scores for k in keys)
    if never_judged or out["n_judged"] == 0:
        out.update(dict.fromkeys(metrics.judge_metrics))
    never_bertscored = not any("bertscore_f1" in s for s in scores)
    if never_bertscored or out["n_bertscore"] == 0:
        out["bertscore_f1"] = None
    return out
