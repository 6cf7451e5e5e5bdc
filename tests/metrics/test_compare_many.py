"""Many-way comparison: adjusted p-values against hand-computed cases, rank groups, and agreement with the
two-run comparison."""

from __future__ import annotations

import random
from typing import Any

import pytest

from rescue_bench.metrics.compare import compare_runs
from rescue_bench.metrics.compare_many import compare_many
from rescue_bench.metrics.multiplicity import adjust, rank_groups
from rescue_bench.tasks import metric_specs


def test_holm_against_a_hand_computed_case() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.5]
    # By hand, m = 5, multipliers 5, 4, 3, 2, 1 in increasing order of p: 0.005*5 = 0.025; 0.01*4 = 0.04;
    # 0.03*3 = 0.09; 0.04*2 = 0.08, raised to 0.09 (step-down p-values never decrease); 0.5*1 = 0.5.
    assert adjust(p, "holm") == pytest.approx([0.04, 0.09, 0.09, 0.025, 0.5])
    # capped at 1
    assert adjust([0.6, 0.7], "holm") == [1.0, 1.0]


def test_bh_against_a_hand_computed_case() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.5]
    # sorted 0.005, 0.01, 0.03, 0.04, 0.5 times 5/i: 0.025, 0.025, 0.05, 0.05, 0.5 (already monotone)
    assert adjust(p, "bh") == pytest.approx([0.025, 0.05, 0.05, 0.025, 0.5])
    assert adjust(p, "none") == p
    assert adjust([], "holm") == []


def test_rank_groups_chain_and_separation() -> None:
    values = [0.1, 0.9, 0.5, 0.45]
    apart = [[False] * 4 for _ in range(4)]
    for i, j in ((0, 1), (1, 3), (1, 2)):
        apart[i][j] = apart[j][i] = True
    # sorted 1 (0.9), 2 (0.5), 3 (0.45), 0 (0.1): {1} alone; {2, 3, 0} together
    assert rank_groups(values, apart) == ["b", "a", "b", "b"]
    assert rank_groups([None, 0.3], [[False, False], [False, False]]) == ["", "a"]


def _records(task: str, hit_rate: float, seed: int, samples: int = 12) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for s in range(samples):
        for row in range(6):
            gold = "yes" if (s + row) % 3 else "no"
            right = rng.random() < hit_rate
            pred = gold if right else ("no" if gold == "yes" else "yes")
            out.append(
                {
                    "instance_id": f"s{s}::{task}::{row}",
                    "task": task,
                    "sample_id": f"s{s}",
                    "scenario": "couple" if s % 2 else "family",
                    "gold": gold,
                    "valid": True,
                    "prediction": pred,
                }
            )
    return out


def test_two_runs_agree_with_compare_runs_and_holm_is_applied() -> None:
    runs = [{"itp": _records("itp", rate, seed)} for rate, seed in ((0.95, 1), (0.5, 2), (0.55, 3))]
    many = compare_many(runs, ["a", "b", "c"], metric_specs(), n_resamples=400, seed=3)
    two = compare_runs(runs[0], runs[1], metric_specs(), n_resamples=400, seed=3)
    f1 = next(m for m in many.tasks[0].scopes["all"].metrics if m.metric == "f1")
    first = f1.pairs[0]
    assert (first.a, first.b) == (0, 1)
    assert first.diff == pytest.approx(two["itp"]["all"]["metrics"]["f1"]["diff"])
    assert list(first.ci or ()) == pytest.approx(two["itp"]["all"]["metrics"]["f1"]["ci"])
    raw = [p.p for p in f1.pairs]
    assert [p.p_adjusted for p in f1.pairs] == pytest.approx(adjust([float(x or 0) for x in raw], "holm"))
    # run a is far better than b and c, which are alike
    assert f1.groups[0] == "a" and f1.groups[1] == f1.groups[2] == "b"
    tests = many.tasks[0].scopes["all"].mcnemar
    assert [t.p_adjusted for t in tests] == pytest.approx(adjust([t.p for t in tests], "holm"))


def test_only_shared_instances_are_compared() -> None:
    a, b, c = (_records("itp", 0.8, seed) for seed in (1, 2, 3))
    many = compare_many(
        [{"itp": a}, {"itp": b[6:]}, {"itp": c}], ["a", "b", "c"], metric_specs(), n_resamples=50
    )
    entry = many.tasks[0]
    assert entry.n_shared == len(a) - 6 and entry.only == (6, 0, 6)
