"""The relation-aware analyses on one demo conversation of each scenario and on the real release samples
of ../shared/data (skipped, with the reason, when absent), against counts worked out here from the raw rows
with simple code of their own (not through ``metrics.relational``; for the real samples the rows are read
from the JSONL file itself, not through the data layer)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.data.load import load_samples
from rescue_bench.data.schema import Sample
from rescue_bench.metrics.relational import analyses_of, analysis_plan, relational_analyses
from rescue_bench.rundir import PredictionLine
from rescue_bench.tasks import TASKS, task_infos
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.taxonomy import relation_labels

DEMO = {s.sample_id: s for s in load_samples("demo")}
PLAN = analysis_plan(task_infos())


def analysed(records: list[dict[str, Any]], samples: list[Sample], n: int) -> dict[str, Any]:
    lines = [PredictionLine.from_json(r) for r in records]
    return relational_analyses(lines, samples, PLAN, n_resamples=n)


def records_of(sample: Sample) -> list[dict[str, Any]]:
    """Records of every task: right on even rows, wrong (an invalid answer) on odd rows."""
    out = []
    for name, task in TASKS.items():
        if name not in ("itp", "rpp", "stp", "ssp", "er", "vp"):
            continue
        for inst in task.build(sample, TaskConfig()):
            right = inst.row_index % 2 == 0
            value: Any = (
                inst.gold if name == "itp" else [inst.gold] if name in ("rpp", "stp", "ssp") else None
            )
            scores = {"recall_at_1": float(right), "mrr": float(right)} if name in ("stp", "ssp") else {}
            if name == "er":
                scores = {"s_int": 5.0 if right else 1.0}
            out.append(
                {
                    "instance_id": inst.id,
                    "task": name,
                    "sample_id": inst.sample_id,
                    "scenario": inst.scenario,
                    "row_index": inst.row_index,
                    "gold": inst.gold,
                    "valid": right,
                    "prediction": value,
                    "scores": scores,
                    "meta": inst.meta,
                }
            )
    return out


Raw = list[dict[str, Any]]
Case = tuple[Sample, list[dict[str, Any]], dict[str, Any], Raw]


def raw_labels(sample: Sample, rows: Raw) -> dict[int, str]:
    key = (
        "relation_cycle_state"
        if any((r.get("relation_cycle_state") or "").strip() for r in rows)
        else "relation_pattern"
    )
    allowed = relation_labels(sample.scenario)
    return {r["row_index"]: r[key].strip() for r in rows if (r.get(key) or "").strip() in allowed}


def real_rows(path: Path) -> dict[str, Raw]:
    """Sample id -> its rows, as the JSON file holds them."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        out[record["sample_id"]] = record["rows"]
    return out


def groups(result: dict[str, Any], key: str) -> dict[str, tuple[int, dict[str, float]]]:
    return {g["group"]: (g["n"], g["values"]) for g in result[key]["groups"]}


REAL = ("alan_and_evelyn/003_s01e02_ct81_segment02", "family_therapy/003/merged")


@pytest.fixture(params=["demo_couple/nadia_and_tom_s01", "demo_family/hartley_family_s01", *REAL])
def case(request: pytest.FixtureRequest) -> Case:
    if request.param in REAL:
        path: Path = request.getfixturevalue("real_subset")
        sample = next(s for s in load_samples(path) if s.sample_id == request.param)
        rows = real_rows(path)[request.param]
    else:
        sample = DEMO[request.param]
        rows = sample.to_release()["rows"]
    records = records_of(sample)
    return sample, records, analysed(records, [sample], 50), rows


