"""ER and VP aggregation: floors for invalid predictions, unscored judge verdicts excluded but counted."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rescue_bench.metrics.generation import (
    EMOTION,
    VIEWPOINT,
    emotion_features,
    emotion_from_sums,
    generation_summary,
    intensity_score,
    score_value,
    viewpoint_features,
    viewpoint_from_sums,
    viewpoint_to_five,
)


def test_er_summary_hand_computed() -> None:
    scores: list[dict[str, float | None]] = [
        {"s_int": 5.0, "s_emo": 4.0, "bertscore_f1": 0.9},  # s_er 4.5
        {"s_int": 3.0, "s_emo": 2.0, "s_er": 2.5, "bertscore_f1": 0.7},
        {"s_int": 4.0, "s_emo": None, "bertscore_f1": 0.8},  # judge failed: out of judge means, counted
        {"s_int": 5.0, "s_emo": 5.0, "bertscore_f1": 0.99},  # invalid: floors whatever the record says
    ]
    out = generation_summary(EMOTION, scores, [True, True, True, False])
    assert out["n"] == 4 and out["n_judged"] == 3 and out["n_unscored"] == 1 and out["n_bertscore"] == 4
    assert out["llm"] == pytest.approx((4.5 + 2.5 + 1.0) / 3)
    assert out["s_emo"] == pytest.approx((4 + 2 + 1) / 3)
    assert out["s_int"] == pytest.approx((5 + 3 + 4 + 1) / 4)
    assert out["bertscore_f1"] == pytest.approx((0.9 + 0.7 + 0.8 + 0.0) / 4)


def test_er_never_judged_gives_none_not_a_floor() -> None:
    out = generation_summary(EMOTION, [{"s_int": 5.0}, {"s_int": 1.0}], [True, False])
    assert out["llm"] is None and out["s_emo"] is None and out["bertscore_f1"] is None
    assert out["s_int"] == 3.0 and out["n_unscored"] == 0


def test_er_all_invalid_scores_the_floor() -> None:
    # A judged and BERTScored run: its invalid answers carry the floors the judge pass folds in.
    floors = {"s_emo": 1.0, "bertscore_f1": 0.0}
    out = generation_summary(EMOTION, [floors, floors], [False, False])
    assert out["llm"] == 1.0 and out["s_int"] == 1.0 and out["bertscore_f1"] == 0.0


def test_er_all_invalid_and_never_judged_has_no_judge_or_bertscore_mean() -> None:
    out = generation_summary(EMOTION, [{}, {}], [False, False])
    assert out["llm"] is None and out["bertscore_f1"] is None and out["s_int"] == 1.0


def test_er_missing_intensity_score_is_the_floor_and_nan_is_unscored() -> None:
    out = generation_summary(EMOTION, [{"s_emo": 3.0}, {"s_int": 5.0, "s_emo": math.nan}])
    assert out["s_int"] == pytest.approx((1.0 + 5.0) / 2)
    assert out["n_judged"] == 1 and out["n_unscored"] == 1
    assert out["llm"] == pytest.approx(2.0)


def test_vp_summary_hand_computed_and_linear_map() -> None:
    scores: list[dict[str, float | None]] = [
        {"pairing": 2.0, "viewpoint": 4.0, "bertscore_f1": 0.9},
        {"pairing": 1.0, "viewpoint": 1.0, "bertscore_f1": 0.8},
        {"pairing": None, "viewpoint": None, "bertscore_f1": 0.85},
        {"pairing": 2.0, "viewpoint": 2.0},  # invalid prediction: zeros
    ]
    out = generation_summary(VIEWPOINT, scores, [True, True, True, False])
    assert out["n_judged"] == 3 and out["n_unscored"] == 1
    assert out["pairing"] == pytest.approx(3 / 3)
    assert out["viewpoint"] == pytest.approx(5 / 3)
    assert out["total_0_6"] == pytest.approx(8 / 3)
    assert out["llm"] == pytest.approx(1 + 4 * (8 / 3) / 6)
    mapped = [viewpoint_to_five(6), viewpoint_to_five(2), viewpoint_to_five(0)]
    assert out["llm"] == pytest.approx(np.mean(mapped))
    assert out["bertscore_f1"] == pytest.approx((0.9 + 0.8 + 0.85 + 0.0) / 4)


def test_vp_empty_and_mismatched_validity() -> None:
    out = generation_summary(VIEWPOINT, [])
    # A mean over nothing is no number ("–"), never 0.0 on a 1-5 scale.
    assert out["n"] == 0 and out["llm"] is None and out["total_0_6"] is None
    with pytest.raises(ValueError, match="validity"):
        generation_summary(EMOTION, [{}], [True, False])


def test_from_sums_are_vectorised() -> None:
    judged, floor = emotion_features({"s_int": 4.0, "s_emo": 3.0}), emotion_features({}, valid=False)
    emotion_rows = np.array([judged, floor])
    stack = np.stack([emotion_rows.sum(axis=0), emotion_rows[0], np.zeros(7)])
    values = emotion_from_sums(stack)
    assert values["llm"].tolist() == pytest.approx([(3.5 + 1.0) / 2, 3.5, 0.0])
    viewpoint_rows = np.array([viewpoint_features({"pairing": 2, "viewpoint": 4}), np.zeros(7)])
    assert viewpoint_from_sums(viewpoint_rows)["llm"].tolist() == [5.0, 0.0]


def test_score_value_ignores_non_numbers() -> None:
    assert score_value({"x": "4"}, "x") is None and score_value({"x": True}, "x") is None
    assert score_value({"x": 2}, "x") == 2.0


def test_intensity_score_floor() -> None:
    assert intensity_score(1, 10) == 1.0 and intensity_score(9, 10) == 4.0
