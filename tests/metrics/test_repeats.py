"""The two-level bootstrap of repeated runs (conversations, then repeats within each), on cases checked by
hand, and the repeat summary of one scope."""

from __future__ import annotations

import numpy as np
import pytest

from rescue_bench.metrics.aggregate import summarize_scope
from rescue_bench.metrics.bootstrap import cluster_bootstrap_cis
from rescue_bench.metrics.repeats import (
    RepeatSums,
    Verdict,
    circular_scopes,
    spread,
    summarize_repeated_scope,
    two_level_cis,
    two_level_values,
)
from rescue_bench.metrics.spec import BINARY_YES_NO
from rescue_bench.rundir import PredictionLine


def accuracy(sums: np.ndarray) -> dict[str, np.ndarray]:
    return {"acc": sums[..., 1] / sums[..., 0]}


def test_one_conversation_two_repeats_draws_each_slot_from_either_repeat() -> None:
    # One conversation, one instance, wrong in repeat 0 and right in repeat 1. Each of the two slots takes
    # repeat 0 or 1 with probability 1/2, so the mean over slots is 0, 1/2 or 1 with probability 1/4, 1/2,
    # 1/4 (binomial(2, 1/2) / 2).
    data = RepeatSums.of([[1, 0], [1, 1]], ["a", "a"], [0, 1], 2)
    values = two_level_values(data, accuracy, n_resamples=20000, seed=3)["acc"]
    shares = {v: float(np.mean(values == v)) for v in (0.0, 0.5, 1.0)}
    assert set(np.unique(values)) == {0.0, 0.5, 1.0}
    assert shares[0.0] == pytest.approx(0.25, abs=0.015)
    assert shares[0.5] == pytest.approx(0.5, abs=0.015)
    assert shares[1.0] == pytest.approx(0.25, abs=0.015)
    assert two_level_cis(data, accuracy, n_resamples=20000, seed=3)["acc"] == (0.0, 1.0)


def test_identical_repeats_give_the_one_level_interval_exactly() -> None:
    # Four conversations in two strata; every repeat is the same, so resampling repeats changes nothing and
    # the conversations drawn first from the same seed are those of the one-level bootstrap.
    features = [[1, 1], [1, 0], [1, 1], [1, 1], [1, 0], [1, 0]]
    clusters = ["a", "a", "b", "c", "d", "d"]
    strata = ["couple", "couple", "couple", "family", "family", "family"]
    k = 3
    data = RepeatSums.of(
        [f for _ in range(k) for f in features],
        clusters * k,
        [r for r in range(k) for _ in features],
        k,
        strata * k,
    )
    one_level = cluster_bootstrap_cis(features, clusters, accuracy, n_resamples=500, seed=11, strata=strata)
    assert two_level_cis(data, accuracy, n_resamples=500, seed=11) == one_level


def test_repeat_noise_widens_the_interval() -> None:
    # Ten conversations of one instance each: all right in repeat 0, all wrong in repeat 1. Conversations
    # alone are identical across resamples (every one is right in one repeat and wrong in the other), so the
    # whole spread comes from the repeats: the mean over two slots is the share of slots that drew repeat 0.
    n = 10
    data = RepeatSums.of([[1, 1]] * n + [[1, 0]] * n, [f"s{i}" for i in range(n)] * 2, [0] * n + [1] * n, 2)
    values = two_level_values(data, accuracy, n_resamples=4000, seed=0)["acc"]
    assert values.mean() == pytest.approx(0.5, abs=0.01)
    # Each value is the mean of 2n independent fair coins: sd = sqrt(0.25 / 20).
    assert values.std() == pytest.approx(np.sqrt(0.25 / (2 * n)), rel=0.08)


def test_spread_by_hand() -> None:
    out = spread([{"acc": 0.2, "f1": None}, {"acc": 0.4, "f1": 0.5}, {"acc": 0.9, "f1": 0.5}])
    assert out["mean"]["acc"] == pytest.approx(0.5)
    assert out["sd"]["acc"] == pytest.approx(((0.09 + 0.01 + 0.16) / 2) ** 0.5)
    assert out["range"]["acc"] == [0.2, 0.9]
    assert out["mean"]["f1"] is None and out["range"]["f1"] is None


def line(i: int, repeat: int, gold: str, pred: str) -> PredictionLine:
    return PredictionLine(
        instance_id=f"s{i % 3}::itp::{i}",
        task="itp",
        sample_id=f"s{i % 3}",
        scenario="couple",
        gold=gold,
        valid=True,
        prediction=pred,
        repeat=repeat,
    )


def test_a_repeated_scope_reports_each_repeat_the_mean_and_the_spread() -> None:
    golds = ["yes", "no", "yes", "no", "yes", "no"]
    answers = [["yes", "no", "yes", "no", "no", "no"], ["no", "no", "yes", "yes", "yes", "no"]]
    records = [line(i, r, g, answers[r][i]) for r in range(2) for i, g in enumerate(golds)]
    out = summarize_repeated_scope(BINARY_YES_NO, records, 2, n_resamples=200)
    # repeat 0: 5 of 6 right; repeat 1: 4 of 6 right.
    assert [r["accuracy"] for r in out["repeats"]["per_repeat"]] == pytest.approx([5 / 6, 4 / 6])
    assert out["accuracy"] == pytest.approx(0.75)
    assert out["repeats"]["range"]["accuracy"] == pytest.approx([4 / 6, 5 / 6])
    assert out["repeats"]["sd"]["accuracy"] == pytest.approx(np.std([5 / 6, 4 / 6], ddof=1))
    assert out["n"] == 6 and out["repeats"]["asks"] == 12 and out["repeats"]["k"] == 2
    lo, hi = out["ci"]["accuracy"]
    assert lo <= 0.75 <= hi
    # The counts and tables pool every ask: those of the one-level summary of all twelve lines.
    pooled = summarize_scope(BINARY_YES_NO, records, n_resamples=200)
    assert out["confusion"] == pooled["confusion"] and out["valid"] == 12


def test_circular_scopes_count_and_split_by_scenario() -> None:
    verdicts = [
        Verdict("a", "couple", True),
        Verdict("a", "couple", False),
        Verdict("b", "family", True),
        Verdict("c", "family", True),
    ]
    out = circular_scopes(verdicts, n_resamples=100)
    assert (out["couple"]["accuracy"], out["family"]["accuracy"], out["all"]["accuracy"]) == (0.5, 1.0, 0.75)
    assert out["family"]["ci"] == [1.0, 1.0]
    assert [out[s]["n"] for s in ("couple", "family", "all")] == [2, 2, 4]
