"""Cluster bootstrap confidence intervals that resample whole conversations (samples), vectorised.

Instances of one conversation are not independent (same speakers, same dynamics), so the intervals resample
whole samples with replacement. Every metric here depends on the instances only through the **sum of a
per-instance feature vector** (a one-hot confusion cell, a 0/1 hit, a score and its "is scored" flag), so
ratio metrics such as precision, F1 or macro-F1 are recomputed from resampled per-cluster sums rather than
from resampled records:

1. sum the features per cluster once: ``C`` of shape ``(clusters, k)``;
2. draw cluster counts ``W`` of shape ``(resamples, clusters)`` (within each stratum when strata
   are given, so every resample keeps the number of couple and family conversations);
3. ``W @ C`` gives all resampled totals at once, and a vectorised metric function maps them to values.

The interval is the percentile interval of the resampled values. Everything is seeded and deterministic:
clusters are ordered by their string form, so the result does not depend on record order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from rescue_bench.metrics.classification import FloatArray

R = TypeVar("R")
SumsFn = Callable[[FloatArray], Mapping[str, FloatArray]]
"""Maps summed features ``(..., k)`` to metric values ``(...)`` by name."""
Interval = tuple[float, float]


@dataclass(frozen=True, slots=True)
class Statistic(Generic[R]):
    """A statistic of a set of records that depends on them only through summed per-record features.

    ``value`` must accept a stack of sums ``(..., k)`` and return values ``(...)``.

    >>> mean_x = Statistic(lambda r: [1.0, r["x"]], lambda s: s[..., 1] / s[..., 0])
    >>> mean_x([{"x": 1}, {"x": 2}])
    1.5
    """

    features: Callable[[R], Sequence[float]]
    value: Callable[[FloatArray], FloatArray]

    def __call__(self, records: Sequence[R]) -> float:
        rows = np.asarray([self.features(r) for r in records], dtype=np.float64)
        return float(self.value(rows.sum(axis=0)))


def _ordered_clusters(
    clusters: Sequence[Hashable], strata: Sequence[Hashable] | None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    """Cluster index per record (clusters sorted by str), stratum index per cluster, and the cluster count."""
    keys = sorted(set(clusters), key=str)
    index = {key: i for i, key in enumerate(keys)}
    record_cluster = np.fromiter((index[c] for c in clusters), dtype=np.int64, count=len(clusters))
    stratum_of_cluster = np.zeros(len(keys), dtype=np.int64)
    if strata is not None:
        names = sorted(set(strata), key=str)
        stratum_index = {name: i for i, name in enumerate(names)}
        for cluster, stratum in zip(record_cluster, strata, strict=True):
            stratum_of_cluster[cluster] = stratum_index[stratum]
    return record_cluster, stratum_of_cluster, len(keys)


def resample_weights(
    stratum_of_cluster: npt.NDArray[np.int64], n_resamples: int, rng: np.random.Generator
) -> FloatArray:
    """How often each cluster is drawn in each resample: ``(n_resamples, clusters)``, drawn within strata.

    A stratum of one cluster would be drawn the same in every resample, so its share of the uncertainty would
    vanish (two conversations, one per scenario, gave intervals of zero width): the strata are then pooled
    and every cluster is drawn from all of them.

    >>> w = resample_weights(np.array([0, 0, 1, 1]), 4, np.random.default_rng(0))
    >>> w.shape, w[:, :2].sum(axis=1).tolist(), w[:, 2:].sum(axis=1).tolist()
    ((4, 4), [2.0, 2.0, 2.0, 2.0], [2.0, 2.0, 2.0, 2.0])
    >>> pooled = resample_weights(np.array([0, 1]), 200, np.random.default_rng(0))
    >>> pooled.sum(axis=1).tolist() == [2.0] * 200, bool((pooled[:, 0] != 1).any())
    (True, True)
    """
    if np.bincount(stratum_of_cluster).min(initial=2) < 2:
        stratum_of_cluster = np.zeros_like(stratum_of_cluster)
    weights = np.zeros((n_resamples, stratum_of_cluster.size), dtype=np.float64)
    for stratum in np.unique(stratum_of_cluster):
        members = np.flatnonzero(stratum_of_cluster == stratum)
        m = members.size
        # m draws with replacement per resample, counted with one bincount (much faster than rng.multinomial)
        draws = rng.integers(0, m, size=(n_resamples, m)) + (np.arange(n_resamples) * m)[:, None]
        weights[:, members] = np.bincount(draws.ravel(), minlength=n_resamples * m).reshape(n_resamples, m)
    return weights


@functools.lru_cache(maxsize=64)
def _seeded_counts(strata: bytes, n_resamples: int, seed: int) -> npt.NDArray[np.uint8]:
    stratum_of_cluster = np.frombuffer(strata, dtype=np.int64)
    weights = resample_weights(stratum_of_cluster, n_resamples, np.random.default_rng(seed))
    # Kept as small counts (a stratum of m clusters draws m times, so a count never exceeds 255 below 256
    # clusters per stratum; more are not kept): a paper-sized run's 52 distinct draws hold 3.3 MB.
    counts = weights.astype(np.uint8)
    counts.setflags(write=False)
    return counts


def seeded_weights(stratum_of_cluster: npt.NDArray[np.int64], n_resamples: int, seed: int) -> FloatArray:
    """:func:`resample_weights` drawn with a fresh generator of ``seed``.

    A run's scores draw the same weights many times (every metric group of a task has the same conversations
    and the same seed): the last 64 draws are kept rather than drawn again.

    >>> a = seeded_weights(np.array([0, 0, 1, 1]), 4, 0)
    >>> bool((a == resample_weights(np.array([0, 0, 1, 1]), 4, np.random.default_rng(0))).all())
    True
    """
    if stratum_of_cluster.size > 255:
        return resample_weights(stratum_of_cluster, n_resamples, np.random.default_rng(seed))
    strata = np.ascontiguousarray(stratum_of_cluster, dtype=np.int64).tobytes()
    return _seeded_counts(strata, n_resamples, seed).astype(np.float64)


def _cluster_sums(
    features: npt.ArrayLike, record_cluster: npt.NDArray[np.int64], n_clusters: int
) -> FloatArray:
    rows = np.asarray(features, dtype=np.float64)
    sums = np.zeros((n_clusters, rows.shape[1] if rows.ndim == 2 else 0), dtype=np.float64)
    np.add.at(sums, record_cluster, rows.reshape(len(record_cluster), -1))
    return sums


def percentile_interval(values: npt.ArrayLike, confidence: float = 0.95) -> Interval:
    """The central ``confidence`` percentile interval of bootstrap values.

    >>> [round(x, 6) for x in percentile_interval(np.arange(101.0), 0.9)]
    [5.0, 95.0]
    """
    tail = (1.0 - confidence) / 2 * 100
    lo, hi = np.percentile(np.asarray(values, dtype=np.float64), [tail, 100 - tail])
    return float(lo), float(hi)


def _empty(features: npt.ArrayLike, from_sums: SumsFn) -> dict[str, Interval]:
    rows = np.asarray(features, dtype=np.float64)
    if rows.ndim != 2:
        return {}
    return {name: (0.0, 0.0) for name in from_sums(np.zeros(rows.shape[1]))}


def _check(confidence: float, n_resamples: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")


def cluster_bootstrap_cis(
    features: npt.ArrayLike,
    clusters: Sequence[Hashable],
    from_sums: SumsFn,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    strata: Sequence[Hashable] | None = None,
) -> dict[str, Interval]:
    """Percentile CIs of every metric of ``from_sums``, resampling clusters (one resample set shared by all).

    Args:
        features: ``(records, k)`` per-record features.
        clusters: the cluster (sample id) of each record.
        from_sums: vectorised metrics of summed features.
        strata: optional stratum (scenario) of each record; clusters are resampled within their stratum.

    Empty input gives ``(0.0, 0.0)`` for every metric when ``features`` has shape ``(0, k)``, and ``{}`` when
    its width is unknown (e.g. ``[]``).

    >>> feats = [[1, 1], [1, 0], [1, 1], [1, 1]]
    >>> cis = cluster_bootstrap_cis(feats, ["a", "a", "b", "c"], lambda s: {"acc": s[..., 1] / s[..., 0]})
    >>> lo, hi = cis["acc"]; lo <= 0.75 <= hi
    True
    """
    _check(confidence, n_resamples)
    if len(clusters) == 0:
        return _empty(features, from_sums)
    record_cluster, stratum_of_cluster, n_clusters = _ordered_clusters(clusters, strata)
    sums = _cluster_sums(features, record_cluster, n_clusters)
    weights = seeded_weights(stratum_of_cluster, n_resamples, seed)
    values = from_sums(weights @ sums)
    return {name: percentile_interval(v, confidence) for name, v in values.items()}


def cluster_bootstrap_ses(
    features: npt.ArrayLike,
    clusters: Sequence[Hashable],
    from_sums: SumsFn,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    strata: Sequence[Hashable] | None = None,
) -> dict[str, float | None]:
    """Standard errors of every metric of ``from_sums``: the standard deviation (ddof 1) of the values over
    the resamples :func:`cluster_bootstrap_cis` draws (same seed, same resamples). ``None`` where it cannot be
    computed: fewer than two clusters, or a metric undefined in some resample.

    >>> feats = [[1, 1], [1, 0], [1, 1], [1, 1]]
    >>> acc = lambda s: {"acc": s[..., 1] / s[..., 0]}
    >>> se = cluster_bootstrap_ses(feats, ["a", "a", "b", "c"], acc)["acc"]; 0 < se < 0.5
    True
    >>> cluster_bootstrap_ses(feats, ["a"] * 4, acc)
    {'acc': None}
    """
    _check(0.95, n_resamples)
    record_cluster, stratum_of_cluster, n_clusters = _ordered_clusters(clusters, strata)
    if n_clusters < 2 or n_resamples < 2:
        return {name: None for name in from_sums(np.zeros(np.asarray(features).shape[-1:]))}
    sums = _cluster_sums(features, record_cluster, n_clusters)
    values = from_sums(seeded_weights(stratum_of_cluster, n_resamples, seed) @ sums)
    out: dict[str, float | None] = {}
    for name, resampled in values.items():
        array = np.asarray(resampled, dtype=np.float64)
        out[name] = float(array.std(ddof=1)) if np.isfinite(array).all() else None
    return out


def paired_cluster_bootstrap_cis(
    features_a: npt.ArrayLike,
    features_b: npt.ArrayLike,
    clusters: Sequence[Hashable],
    from_sums: SumsFn,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    strata: Sequence[Hashable] | None = None,
) -> dict[str, Interval]:
    """Percentile CIs of the difference A - B of every metric on the same instances (row i of both feature
    arrays is one instance), resampling the same clusters for both runs.

    >>> a, b = [[1, 1], [1, 1], [1, 0]], [[1, 0], [1, 1], [1, 0]]
    >>> acc = lambda s: {"acc": s[..., 1] / s[..., 0]}
    >>> lo, hi = paired_cluster_bootstrap_cis(a, b, ["x", "y", "z"], acc)["acc"]
    >>> lo <= 1 / 3 <= hi
    True
    """
    _check(confidence, n_resamples)
    if len(clusters) == 0:
        return _empty(features_a, from_sums)
    record_cluster, stratum_of_cluster, n_clusters = _ordered_clusters(clusters, strata)
    weights = seeded_weights(stratum_of_cluster, n_resamples, seed)
    values_a = from_sums(weights @ _cluster_sums(features_a, record_cluster, n_clusters))
    values_b = from_sums(weights @ _cluster_sums(features_b, record_cluster, n_clusters))
    return {name: percentile_interval(values_a[name] - values_b[name], confidence) for name in values_a}


def cluster_bootstrap_ci(
    records: Sequence[R],
    statistic: Statistic[R] | Callable[[Sequence[R]], float],
    cluster_key: str | Callable[[R], Hashable],
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    *,
    strata_key: str | Callable[[R], Hashable] | None = None,
) -> Interval:
    """Percentile CI of one statistic, resampling whole clusters of ``records``.

    A :class:`Statistic` is computed from resampled per-cluster sums (fast); any other callable is evaluated
    on each resampled record list (general, slower). Keys name a record field (records are dicts) or are
    callables.

    >>> recs = [{"s": "a", "x": 1.0}, {"s": "a", "x": 0.0}, {"s": "b", "x": 1.0}, {"s": "c", "x": 0.0}]
    >>> mean_x = Statistic(lambda r: [1.0, r["x"]], lambda s: s[..., 1] / s[..., 0])
    >>> cluster_bootstrap_ci(recs, mean_x, "s") == cluster_bootstrap_ci(recs, mean_x, "s")
    True
    >>> cluster_bootstrap_ci([], mean_x, "s")
    (0.0, 0.0)
    """
    if not records:
        _check(confidence, n_resamples)
        return (0.0, 0.0)
    cluster_of = _key_function(cluster_key)
    clusters = [cluster_of(r) for r in records]
    strata = None if strata_key is None else [_key_function(strata_key)(r) for r in records]
    if isinstance(statistic, Statistic):
        features = np.asarray([statistic.features(r) for r in records], dtype=np.float64)
        return cluster_bootstrap_cis(
            features,
            clusters,
            lambda s: {"value": statistic.value(s)},
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
            strata=strata,
        )["value"]
    _check(confidence, n_resamples)
    record_cluster, stratum_of_cluster, n_clusters = _ordered_clusters(clusters, strata)
    members = [np.flatnonzero(record_cluster == c) for c in range(n_clusters)]
    weights = resample_weights(stratum_of_cluster, n_resamples, np.random.default_rng(seed)).astype(np.int64)
    values = [
        statistic([records[int(i)] for c in np.flatnonzero(row) for _ in range(row[c]) for i in members[c]])
        for row in weights
    ]
    return percentile_interval(values, confidence)


def _key_function(key: str | Callable[[R], Hashable]) -> Callable[[R], Hashable]:
    if callable(key):
        return key
    return lambda record: record[key]  # type: ignore[index]
