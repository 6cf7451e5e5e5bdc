"""Many comparisons at once: adjusted p-values (Holm, Benjamini-Hochberg) and rank groups.

A ten-model leaderboard makes 45 pairwise comparisons per metric; at a 5% level about two of them would look
significant by chance alone. :func:`adjust` controls that: Holm's step-down method bounds the family-wise
error rate (the chance of any false "A differs from B"), Benjamini-Hochberg the false discovery rate (the
expected share of false claims among those made), which is less strict. :func:`rank_groups` turns the
adjusted verdicts into the groups of models that cannot be told apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Adjustment = Literal["holm", "bh", "none"]
ADJUSTMENTS: tuple[Adjustment, ...] = ("holm", "bh", "none")


def adjust(pvalues: Sequence[float], method: Adjustment = "holm") -> list[float]:
    """The adjusted p-values of one family of tests, in the order given.

    Holm: the i-th smallest of m p-values is multiplied by m - i + 1 (i from 1), then made non-decreasing
    in that order and capped at 1. BH: the i-th smallest is multiplied by m / i, then made non-increasing
    from the largest down and capped at 1.

    >>> adjust([0.01, 0.04, 0.03, 0.005])
    [0.03, 0.06, 0.06, 0.02]
    >>> adjust([0.01, 0.04, 0.03, 0.005], "bh")
    [0.02, 0.04, 0.04, 0.02]
    >>> adjust([0.2, 0.01], "none")
    [0.2, 0.01]
    """
    m = len(pvalues)
    if method == "none" or m == 0:
        return [float(p) for p in pvalues]
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    if method == "holm":
        running = 0.0
        for rank, index in enumerate(order):
            running = max(running, min(1.0, (m - rank) * pvalues[index]))
            adjusted[index] = _clean(running)
    elif method == "bh":
        running = 1.0
        for rank in range(m - 1, -1, -1):
            index = order[rank]
            running = min(running, m * pvalues[index] / (rank + 1))
            adjusted[index] = _clean(running)
    else:
        raise ValueError(f"unknown adjustment {method!r}; use one of {', '.join(ADJUSTMENTS)}")
    return adjusted


def _clean(value: float) -> float:
    """Capped at 1, rounded to 12 digits: ``3 * 0.01`` then reads 0.03 (float products are not exact)."""
    return round(min(1.0, value), 12)


def rank_groups(values: Sequence[float | None], different: Sequence[Sequence[bool]]) -> list[str]:
    """Letters of the groups of models that cannot be told apart, best group ``a`` (higher values are better).

    ``different[i][j]`` says whether models i and j differ at the chosen level. Models are sorted by value; a
    group is a maximal run of consecutive models no two of which differ, and a model gets the letters of every
    group it belongs to (the compact letter display). Models sharing a letter are not distinguishable; a
    model without a value gets ``""``.

    >>> no = [[False] * 3 for _ in range(3)]
    >>> rank_groups([0.9, 0.5, 0.7], no)
    ['a', 'a', 'a']
    >>> apart = [[False, True, False], [True, False, False], [False, False, False]]
    >>> rank_groups([0.9, 0.5, 0.7], apart)
    ['a', 'b', 'ab']
    """
    ranked = sorted((i for i, v in enumerate(values) if v is not None), key=lambda i: -(values[i] or 0.0))
    groups: list[tuple[int, int]] = []
    for start in range(len(ranked)):
        end = start
        while end + 1 < len(ranked) and not any(
            different[ranked[k]][ranked[end + 1]] for k in range(start, end + 1)
        ):
            end += 1
        if not groups or end > groups[-1][1]:
            groups.append((start, end))
    letters = [""] * len(values)
    for number, (start, end) in enumerate(groups):
        for position in range(start, end + 1):
            letters[ranked[position]] += _letter(number)
    return letters


def _letter(number: int) -> str:
    """``a`` ... ``z``, then ``a1``, ``b1``, ... (more than 26 groups is unlikely, not impossible)."""
    return chr(ord("a") + number % 26) + (str(number // 26) if number >= 26 else "")
