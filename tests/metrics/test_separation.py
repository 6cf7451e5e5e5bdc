"""Rank groups at any study size (issue #39.1): ten runs of clearly different accuracy are told apart, a model
answering nonsense stands alone, too few conversations give no groups and say why, and (property) the groups
never join runs whose simultaneous intervals are disjoint."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rescue_bench.metrics.aggregate import typed_records
from rescue_bench.metrics.compare import paired_draws
from rescue_bench.metrics.compare_many import ManyComparison, MetricMatrix, compare_many
from rescue_bench.metrics.plan import metric_plan
from rescue_bench.metrics.separation import (
    Resolution,
    bonferroni_z,
    clusters_needed,
    normal_p,
    p_floor,
    resolution_legend,
    standard_error,
)
from rescue_bench.tasks import metric_specs

RATES = (0.98, 0.92, 0.85, 0.78, 0.7, 0.62, 0.55, 0.45, 0.35)


def records(hit_rate: float, seed: int, samples: int, *, nonsense: bool = False) -> list[dict[str, Any]]:
    """ITP prediction lines of one run: six instances per conversation, balanced yes/no gold, each right with
    probability ``hit_rate``; ``nonsense``: every answer failed to parse (a counted miss)."""
    rng = random.Random(seed)
    out = []
    for s in range(samples):
        for row in range(6):
            gold = "yes" if row % 2 else "no"
            right = rng.random() < hit_rate
            out.append(
                {
                    "instance_id": f"s{s}::itp::{row}",
                    "task": "itp",
                    "sample_id": f"s{s}",
                    "scenario": "couple" if s % 4 else "family",
                    "gold": gold,
                    "valid": not nonsense,
                    "prediction": None
                    if nonsense
                    else (gold if right else ("no" if gold == "yes" else "yes")),
                }
            )
    return out


def ten_runs(samples: int) -> list[dict[str, list[dict[str, Any]]]]:
    """Nine runs from nearly right to mostly wrong, and one answering nonsense."""
    made = [{"itp": records(rate, seed, samples)} for seed, rate in enumerate(RATES)]
    return [*made, {"itp": records(0.0, 99, samples, nonsense=True)}]


def f1(result: ManyComparison) -> MetricMatrix:
    return next(m for m in result.tasks[0].scopes["all"].metrics if m.metric == "f1")


def test_ten_runs_of_different_accuracy_are_told_apart() -> None:
    names = [f"run{i}" for i in range(10)]
    result = compare_many(ten_runs(40), names, metric_specs(), n_resamples=1000, seed=0)
    matrix = f1(result)
    groups = matrix.groups
    assert matrix.resolution.supported and matrix.resolution.pairs == 45
    # the nonsense model shares no letter with any other run
    assert groups[9] and all(not set(groups[9]) & set(g) for g in groups[:9]), groups
    # the best and the worst answering runs, tens of points apart, share no letter either
    assert not set(groups[0]) & set(groups[8]), groups
    assert len({letter for g in groups for letter in g}) >= 4, groups
    # p-values go far below what counting 1,000 resamples could give (2 / 1001)
    assert min(p.p for p in matrix.pairs if p.p is not None) < 1e-4


def test_few_conversations_give_no_groups_and_say_why() -> None:
    result = compare_many(ten_runs(6), [f"r{i}" for i in range(10)], metric_specs(), n_resamples=200)
    matrix = f1(result)
    assert matrix.groups == ("",) * 10
    reason = matrix.resolution.reason()
    assert "6 conversations cannot give p below 0.031" in reason and "at least 11 conversations" in reason
    legend = result.legend()
    missing = legend.partition("No groups for ")[2]
    assert "ITP f1" in missing and "at least 11 conversations" in missing
    assert "normal approximation" in legend and "Holm" in legend


def test_resolution_of_a_ten_run_study() -> None:
    ten = Resolution.of(191, 45, 0.05, "holm")
    assert ten.supported and ten.threshold == pytest.approx(0.05 / 45) and ten.floor == 2.0**-190
    assert not Resolution.of(10, 45, 0.05, "holm").supported and Resolution.of(11, 45, 0.05, "holm").supported
    assert clusters_needed(45, 0.05, "holm") == 11 and p_floor(11) < 0.05 / 45 < p_floor(10)
    assert Resolution.of(6, 1, 0.05, "holm").supported  # two runs: one pair, threshold 0.05 > 1/32
    assert not Resolution.of(40, 0, 0.05, "holm").supported  # no pair with values: nothing to claim
    assert resolution_legend([("ER llm", Resolution.of(40, 0, 0.05, "holm"))]) == ""  # and nothing to say


def test_normal_p_has_no_floor_from_the_resamples() -> None:
    draws = np.random.default_rng(0).normal(0.3, 0.02, size=1000)
    # z = 15: far below 2 / 1001, the smallest a count over 1,000 resamples gives
    assert normal_p(0.3, draws) < 1e-40
    assert normal_p(0.0, draws) == 1.0
    se = standard_error(draws)
    assert se is not None and normal_p(1.96 * se, draws) == pytest.approx(0.05, abs=1e-4)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rates=st.lists(st.floats(0.0, 1.0), min_size=3, max_size=7),
    samples=st.integers(4, 30),
    seed=st.integers(0, 1000),
    method=st.sampled_from(["holm", "bh", "none"]),
)
def test_groups_never_join_runs_whose_simultaneous_intervals_are_disjoint(
    rates: list[float], samples: int, seed: int, method: Any
) -> None:
    runs = [{"itp": records(rate, seed + i, samples)} for i, rate in enumerate(rates)]
    result = compare_many(
        runs, [f"r{i}" for i in range(len(runs))], metric_specs(), method=method, n_resamples=300, seed=seed
    )
    spec = metric_specs()["itp"]
    lines = [typed_records("itp", run["itp"], spec) for run in runs]
    draws = paired_draws(metric_plan(spec, ()), lines, 300, seed)
    for matrix in result.tasks[0].scopes["all"].metrics:
        z = bonferroni_z(matrix.resolution.pairs, result.level)
        ses = [standard_error(d[matrix.metric]) for d in draws]
        for i in range(len(runs)):
            for j in range(i + 1, len(runs)):
                vi, vj, si, sj = matrix.values[i], matrix.values[j], ses[i], ses[j]
                if vi is None or vj is None or si is None or sj is None:
                    continue
                disjoint = abs(vi - vj) > z * (si + sj) * (1 + 1e-9)
                if disjoint:
                    shared = set(matrix.groups[i]) & set(matrix.groups[j])
                    assert not shared, (matrix.metric, i, j, matrix.groups)
