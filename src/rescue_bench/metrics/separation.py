"""Whether two runs differ on a metric, at any study size: the pairwise p-value of the rank groups, and how
fine a separation the data can resolve.

**Why not count resamples.** A bootstrap p-value that counts resampled differences on the wrong side of zero
cannot fall below ``2 / (B + 1)`` with ``B`` resamples (0.002 at 1,000), while Holm's step-down needs the
smallest of ``m`` p-values below ``level / m`` before it separates anything (0.0011 for the 45 pairs of ten
runs): every run of a ten-model study would share group ``a``, however far apart. Drawing resamples to match
(``B`` in the tens of thousands, and more for simultaneous percentile intervals at ``level / m``, whose tails
must hold enough draws) multiplies the cost of every comparison by the number of pairs.

**The method.** The paired cluster bootstrap already draws every run on one set of conversation resamples;
the spread of the resampled differences ``d*`` is the standard error of the difference. The p-value is the
normal (Wald) one, ``p = 2 * (1 - Phi(|d| / se(d*)))`` with ``d`` the observed difference: it has no floor
from the number of resamples, which only set how well ``se`` is known (about 2% at 1,000), so a ten-run
study costs what it did.

**What the data can resolve.** The normal approximation knows nothing of how many conversations stand behind
``se``, and with a handful it would claim more than they hold. A test that treats the conversations as its
units (the honest unit here: rows of one conversation are not independent) cannot give a two-sided p-value
below ``2 / 2**n`` with ``n`` conversations, the sign-flip test's smallest (every conversation on one side).
The p-value is never reported below that floor, and when the floor is not below the threshold a single
separation needs (``level / m`` for Holm and Benjamini-Hochberg, ``level`` without adjustment), no groups are
given and :meth:`Resolution.reason` says why.

**Simultaneous intervals.** With the same ``se``, the intervals ``value ± z * se`` at
``z = Phi^-1(1 - level / (2 m))`` cover every run at once (Bonferroni). When two of them are disjoint the
difference exceeds ``z`` times the sum of the two runs' ``se``, which bounds ``se(d*)``; so its p-value is
below ``level / m`` and the adjusted one below ``level``: the groups never join runs whose simultaneous
intervals are disjoint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy.stats import norm

from rescue_bench.metrics.classification import FloatArray
from rescue_bench.metrics.multiplicity import Adjustment

ADJUSTMENT_NAMES: dict[Adjustment, str] = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}


def standard_error(draws: FloatArray) -> float | None:
    """The standard deviation (ddof 1) of the finite bootstrap values; ``None`` with fewer than two.

    >>> standard_error(np.array([1.0, 3.0])), standard_error(np.array([1.0, np.nan]))
    (1.4142135623730951, None)
    """
    finite = draws[np.isfinite(draws)]
    return float(finite.std(ddof=1)) if finite.size >= 2 else None


def normal_p(diff: float, draws: FloatArray) -> float:
    """Two-sided p-value of "no difference": ``diff`` over the standard error of the resampled differences.

    A difference that no resample moves (``se`` 0) gives 0 (the conversation floor then applies,
    :func:`p_floor`), none at all gives 1, and so does a spread that cannot be estimated.

    >>> round(normal_p(1.96, np.array([-1.0, 1.0]) / np.sqrt(2)), 4)
    0.05
    >>> normal_p(0.5, np.full(9, 0.5)), normal_p(0.0, np.zeros(9)), normal_p(0.5, np.array([np.nan] * 3))
    (0.0, 1.0, 1.0)
    """
    se = standard_error(draws)
    if se is None or diff == 0.0:
        return 1.0
    if se == 0.0:
        return 0.0
    return float(2.0 * norm.sf(abs(diff) / se))


def p_floor(clusters: int) -> float:
    """The smallest two-sided p-value a test over ``clusters`` conversations can give: ``2 / 2**n``.

    >>> p_floor(1), p_floor(6), p_floor(11)
    (1.0, 0.03125, 0.0009765625)
    """
    return 1.0 if clusters <= 1 else 2.0 ** (1 - clusters)


def threshold(pairs: int, level: float, method: Adjustment) -> float:
    """The largest p-value of a pair that can still be separated from the other when it is the only one:
    ``level / pairs`` under Holm or Benjamini-Hochberg, ``level`` without adjustment.

    >>> round(threshold(45, 0.05, "holm"), 6), threshold(45, 0.05, "none")
    (0.001111, 0.05)
    """
    return level if method == "none" else level / max(1, pairs)


def clusters_needed(pairs: int, level: float, method: Adjustment) -> int:
    """The fewest conversations whose floor lies below the threshold of ``pairs`` pairs.

    >>> clusters_needed(45, 0.05, "holm"), clusters_needed(3, 0.05, "holm"), clusters_needed(1, 0.05, "none")
    (11, 7, 6)
    """
    return math.floor(1 + math.log2(1 / threshold(pairs, level, method))) + 1


def bonferroni_z(pairs: int, level: float) -> float:
    """The normal quantile of simultaneous two-sided intervals over ``pairs`` comparisons.

    >>> round(bonferroni_z(1, 0.05), 3), round(bonferroni_z(45, 0.05), 3)
    (1.96, 3.261)
    """
    return float(norm.isf(level / (2 * max(1, pairs))))


class Resolution(BaseModel):
    """How fine one metric's comparison can separate runs: its conversations, tested pairs, the smallest
    p-value they allow (:func:`p_floor`) and the largest a separation needs (:func:`threshold`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    clusters: int
    pairs: int
    floor: float
    threshold: float
    needed: int
    """The fewest conversations that could separate this many pairs."""

    @classmethod
    def of(cls, clusters: int, pairs: int, level: float, method: Adjustment) -> Resolution:
        return cls(
            clusters=clusters,
            pairs=pairs,
            floor=p_floor(clusters),
            threshold=threshold(pairs, level, method),
            needed=clusters_needed(pairs, level, method),
        )

    @property
    def supported(self) -> bool:
        """Whether the data can separate any pair at all (no pairs: nothing to separate, nothing claimed)."""
        return self.pairs > 0 and self.floor < self.threshold

    def reason(self) -> str:
        """Why there are no groups, in words; empty when there are."""
        if self.supported:
            return ""
        if self.pairs == 0:
            return "no pair of runs both have a value"
        return (
            f"{self.clusters} conversation{'s' if self.clusters != 1 else ''} cannot give p below "
            f"{self.floor:.2g}, and separating {self.pairs} pair{'s' if self.pairs != 1 else ''} needs p "
            f"below {self.threshold:.2g} (at least {self.needed} conversations)"
        )


def floored(p: float, clusters: int) -> float:
    """``p`` raised to the conversation floor (:func:`p_floor`)."""
    return max(p, p_floor(clusters))


def method_legend(method: Adjustment, level: float) -> str:
    """What a rank group means and how it is computed: the one sentence every rank-group legend gives."""
    adjusted = (
        "" if method == "none" else f", {ADJUSTMENT_NAMES[method]}-adjusted over the pairs of each metric"
    )
    return (
        "Runs sharing a letter cannot be told apart (a = best). p: two-sided, from the standard error of the "
        "paired cluster bootstrap over conversations on the instances all runs share (normal approximation: "
        f"no floor from the number of resamples, never below 2/2^n with n conversations){adjusted}, "
        f"level {level:g}."
    )


def resolution_legend(resolutions: Sequence[tuple[str, Resolution]]) -> str:
    """The resolution of the groups shown (``(what, resolution)`` per metric): the threshold a separation
    needs and the smallest p the data give; then each metric with values but without groups, and why."""
    shown = [r for _, r in resolutions if r.supported]
    out = []
    if shown:
        pairs = max(r.pairs for r in shown)
        lowest = min(r.clusters for r in shown)
        more = " or more" if any(r.clusters != lowest for r in shown) else ""
        out.append(
            f"Resolution: {pairs} pair{'s' if pairs != 1 else ''} per metric, so a separation needs "
            f"p below {min(r.threshold for r in shown):.2g}; {lowest} conversations{more} allow p down to "
            f"{p_floor(lowest):.2g}."
        )
    missing: dict[str, list[str]] = {}
    for what, resolution in resolutions:
        if resolution.pairs and not resolution.supported:  # no pairs: no values, nothing to explain
            missing.setdefault(resolution.reason(), []).append(what)
    for why, names in missing.items():
        out.append(f"No groups for {', '.join(names)}: {why}.")
    return " ".join(out)
