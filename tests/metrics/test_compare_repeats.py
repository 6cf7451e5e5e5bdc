"""Comparing runs with repeats (docs/repeats.md): each metric is the mean over repeats that `scores.json`
gives, McNemar pairs repeat 0 (one outcome per instance), and different repeat counts are refused."""

from __future__ import annotations

import random
from typing import Any

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.metrics.compare import compare_task
from rescue_bench.metrics.compare_many import compare_many
from rescue_bench.metrics.repeats import aggregate_repeated_task
from rescue_bench.tasks import metric_specs

Rec = dict[str, Any]
SPECS = metric_specs()
SAMPLES = [f"s{i}" for i in range(12)]


def itp(sample: str, row: int, gold: str, pred: str, repeat: int) -> Rec:
    return {
        "instance_id": f"{sample}::itp::{row}",
        "task": "itp",
        "sample_id": sample,
        "scenario": "couple" if int(sample[1:]) % 2 else "family",
        "row_index": row,
        "gold": gold,
        "valid": True,
        "prediction": pred,
        "repeat": repeat,
    }


def run(seed: int, k: int, flip: float) -> list[Rec]:
    """Three instances per sample; each repeat answers on its own (repeats differ)."""
    rng = random.Random(seed)
    golds = {(s, i): rng.choice(["yes", "no"]) for s in SAMPLES for i in range(3)}
    out = []
    for r in range(k):
        for (s, i), gold in golds.items():
            wrong = "no" if gold == "yes" else "yes"
            out.append(itp(s, i, gold, wrong if rng.random() < flip else gold, r))
    return out


def test_metrics_are_the_repeat_means_of_scores_json() -> None:
    a, b = run(1, 3, 0.2), run(1, 3, 0.45)
    assert {r["prediction"] for r in a if r["repeat"] == 0} and a[:36] != a[36:72]  # repeats differ
    out = compare_task("itp", a, b, spec=SPECS["itp"], n_resamples=300)["all"]
    scores_a = aggregate_repeated_task("itp", SPECS["itp"], a, 3, n_resamples=10)["all"]
    scores_b = aggregate_repeated_task("itp", SPECS["itp"], b, 3, n_resamples=10)["all"]
    assert out["n"] == 36 and out["repeats"] == 3
    for name in ("precision", "recall", "f1", "accuracy"):
        entry = out["metrics"][name]
        assert entry["a"] == pytest.approx(scores_a[name]) and entry["b"] == pytest.approx(scores_b[name])
        assert entry["ci"][0] <= entry["diff"] <= entry["ci"][1]
    # F1 pooled over every ask is not the mean of the repeats' F1: the comparison reports the latter
    pooled = aggregate_repeated_task("itp", SPECS["itp"], [{**r, "repeat": 0} for r in a], 1, n_resamples=10)
    assert out["metrics"]["f1"]["a"] != pytest.approx(pooled["all"]["f1"], abs=1e-9)
    hits = [
        (x["prediction"] == x["gold"], y["prediction"] == y["gold"])
        for x, y in zip(a, b, strict=True)
        if x["repeat"] == 0
    ]
    assert out["mcnemar"]["n"] == 36
    assert out["mcnemar"]["a_only"] == sum(1 for x, y in hits if x and not y)
    assert out["mcnemar"]["b_only"] == sum(1 for x, y in hits if y and not x)


def test_identical_repeats_compare_as_one_repeat() -> None:
    once_a, once_b = run(2, 1, 0.2), run(2, 1, 0.4)
    copies_a = [{**r, "repeat": k} for k in range(2) for r in once_a]
    copies_b = [{**r, "repeat": k} for k in range(2) for r in once_b]
    one = compare_task("itp", once_a, once_b, spec=SPECS["itp"], n_resamples=200)["all"]
    two = compare_task("itp", copies_a, copies_b, spec=SPECS["itp"], n_resamples=200)["all"]
    assert two["n"] == one["n"] and two["mcnemar"] == one["mcnemar"]
    for name, entry in one["metrics"].items():
        assert two["metrics"][name]["diff"] == pytest.approx(entry["diff"])
        assert two["metrics"][name]["ci"] == pytest.approx(entry["ci"])


def test_different_repeats_are_refused() -> None:
    with pytest.raises(ConfigError, match="3 repeats and run B 1"):
        compare_task("itp", run(1, 3, 0.2), run(1, 1, 0.2), spec=SPECS["itp"], n_resamples=10)
    records = [{"itp": run(1, 2, 0.2)}, {"itp": run(1, 2, 0.3)}, {"itp": run(1, 1, 0.3)}]
    with pytest.raises(ConfigError, match=r"different repeats \(a 2, b 2, c 1\)"):
        compare_many(records, ["a", "b", "c"], SPECS, n_resamples=10)


def test_many_way_uses_the_repeat_means() -> None:
    runs = [run(3, 2, flip) for flip in (0.1, 0.3, 0.5)]
    result = compare_many([{"itp": r} for r in runs], ["a", "b", "c"], SPECS, n_resamples=200)
    scope = result.tasks[0].scopes["all"]
    assert scope.n == 36
    f1 = next(m for m in scope.metrics if m.metric == "f1")
    expected = [aggregate_repeated_task("itp", SPECS["itp"], r, 2, n_resamples=10)["all"]["f1"] for r in runs]
    assert list(f1.values) == pytest.approx(expected)