def test_rpp_segments_and_transitions(case: Case) -> None:
    sample, records, result, rows = case
    labels = raw_labels(sample, rows)
    assert labels, "the sample has labelled rows"
    rpp_rows = sorted(r["row_index"] for r in records if r["task"] == "rpp")
    assert rpp_rows == sorted(labels)  # one RPP instance per labelled row
    segments: Counter[str] = Counter()
    transitions: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    previous = None
    for row in sorted(labels):
        kind = "start" if previous is None else "stable" if previous == labels[row] else "changing"
        segments[kind] += 1
        hits[kind] += row % 2 == 0
        transitions[f"{previous or 'start'} -> {labels[row]}"] += 1
        previous = labels[row]
    got = groups(result, "rpp_segment")
    assert {k: n for k, (n, _) in got.items()} == dict(segments)
    assert {k: v["accuracy"] for k, (_, v) in got.items()} == pytest.approx(
        {k: hits[k] / segments[k] for k in segments}
    )
    assert {k: n for k, (n, _) in groups(result, "rpp_transition").items()} == dict(transitions)


def test_support_target_types(case: Case) -> None:
    _, records, result, raw = case
    rows = {r["row_index"]: r for r in raw}
    for task in ("stp", "ssp"):
        expected: Counter[str] = Counter()
        for record in records:
            if record["task"] != task:
                continue
            row = rows[record["row_index"]]
            names = [n for n in (row["support_strategy"][0].get("target") or []) if n != "Therapist"]
            names = names or [n for n in row.get("target") or [] if n != "Therapist"]
            names = list(dict.fromkeys(names))
            expected[
                "group"
                if {"Couple", "Family"} & set(names)
                else "one person"
                if len(names) == 1
                else "several people"
            ] += 1
        assert {k: n for k, (n, _) in groups(result, f"{task}_target_type").items()} == dict(expected)


def test_pattern_in_force(case: Case) -> None:
    sample, records, result, rows = case
    labels = raw_labels(sample, rows)
    for task in ("itp", "stp", "ssp"):
        expected: Counter[str] = Counter()
        for record in records:
            if record["task"] == task:
                row = record["row_index"] - (0 if task == "itp" else 1)
                found = [labels[r] for r in range(row, 0, -1) if r in labels]
                expected[found[0] if found else "(none)"] += 1
        assert {k: n for k, (n, _) in groups(result, f"{task}_pattern").items()} == dict(expected)


def test_er_bands_and_vp_targets(case: Case) -> None:
    _, records, result, _ = case
    bands: Counter[str] = Counter()
    scores: dict[str, list[float]] = {}
    for record in (r for r in records if r["task"] == "er"):
        level = record["gold"]["intensity"]
        band = "low (0-3)" if level <= 3 else "medium (4-6)" if level <= 6 else "high (7-10)"
        bands[band] += 1
        scores.setdefault(band, []).append(record["scores"]["s_int"])
    got = groups(result, "er_intensity")
    assert {k: n for k, (n, _) in got.items()} == dict(bands)
    assert {k: v["s_int"] for k, (_, v) in got.items()} == pytest.approx(
        {k: sum(v) / len(v) for k, v in scores.items()}
    )
    targets = Counter(min(3, len({g["target"] for g in r["gold"]})) for r in records if r["task"] == "vp")
    expected = {("3+" if k == 3 else str(k)): n for k, n in targets.items()}
    assert {k: n for k, (n, _) in groups(result, "vp_targets").items()} == expected


def test_cis_bracket_the_values_and_read_back(case: Case) -> None:
    _, _, result, _ = case
    analyses = analyses_of(result)
    assert analyses and result["_meta"]["format"] == 1
    for analysis in analyses:
        for group in analysis.groups:
            assert group.conversations == 1
            for metric, value in group.values.items():
                lo, hi = group.ci[metric]
                assert lo <= value + 1e-9 and value <= hi + 1e-9


def test_records_of_unknown_samples_are_left_out() -> None:
    sample = DEMO["demo_couple/nadia_and_tom_s01"]
    result = analysed(records_of(sample), [], 10)
    assert "rpp_segment" not in result and "stp_target_type" not in result
    assert "er_intensity" in result  # ER and VP need only their gold
