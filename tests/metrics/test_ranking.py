"""Ranking metrics: per-instance scores as the reference defines them, and their means over instances."""

from __future__ import annotations

import pytest

from rescue_bench.metrics.ranking import gold_rank, rank_metrics, ranking_summary, top1_confusion


def test_rank_metrics_follow_the_reference_definition() -> None:
    assert rank_metrics("c", ["a", "b", "c"]) == {
        "recall_at_1": 0.0,
        "recall_at_2": 0.0,
        "recall_at_3": 1.0,
        "mrr": pytest.approx(1 / 3),
        "gold_rank": 3.0,
    }
    # only the top k count: a gold label in fourth place is a miss
    assert rank_metrics("d", ["a", "b", "c", "d"])["mrr"] == 0.0
    assert gold_rank("a", ["b", "a", "a"]) == 2  # first occurrence


def test_ranking_summary_hand_computed() -> None:
    scores = [
        rank_metrics("a", ["a", "b"]),
        rank_metrics("a", ["b", "c", "a"]),
        rank_metrics("a", ["b", "c"]),
    ]
    summary = ranking_summary(scores)
    assert summary == {
        "n": 3,
        "recall_at_1": pytest.approx(1 / 3),
        "recall_at_2": pytest.approx(1 / 3),
        "recall_at_3": pytest.approx(2 / 3),
        "mrr": pytest.approx((1 + 1 / 3) / 3),
    }


def test_ranking_summary_missing_keys_are_misses_and_empty_is_zero() -> None:
    assert ranking_summary([{"recall_at_1": 1.0}, {}])["recall_at_1"] == 0.5
    assert ranking_summary([{"recall_at_1": 1.0}, {}])["mrr"] == 0.0
    assert ranking_summary([]) == {
        "n": 0,
        "recall_at_1": 0.0,
        "recall_at_2": 0.0,
        "recall_at_3": 0.0,
        "mrr": 0.0,
    }


def test_top1_confusion_counts_and_orders_by_frequency() -> None:
    out = top1_confusion(["A", "A", "A", "B", "B"], ["B", "B", "A", None, "B"])
    assert out == [
        {"gold": "A", "pred": "B", "count": 2},
        {"gold": "A", "pred": "A", "count": 1},
        {"gold": "B", "pred": "<invalid>", "count": 1},
        {"gold": "B", "pred": "B", "count": 1},
    ]
    assert top1_confusion([], []) == []
    with pytest.raises(ValueError):
        top1_confusion(["A"], [])
