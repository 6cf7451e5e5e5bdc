"""Scores of a run that asks every instance several times (``repeats``, CircularEval rotations).

Each repeat is scored as a run of its own (its headline metrics); the task's headline is their mean, and its
95% CI comes from a **two-level bootstrap** (docs/repeats.md) that resamples

1. conversations (samples) with replacement, within their scenario, as the one-level cluster bootstrap of
   :mod:`rescue_bench.metrics.bootstrap` does, and then
2. for every drawn conversation, the repeats: each of the K repeat slots of a drawn copy takes the records
   of one of the conversation's K repeats, drawn with replacement (each copy draws its own).

The statistic of a resample is the mean over the K slots of the metric computed on each slot's records, the
same statistic as the point estimate, so the interval holds both the sampling of conversations and the
noise between repeats. With identical repeats it is the one-level interval, exactly (the same draws of
conversations come first from the same seed). The between-repeat spread (sd and min-max of the repeat
means) is reported beside it, on its own.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean, stdev
from typing import Any

import numpy as np
import numpy.typing as npt

from rescue_bench.metrics.aggregate import (
    LineInput,
    point_values,
    scope_labels,
    scope_records,
    summarize_scope,
    typed_records,
)
from rescue_bench.metrics.bootstrap import Interval, SumsFn, cluster_bootstrap_cis, percentile_interval
from rescue_bench.metrics.classification import FloatArray, safe_div
from rescue_bench.metrics.plan import metric_plan
from rescue_bench.metrics.spec import MetricSpec
from rescue_bench.rundir import PredictionLine

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class RepeatSums:
    """Per-conversation, per-repeat feature sums ``(clusters, repeats, k)`` and each cluster's stratum."""

    sums: FloatArray
    stratum_of_cluster: IntArray

    @classmethod
    def of(
        cls,
        features: npt.ArrayLike,
        clusters: Sequence[Hashable],
        repeats: Sequence[int],
        n_repeats: int,
        strata: Sequence[Hashable] | None = None,
    ) -> RepeatSums:
        """Sum ``features`` (``(records, k)``) by cluster (sorted by str, as the one-level bootstrap) and
        repeat (0 .. ``n_repeats`` - 1)."""
        rows = np.asarray(features, dtype=np.float64).reshape(len(clusters), -1)
        keys = sorted(set(clusters), key=str)
        index = {key: i for i, key in enumerate(keys)}
        cluster = np.fromiter((index[c] for c in clusters), dtype=np.int64, count=len(clusters))
        sums = np.zeros((len(keys), n_repeats, rows.shape[1]), dtype=np.float64)
        np.add.at(sums, (cluster, np.asarray(repeats, dtype=np.int64)), rows)
        stratum = np.zeros(len(keys), dtype=np.int64)
        if strata is not None:
            names = {name: i for i, name in enumerate(sorted(set(strata), key=str))}
            stratum[cluster] = [names[s] for s in strata]
        return cls(sums, stratum)


def cluster_draws(stratum_of_cluster: IntArray, n_resamples: int, rng: np.random.Generator) -> IntArray:
    """The clusters drawn in each resample, ``(n_resamples, clusters)``, with replacement within strata.

    The random calls are those of :func:`rescue_bench.metrics.bootstrap.resample_weights`, so the same seed
    draws the same conversations as the one-level bootstrap.

    >>> draws = cluster_draws(np.array([0, 0, 1]), 3, np.random.default_rng(0))
    >>> draws.shape, bool((draws[:, 2] == 2).all())
    ((3, 3), True)
    """
    draws = np.zeros((n_resamples, stratum_of_cluster.size), dtype=np.int64)
    for stratum in np.unique(stratum_of_cluster):
        members = np.flatnonzero(stratum_of_cluster == stratum)
        picked = rng.integers(0, members.size, size=(n_resamples, members.size))
        draws[:, members] = members[picked]
    return draws


def two_level_values(
    data: RepeatSums, from_sums: SumsFn, *, n_resamples: int = 1000, seed: int = 0
) -> dict[str, FloatArray]:
    """The bootstrap values ``(n_resamples,)`` per metric of the mean over repeats (module docstring)."""
    n_clusters, k_repeats, width = data.sums.shape
    rng = np.random.default_rng(seed)
    draws = cluster_draws(data.stratum_of_cluster, n_resamples, rng)
    picks = rng.integers(0, k_repeats, size=(n_resamples, n_clusters, k_repeats))
    flat = data.sums.reshape(n_clusters * k_repeats, width)
    base = (np.arange(n_resamples)[:, None] * n_clusters + draws) * k_repeats
    totals: dict[str, FloatArray] = {}
    for slot in range(k_repeats):
        cells = (base + picks[:, :, slot]).ravel()
        weights = np.bincount(cells, minlength=n_resamples * n_clusters * k_repeats)
        values = from_sums(weights.reshape(n_resamples, -1).astype(np.float64) @ flat)
        for name, value in values.items():
            totals[name] = totals.get(name, 0.0) + np.asarray(value, dtype=np.float64)
    return {name: total / k_repeats for name, total in totals.items()}


