"""Cluster bootstrap: determinism, agreement with a naive resampling loop, coverage, strata, speed."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rescue_bench.metrics.bootstrap import (
    Statistic,
    cluster_bootstrap_ci,
    cluster_bootstrap_cis,
    paired_cluster_bootstrap_cis,
    resample_weights,
    seeded_weights,
)
from rescue_bench.metrics.classification import FloatArray, binary_from_confusion

Rec = dict[str, Any]
MEAN_X: Statistic[Rec] = Statistic(lambda r: [1.0, r["x"]], lambda s: s[..., 1] / s[..., 0])


def _records(n_clusters: int, seed: int, per_cluster: int = 3) -> list[Rec]:
    rng = np.random.default_rng(seed)
    return [
        {
            "s": f"s{c}",
            "x": float(rng.random() < 0.3 + 0.4 * (c % 2)),
            "scenario": "couple" if c % 5 else "family",
        }
        for c in range(n_clusters)
        for _ in range(1 + rng.integers(0, per_cluster))
    ]


def test_deterministic_for_a_seed_and_independent_of_record_order() -> None:
    records = _records(30, seed=1)
    first = cluster_bootstrap_ci(records, MEAN_X, "s", seed=7)
    assert cluster_bootstrap_ci(records, MEAN_X, "s", seed=7) == first
    assert cluster_bootstrap_ci(list(reversed(records)), MEAN_X, "s", seed=7) == pytest.approx(first)
    assert cluster_bootstrap_ci(records, MEAN_X, "s", seed=8) != first


def test_vectorised_path_equals_naive_resampling_of_records() -> None:
    records = _records(25, seed=2)

    def naive_mean(rs: Sequence[Rec]) -> float:
        return float(np.mean([r["x"] for r in rs]))

    fast = cluster_bootstrap_ci(records, MEAN_X, "s", n_resamples=300, seed=3)
    slow = cluster_bootstrap_ci(records, naive_mean, "s", n_resamples=300, seed=3)
    assert fast == pytest.approx(slow)


def test_ratio_metric_uses_resampled_counts() -> None:
    # precision of "yes" from one-hot confusion cells, against the same statistic on resampled record lists
    rng = np.random.default_rng(4)
    records = [{"s": f"s{i % 40}", "cell": int(rng.integers(0, 6))} for i in range(400)]

    def cells(r: Rec) -> list[float]:
        return [float(i == r["cell"]) for i in range(6)]

    def precision(sums: FloatArray) -> FloatArray:
        return binary_from_confusion(sums.reshape(*sums.shape[:-1], 2, 3))["precision"]

    stat: Statistic[Rec] = Statistic(cells, precision)
    fast = cluster_bootstrap_ci(records, stat, "s", n_resamples=200, seed=5)
    slow = cluster_bootstrap_ci(records, lambda rs: stat(rs), "s", n_resamples=200, seed=5)
    assert fast == pytest.approx(slow)
    assert fast[0] <= stat(records) <= fast[1]


def test_degenerate_inputs() -> None:
    assert cluster_bootstrap_ci([], MEAN_X, "s") == (0.0, 0.0)
    one_cluster = [{"s": "a", "x": 1.0}, {"s": "a", "x": 0.0}]
    assert cluster_bootstrap_ci(one_cluster, MEAN_X, "s") == (0.5, 0.5)
    constant = [{"s": f"s{i}", "x": 1.0} for i in range(10)]
    assert cluster_bootstrap_ci(constant, MEAN_X, "s") == (1.0, 1.0)
    assert cluster_bootstrap_cis(np.zeros((0, 2)), [], lambda s: {"m": s[..., 0]}) == {"m": (0.0, 0.0)}
    with pytest.raises(ValueError, match="confidence"):
        cluster_bootstrap_ci(constant, MEAN_X, "s", confidence=1.5)
    with pytest.raises(ValueError, match="n_resamples"):
        cluster_bootstrap_ci(constant, MEAN_X, "s", n_resamples=0)


def test_strata_keep_their_cluster_counts_in_every_resample() -> None:
    strata = np.array([0, 0, 0, 1, 1, 2, 2])
    weights = resample_weights(strata, 500, np.random.default_rng(0))
    assert (weights[:, :3].sum(axis=1) == 3).all()
    assert (weights[:, 3:5].sum(axis=1) == 2).all()
    assert (weights[:, 5:].sum(axis=1) == 2).all()


def test_a_stratum_of_one_cluster_pools_the_strata() -> None:
    # One conversation per scenario: stratified draws would repeat the same two clusters in every resample.
    strata = np.array([0, 0, 0, 1])
    weights = resample_weights(strata, 500, np.random.default_rng(0))
    assert (weights.sum(axis=1) == 4).all()
    assert (weights[:, :3].sum(axis=1) != 3).any() and (weights[:, 3] != 1).any()
    records = [{"s": "a", "x": 1.0, "scenario": "couple"}, {"s": "b", "x": 0.0, "scenario": "family"}]
    lo, hi = cluster_bootstrap_ci(records, MEAN_X, "s", strata_key="scenario")
    assert lo < 0.5 < hi  # not the zero-width interval [0.5, 0.5]


@pytest.mark.parametrize("n_clusters", [3, 40, 255, 300])  # 300: past what the kept counts can hold
def test_seeded_weights_are_the_seeds_draws_every_time(n_clusters: int) -> None:
    strata = np.arange(n_clusters, dtype=np.int64) % 2
    fresh = resample_weights(strata, 200, np.random.default_rng(7))
    first = seeded_weights(strata, 200, 7)
    first[:] = -1  # a caller's copy: changing it changes no later draw
    again = seeded_weights(strata, 200, 7)
    assert again.dtype == np.float64 and np.array_equal(again, fresh)
    assert not np.array_equal(seeded_weights(strata, 200, 8), fresh)


def test_stratified_interval_is_deterministic_and_contains_the_estimate() -> None:
    records = _records(40, seed=6)
    ci = cluster_bootstrap_ci(records, MEAN_X, "s", strata_key="scenario", seed=1)
    assert ci[0] <= MEAN_X(records) <= ci[1]
    assert ci == cluster_bootstrap_ci(records, MEAN_X, "s", strata_key=lambda r: r["scenario"], seed=1)


def test_coverage_of_the_true_mean_is_near_nominal() -> None:
    # 200 simulated studies of 60 conversations with intra-cluster correlation; the 95% CI should cover the
    # true mean about 95% of the time (percentile intervals run slightly narrow for small samples).
    rng = np.random.default_rng(11)
    covered = 0
    for study in range(200):
        cluster_p = rng.beta(2, 2, size=60)  # true mean 0.5
        sizes = rng.integers(2, 12, size=60)
        feats = np.concatenate(
            [np.column_stack([np.ones(n), rng.random(n) < p]) for n, p in zip(sizes, cluster_p, strict=True)]
        )
        clusters = np.repeat(np.arange(60), sizes).tolist()
        lo, hi = cluster_bootstrap_cis(
            feats, clusters, lambda s: {"mean": s[..., 1] / s[..., 0]}, n_resamples=400, seed=study
        )["mean"]
        covered += lo <= 0.5 <= hi
    assert 0.88 <= covered / 200 <= 0.99


def test_paired_interval_of_identical_runs_is_zero_and_paired_beats_unpaired() -> None:
    rng = np.random.default_rng(12)
    clusters = np.repeat(np.arange(50), 6).tolist()
    base = (rng.random(300) < 0.6).astype(float)
    flips = rng.random(300) < 0.1
    other = np.where(flips, 1 - base, base)
    a = np.column_stack([np.ones(300), base])
    b = np.column_stack([np.ones(300), other])

    def acc(s: FloatArray) -> dict[str, FloatArray]:
        return {"acc": s[..., 1] / s[..., 0]}

    assert paired_cluster_bootstrap_cis(a, a, clusters, acc)["acc"] == (0.0, 0.0)
    paired = paired_cluster_bootstrap_cis(a, b, clusters, acc)["acc"]
    diff = base.mean() - other.mean()
    assert paired[0] <= diff <= paired[1]
    ci_a = cluster_bootstrap_cis(a, clusters, acc, seed=1)["acc"]
    ci_b = cluster_bootstrap_cis(b, clusters, acc, seed=2)["acc"]
    # correlated runs: the paired interval is far narrower than the two marginal intervals
    assert paired[1] - paired[0] < 0.5 * ((ci_a[1] - ci_a[0]) + (ci_b[1] - ci_b[0]))


def test_speed_1000_resamples_over_200_clusters() -> None:
    rng = np.random.default_rng(13)
    n = 3000
    clusters = rng.integers(0, 200, n).tolist()
    strata = [c < 180 for c in clusters]
    feats = np.eye(6)[rng.integers(0, 6, n)]

    def metrics(s: FloatArray) -> dict[str, FloatArray]:
        return binary_from_confusion(s.reshape(*s.shape[:-1], 2, 3))

    start = time.perf_counter()
    cluster_bootstrap_cis(feats, clusters, metrics, n_resamples=1000, strata=strata)
    elapsed = time.perf_counter() - start
    print(f"\n1000 resamples x 200 clusters x 3000 records, 8 metrics: {elapsed * 1000:.1f} ms")
    assert elapsed < 0.5


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.lists(st.floats(0, 1, allow_nan=False), min_size=3, max_size=3), min_size=2, max_size=30),
    st.integers(0, 2**16),
)
def test_interval_contains_the_point_estimate(clusters: list[list[float]], seed: int) -> None:
    # equal-sized clusters: the resampled mean is centred on the estimate, so the 95% interval must contain it
    records = [{"s": c, "x": x} for c, values in enumerate(clusters) for x in values]
    lo, hi = cluster_bootstrap_ci(records, MEAN_X, "s", n_resamples=200, seed=seed)
    estimate = MEAN_X(records)
    assert lo - 1e-12 <= estimate <= hi + 1e-12
    assert -1e-12 <= lo <= hi <= 1.0 + 1e-12
