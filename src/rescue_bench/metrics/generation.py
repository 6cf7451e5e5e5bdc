"""Scores of the generation tasks (ER, VP) that are computed by formula, not by a judge."""

from __future__ import annotations

INTENSITY_FLOOR = 1.0


def intensity_score(predicted: int | None, gold: int) -> float:
    """The paper's S_int = max(1, 5 - |predicted - gold|); a missing prediction gets the floor, 1.

    >>> intensity_score(7, 7), intensity_score(5, 7), intensity_score(0, 10), intensity_score(None, 3)
    (5.0, 3.0, 1.0, 1.0)
    """
    if predicted is None:
        return INTENSITY_FLOOR
    return float(max(1, 5 - abs(predicted - gold)))


def er_score(s_emo: float, s_int: float) -> float:
    """The paper's final ER score S_ER = (S_emo + S_int) / 2, on 1-5.

    >>> er_score(4, 3)
    3.5
    """
    return (s_emo + s_int) / 2


def vp_to_five(total: float) -> float:
    """Map the VP judge total (pairing 0-2 + viewpoint 0-4, so 0-6) linearly onto the paper's 1-5 scale.

    >>> vp_to_five(0), vp_to_five(6), vp_to_five(3)
    (1.0, 5.0, 3.0)
    """
    return 1.0 + 4.0 * total / 6.0