def two_level_cis(
    data: RepeatSums,
    from_sums: SumsFn,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Interval]:
    """Percentile CIs of every metric's mean over repeats (:func:`two_level_values`)."""
    if data.sums.shape[0] == 0:
        return {name: (0.0, 0.0) for name in from_sums(np.zeros(data.sums.shape[2]))}
    values = two_level_values(data, from_sums, n_resamples=n_resamples, seed=seed)
    return {name: percentile_interval(v, confidence) for name, v in values.items()}


def spread(per_repeat: Sequence[Mapping[str, float | None]]) -> dict[str, Any]:
    """Mean, sd (n - 1) and min-max of every metric over repeats; ``None`` where a repeat has none.

    >>> spread([{"acc": 0.5}, {"acc": 0.7}, {"acc": 0.6}])["sd"]["acc"]
    0.1
    """
    names = list(per_repeat[0]) if per_repeat else []
    out: dict[str, dict[str, Any]] = {"mean": {}, "sd": {}, "range": {}}
    for name in names:
        values = [r[name] for r in per_repeat]
        known = [float(v) for v in values if v is not None]
        whole = len(known) == len(values) and bool(known)
        out["mean"][name] = fmean(known) if whole else None
        out["sd"][name] = round(stdev(known), 12) if whole and len(known) > 1 else (0.0 if whole else None)
        out["range"][name] = [min(known), max(known)] if whole else None
    return out


def summarize_repeated_scope(
    spec: MetricSpec,
    records: Sequence[PredictionLine],
    n_repeats: int,
    labels: Sequence[str] = (),
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """One scope of a repeated task: the one-level summary of all asks pooled (counts, tables), whose
    headline metrics are replaced by their mean over repeats with the two-level CI, plus ``repeats``."""
    out = summarize_scope(spec, records, labels, n_resamples=n_resamples, confidence=confidence, seed=seed)
    per_repeat = [point_values(spec, [r for r in records if r.repeat == k], labels) for k in range(n_repeats)]
    summary = spread(per_repeat)
    plan = metric_plan(spec, labels)
    data = RepeatSums.of(
        plan.matrix(records),
        [r.sample_id for r in records],
        [r.repeat for r in records],
        n_repeats,
        [r.scenario for r in records],
    )
    cis = two_level_cis(data, plan.from_sums, n_resamples=n_resamples, confidence=confidence, seed=seed)
    mean = summary["mean"]
    out.update({name: mean[name] for name in spec.headline})
    out["n"] = len({r.instance_id for r in records})
    out["ci"] = {name: None if mean[name] is None else list(cis[name]) for name in spec.headline}
    out["repeats"] = {
        "k": n_repeats,
        "asks": len(records),
        "per_repeat": per_repeat,
        "sd": summary["sd"],
        "range": summary["range"],
    }
    return out


def aggregate_repeated_task(
    task: str,
    spec: MetricSpec,
    records: Sequence[LineInput],
    n_repeats: int,
    *,
    labels_by_scenario: Mapping[str, Sequence[str]] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The ``scores.json`` entry of a task asked ``n_repeats`` times, scope by scope
    (:func:`summarize_repeated_scope`), in the layout of
    :func:`rescue_bench.metrics.aggregate.aggregate_task`."""
    out: dict[str, Any] = {}
    for scope, members in scope_records(typed_records(task, records, spec)).items():
        labels = scope_labels(members, labels_by_scenario) if spec.kind == "multiclass" else ()
        out[scope] = summarize_repeated_scope(
            spec, members, n_repeats, labels, n_resamples=n_resamples, confidence=confidence, seed=seed
        )
    return out


@dataclass(frozen=True, slots=True)
class Verdict:
    """CircularEval's verdict on one instance: correct under every rotation or not."""

    sample_id: str
    scenario: str
    correct: bool


def circular_scopes(
    verdicts: Sequence[Verdict], *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Per scope (each scenario present, and ``all``): ``{"accuracy", "ci", "n"}`` of the instances correct
    under all rotations, the CI a cluster bootstrap over conversations as for every other metric.

    >>> out = circular_scopes([Verdict("a", "couple", True), Verdict("b", "couple", False)], n_resamples=10)
    >>> out["all"]["accuracy"], out["couple"]["n"], "family" in out
    (0.5, 2, False)
    """
    scopes = {s: [v for v in verdicts if v.scenario == s] for s in ("couple", "family")}
    chosen = {name: members for name, members in scopes.items() if members}
    chosen["all"] = list(verdicts)
    out: dict[str, dict[str, Any]] = {}
    for scope, members in chosen.items():
        features = np.asarray([[1.0, float(v.correct)] for v in members], dtype=np.float64).reshape(-1, 2)
        cis = cluster_bootstrap_cis(
            features,
            [v.sample_id for v in members],
            _accuracy,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
            strata=[v.scenario for v in members],
        )
        value = float(features[:, 1].sum() / len(members)) if members else 0.0
        out[scope] = {"accuracy": value, "ci": list(cis["accuracy"]), "n": len(members)}
    return out


def _accuracy(sums: FloatArray) -> dict[str, FloatArray]:
    return {"accuracy": safe_div(sums[..., 1], sums[..., 0])}
