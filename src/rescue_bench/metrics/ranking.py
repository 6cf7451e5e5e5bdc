"""Ranking metrics over a model's ranked list (top-3), as in the paper: Recall@k and MRR."""

from __future__ import annotations

from collections.abc import Sequence


def gold_rank(gold: str, ranked: Sequence[str]) -> int:
    """1-based position of ``gold`` in ``ranked``; 0 when absent.

    >>> gold_rank("b", ["a", "b", "c"]), gold_rank("z", ["a"])
    (2, 0)
    """
    for position, item in enumerate(ranked, start=1):
        if item == gold:
            return position
    return 0


def rank_metrics(gold: str, ranked: Sequence[str], k: int = 3) -> dict[str, float]:
    """Recall@1..k and MRR (1/rank within the top k, 0 when absent) of one ranked answer.

    >>> rank_metrics("b", ["a", "b", "c"])
    {'recall_at_1': 0.0, 'recall_at_2': 1.0, 'recall_at_3': 1.0, 'mrr': 0.5, 'gold_rank': 2.0}
    >>> rank_metrics("x", [])["mrr"]
    0.0
    """
    position = gold_rank(gold, list(ranked)[:k])
    out = {f"recall_at_{i}": float(1 <= position <= i) for i in range(1, k + 1)}
    out["mrr"] = 1.0 / position if position else 0.0
    out["gold_rank"] = float(position)
    return out
