"""Ranking metrics over a model's ranked list (top-3), as in the paper: Recall@k and MRR."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from rescue_bench.metrics.classification import INVALID


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


RANK_KEYS = ("recall_at_1", "recall_at_2", "recall_at_3", "mrr")
"""Per-instance ranking scores that are averaged over instances."""


def ranking_summary(
    scores: Sequence[Mapping[str, float]], keys: Sequence[str] = RANK_KEYS
) -> dict[str, float]:
    """Micro means over instances of per-instance rank scores (as :func:`rank_metrics` gives them).

    A missing key counts as a miss (0.0); an empty input gives 0.0 for every metric.

    >>> ranking_summary([rank_metrics("a", ["a"]), rank_metrics("a", ["b", "a"]), {}])
    {'n': 3, 'recall_at_1': 0.3333333333333333, 'recall_at_2': 0.6666666666666666, \
'recall_at_3': 0.6666666666666666, 'mrr': 0.5}
    >>> ranking_summary([])["mrr"]
    0.0
    """
    out: dict[str, float] = {"n": len(scores)}
    for key in keys:
        out[key] = sum(float(s.get(key, 0.0)) for s in scores) / len(scores) if scores else 0.0
    return out


def top1_confusion(golds: Sequence[str], top1: Sequence[str | None]) -> list[dict[str, str | int]]:
    """Sparse (gold, predicted top-1) counts, most frequent first; ``None`` is counted as ``<invalid>``.

    Sparse because target labels (STP) are names that differ between conversations.

    >>> top1_confusion(["A", "A", "B", "A"], ["A", "B", "B", None])
    [{'gold': 'A', 'pred': '<invalid>', 'count': 1}, {'gold': 'A', 'pred': 'A', 'count': 1}, \
{'gold': 'A', 'pred': 'B', 'count': 1}, {'gold': 'B', 'pred': 'B', 'count': 1}]
    """
    if len(golds) != len(top1):
        raise ValueError(f"{len(golds)} gold labels but {len(top1)} predictions")
    counts = Counter(
        (gold, INVALID if pred is None else pred) for gold, pred in zip(golds, top1, strict=True)
    )
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [{"gold": gold, "pred": pred, "count": n} for (gold, pred), n in ordered]
