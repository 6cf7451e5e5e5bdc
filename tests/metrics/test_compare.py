"""Paired comparison of two runs: shared instances, paired bootstrap CIs of differences, McNemar."""

from __future__ import annotations

from typing import Any

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.metrics.aggregate import aggregate_task
from rescue_bench.metrics.compare import compare_runs, compare_task, mcnemar
from rescue_bench.metrics.ranking import rank_metrics
from rescue_bench.tasks import metric_specs

Rec = dict[str, Any]
SPECS = metric_specs()


def itp(sample: str, row: int, gold: str, pred: str | None, scenario: str = "couple") -> Rec:
    return {
        "instance_id": f"{sample}::itp::{row}",
        "task": "itp",
        "sample_id": sample,
        "scenario": scenario,
        "row_index": row,
        "gold": gold,
        "valid": pred is not None,
        "prediction": pred,
        "problems": [],
        "meta": {},
        "scores": {},
    }


def test_mcnemar_hand_computed() -> None:
    # 5 discordant pairs, all won by A: exact two-sided p = 2 * 0.5**5, mid-p = 2 * 0.5**5 - 0.5**5
    r = mcnemar([True] * 5 + [True, False], [False] * 5 + [True, False])
    assert (r["n"], r["a_only"], r["b_only"]) == (7, 5, 0)
    assert r["p_exact"] == pytest.approx(0.0625)
    assert r["p_mid"] == pytest.approx(0.03125)
    balanced = mcnemar([True, False], [False, True])
    assert balanced["p_exact"] == pytest.approx(1.0) and balanced["p_mid"] == pytest.approx(1.0)
    assert mcnemar([True], [True]) == {"n": 1, "a_only": 0, "b_only": 0, "p_exact": 1.0, "p_mid": 1.0}
    with pytest.raises(ValueError):
        mcnemar([True], [])


def test_compare_itp_on_shared_instances() -> None:
    golds = ["yes", "no", "yes", "no", "yes", "no", "yes", "no"]
    samples = ["s1", "s1", "s2", "s2", "s3", "s3", "s4", "s4"]
    preds_a = ["yes", "no", "yes", "no", "yes", "yes", "no", "no"]
    preds_b = ["no", "no", "no", "no", "yes", "yes", "no", "yes"]
    run_a = [itp(s, i, g, p) for i, (s, g, p) in enumerate(zip(samples, golds, preds_a, strict=True))]
    run_b = [itp(s, i, g, p) for i, (s, g, p) in enumerate(zip(samples, golds, preds_b, strict=True))]
    run_a.append(itp("s9", 99, "yes", "yes"))  # only in A: not compared
    out = compare_task("itp", run_a, run_b, spec=SPECS["itp"], n_resamples=300)
    assert (out["n_shared"], out["only_a"], out["only_b"]) == (8, 1, 0)
    every = out["all"]
    alone_a = aggregate_task("itp", SPECS["itp"], run_a[:8], n_resamples=10)["all"]
    alone_b = aggregate_task("itp", SPECS["itp"], run_b, n_resamples=10)["all"]
    for name in ("precision", "recall", "f1", "accuracy"):
        entry = every["metrics"][name]
        assert entry["a"] == pytest.approx(alone_a[name]) and entry["b"] == pytest.approx(alone_b[name])
        assert entry["diff"] == pytest.approx(alone_a[name] - alone_b[name])
        assert entry["ci"][0] <= entry["diff"] <= entry["ci"][1]
    # correct A: 1,1,1,1,1,0,0,1 ; correct B: 0,1,0,1,1,0,0,0 -> A only 3, B only 0
    assert (every["mcnemar"]["a_only"], every["mcnemar"]["b_only"]) == (3, 0)
    assert every["mcnemar"]["p_exact"] == pytest.approx(0.25)


def test_identical_runs_have_zero_differences() -> None:
    run = [itp(f"s{i % 3}", i, "yes" if i % 2 else "no", "yes") for i in range(9)]
    out = compare_task("itp", run, [dict(r) for r in run], spec=SPECS["itp"], n_resamples=100)["all"]
    assert all(m["diff"] == 0.0 and m["ci"] == [0.0, 0.0] for m in out["metrics"].values())
    assert out["mcnemar"]["p_exact"] == 1.0


def test_gold_mismatch_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"disagree on the gold answer or scenario of s1::itp::0"):
        compare_task("itp", [itp("s1", 0, "yes", "yes")], [itp("s1", 0, "no", "yes")], spec=SPECS["itp"])
    with pytest.raises(ConfigError, match="scenario"):
        compare_task(
            "itp",
            [itp("s1", 0, "yes", "yes")],
            [itp("s1", 0, "yes", "yes", scenario="family")],
            spec=SPECS["itp"],
        )


def test_ranking_and_generation_comparisons_with_scopes() -> None:
    def stp(sample: str, row: int, ranked: list[str], scenario: str) -> Rec:
        rec = itp(sample, row, "Anna", None, scenario)
        rec.update(
            task="stp",
            instance_id=f"{sample}::stp::{row}",
            valid=True,
            prediction=ranked,
            scores=rank_metrics("Anna", ranked),
        )
        return rec

    run_a = [stp("c1", 0, ["Anna"], "couple"), stp("f1", 1, ["Ben", "Anna"], "family")]
    run_b = [stp("c1", 0, ["Ben", "Anna"], "couple"), stp("f1", 1, ["Ben", "Anna"], "family")]
    out = compare_task("stp", run_a, run_b, spec=SPECS["stp"], n_resamples=50)
    assert list(out)[3:] == ["couple", "family", "all"]
    assert out["couple"]["metrics"]["mrr"]["diff"] == pytest.approx(0.5)
    assert out["all"]["metrics"]["recall_at_1"]["diff"] == pytest.approx(0.5)
    assert out["all"]["mcnemar"]["a_only"] == 1

    def er(sample: str, scores: dict[str, Any]) -> Rec:
        rec = itp(sample, 0, "yes", "yes")
        rec.update(task="er", instance_id=f"{sample}::er::0", gold={}, prediction={}, scores=scores)
        return rec

    judged = [er("c1", {"s_int": 5.0, "s_emo": 4.0}), er("c2", {"s_int": 3.0, "s_emo": 2.0})]
    unjudged = [er("c1", {"s_int": 4.0}), er("c2", {"s_int": 4.0})]
    gen = compare_task("er", judged, unjudged, spec=SPECS["er"], n_resamples=50)["all"]
    assert gen["metrics"]["llm"] == {"a": 3.5, "b": None, "diff": None, "ci": None}
    assert gen["metrics"]["s_int"]["diff"] == pytest.approx(0.0)
    assert "mcnemar" not in gen


def test_compare_runs_lists_tasks_of_one_run_only() -> None:
    run = [itp("s1", 0, "yes", "yes")]
    out = compare_runs({"itp": run, "rpp": []}, {"itp": run, "vp": []}, SPECS, n_resamples=20)
    assert set(out) == {"itp", "_meta"}
    assert out["_meta"]["tasks_only_a"] == ["rpp"] and out["_meta"]["tasks_only_b"] == ["vp"]
