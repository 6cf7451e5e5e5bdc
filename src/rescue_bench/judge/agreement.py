"""Judge reliability: agreement among several judges, and calibration of a judge against human ratings.

* :func:`inter_judge_agreement` takes several judges' scores of the same items and reports Krippendorff's
  alpha (ordinal, from the ``krippendorff`` package), exact agreement and mean absolute difference.
* :func:`calibration_table` compares human and judge scores in the layout of the paper's Table 12 (App. F):
  per annotator and task the number of items, exact matches, a histogram of ``|human - judge|`` (0..4) and the
  MAE, followed by per-task and overall totals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

Ratings = Mapping[str, Mapping[str, float | None]]
"""``ratings[judge][item_id] = score``; ``None`` (or NaN) is an unscored verdict."""
TOTAL = "Total"


def _score(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def mean_over_judges(ratings: Ratings) -> dict[str, float | None]:
    """Per-item mean of the judges' scores, ignoring unscored verdicts; ``None`` when no judge scored it.

    >>> mean_over_judges({"j1": {"a": 4, "b": None}, "j2": {"a": 5, "b": None, "c": 2}})
    {'a': 4.5, 'b': None, 'c': 2.0}
    """
    items = sorted({item for scores in ratings.values() for item in scores})
    out: dict[str, float | None] = {}
    for item in items:
        values = [v for scores in ratings.values() if (v := _score(scores.get(item))) is not None]
        out[item] = sum(values) / len(values) if values else None
    return out


def krippendorff_alpha(
    matrix: Sequence[Sequence[float | None]], value_domain: Sequence[float] | None = None
) -> float | None:
    """Ordinal Krippendorff's alpha of a judges x items matrix (``None``/NaN = missing).

    ``None`` when alpha is undefined: fewer than two judges, no item scored by two judges, or no variation at
    all (expected disagreement 0).

    >>> round(krippendorff_alpha([[1, 1, 2, 3], [1, 3, 2, 3]]), 4)
    0.4167
    >>> krippendorff_alpha([[3, 3], [3, 3]]) is None
    True
    """
    import krippendorff

    data = np.array([[np.nan if _score(v) is None else v for v in row] for row in matrix], dtype=np.float64)
    if data.ndim != 2 or data.shape[0] < 2 or not ((~np.isnan(data)).sum(axis=0) >= 2).any():
        return None
    pairable = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    if np.unique(pairable[~np.isnan(pairable)]).size < 2:
        return None
    domain = None if value_domain is None else np.asarray(value_domain, dtype=np.float64)
    alpha = float(
        krippendorff.alpha(reliability_data=pairable, level_of_measurement="ordinal", value_domain=domain)
    )
    return None if math.isnan(alpha) else alpha


def inter_judge_agreement(ratings: Ratings, *, value_domain: Sequence[float] | None = None) -> dict[str, Any]:
    """Agreement of several judges on the same items.

    Returns:
        ``judges``; ``n_items`` (items scored by at least two judges); ``alpha_ordinal`` (see
        :func:`krippendorff_alpha`); ``exact_agreement``: share of items scored by every judge on which all
        gave the same score (``n_complete`` such items); ``pairwise_exact`` and ``mae``: share of equal scores
        and mean absolute difference over every (item, pair of judges that both scored it); ``pairs``: the
        same per pair. Fractions are in [0, 1]; empty denominators give 0.0 (so does a single judge).

    >>> out = inter_judge_agreement({"a": {"x": 4, "y": 2, "z": 5}, "b": {"x": 4, "y": 3, "z": None}})
    >>> out["n_items"], out["exact_agreement"], out["mae"], round(out["alpha_ordinal"], 3)
    (2, 0.5, 0.5, 0.833)
    """
    judges = list(ratings)
    items = sorted({item for scores in ratings.values() for item in scores})
    matrix = [[_score(ratings[j].get(item)) for item in items] for j in judges]
    columns = list(zip(*matrix, strict=True)) if matrix else []
    complete = [col for col in columns if all(v is not None for v in col)] if len(judges) >= 2 else []
    pairs: list[dict[str, Any]] = []
    all_diffs: list[float] = []
    for (ia, a), (ib, b) in combinations(enumerate(judges), 2):
        diffs = [
            abs(x - y) for x, y in zip(matrix[ia], matrix[ib], strict=True) if x is not None and y is not None
        ]
        all_diffs.extend(diffs)
        pairs.append({"a": a, "b": b, "n": len(diffs), **_exact_and_mae(diffs)})
    pooled = _exact_and_mae(all_diffs)
    return {
        "judges": judges,
        "n_items": sum(1 for col in columns if sum(v is not None for v in col) >= 2),
        "alpha_ordinal": krippendorff_alpha(matrix, value_domain) if len(judges) >= 2 else None,
        "n_complete": len(complete),
        "exact_agreement": sum(len(set(col)) == 1 for col in complete) / len(complete) if complete else 0.0,
        "pairwise_exact": pooled["exact"],
        "mae": pooled["mae"],
        "pairs": pairs,
    }


def _exact_and_mae(diffs: Sequence[float]) -> dict[str, float]:
    if not diffs:
        return {"exact": 0.0, "mae": 0.0}
    return {"exact": sum(d == 0 for d in diffs) / len(diffs), "mae": sum(diffs) / len(diffs)}


@dataclass(frozen=True, slots=True)
class RatingPair:
    """One item rated by a human annotator and by the judge, on the same scale."""

    annotator: str
    task: str
    human: float
    judge: float


@dataclass(frozen=True, slots=True)
class CalibrationRow:
    """One row of the Table 12 layout."""

    annotator: str
    task: str
    n: int
    exact: int
    diff_counts: tuple[int, ...]
    """Items per ``|human - judge|`` rounded half up to an integer: 0, 1, ..., max_diff (or more)."""
    mae: float

    def to_json(self) -> dict[str, Any]:
        return {
            "annotator": self.annotator,
            "task": self.task,
            "n": self.n,
            "exact": self.exact,
            "diff_counts": list(self.diff_counts),
            "mae": self.mae,
        }


def _row(annotator: str, task: str, pairs: Sequence[RatingPair], max_diff: int) -> CalibrationRow:
    diffs = [abs(p.human - p.judge) for p in pairs]
    counts = [0] * (max_diff + 1)
    for d in diffs:
        counts[min(math.floor(d + 0.5), max_diff)] += 1
    mae = sum(diffs) / len(diffs) if diffs else 0.0
    return CalibrationRow(annotator, task, len(pairs), sum(d == 0 for d in diffs), tuple(counts), mae)


def calibration_table(pairs: Sequence[RatingPair], *, max_diff: int = 4) -> list[CalibrationRow]:
    """Human-vs-judge agreement in the paper's Table 12 layout.

    Rows: one per (annotator, task), sorted; then a ``Total`` row per task when there are several tasks; then
    the overall ``Total`` row whose task names every task in order of first appearance (e.g. ``"VP,ER"``).
    ``exact`` counts identical scores; the histogram bins ``|difference|`` to the nearest integer, so with
    non-integer judge scores (e.g. the VP 0-6 total mapped to 1-5) bin 0 can hold more items than ``exact``.

    Raises:
        ValueError: a score is NaN.

    >>> rows = calibration_table([RatingPair("A1", "ER", 4, 4), RatingPair("A1", "ER", 3, 5)])
    >>> [(r.annotator, r.task, r.n, r.exact, r.diff_counts, r.mae) for r in rows]
    [('A1', 'ER', 2, 1, (1, 0, 1, 0, 0), 1.0)]
    >>> calibration_table([])[0].to_json()
    {'annotator': 'Total', 'task': '', 'n': 0, 'exact': 0, 'diff_counts': [0, 0, 0, 0, 0], 'mae': 0.0}
    """
    if any(math.isnan(p.human) or math.isnan(p.judge) for p in pairs):
        raise ValueError("calibration scores must be numbers, not NaN")
    groups: dict[tuple[str, str], list[RatingPair]] = {}
    for pair in pairs:
        groups.setdefault((pair.annotator, pair.task), []).append(pair)
    tasks = list(dict.fromkeys(p.task for p in pairs))
    rows = [_row(annotator, task, members, max_diff) for (annotator, task), members in sorted(groups.items())]
    if len(groups) == 1:
        return rows
    if len(tasks) > 1:
        rows += [_row(TOTAL, task, [p for p in pairs if p.task == task], max_diff) for task in tasks]
    rows.append(_row(TOTAL, ",".join(tasks), pairs, max_diff))
    return rows
