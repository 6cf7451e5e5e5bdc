"""Robustness tables from baseline runs of every perturbation: the random baseline (seeded per instance id)
answers the base and the perturbed instances, and the tables are checked against simple counts."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.data.load import load_samples
from rescue_bench.errors import ConfigError
from rescue_bench.metrics.compare import compare_task
from rescue_bench.records import Instance
from rescue_bench.report.robustness import circular_rows, robustness_rows, robustness_table
from rescue_bench.report.writers import markdown_table
from rescue_bench.rundir import RunData
from rescue_bench.tasks import TASKS, task_info
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.perturb import (
    apply_perturbations,
    circular_variants,
    perturbation_record,
    rotation_count,
)

DEMO = load_samples("demo")
TOP1 = ("itp", "rpp", "stp", "ssp")
SEED = 3


def answer(inst: Instance, seed: str | None = None) -> dict[str, Any]:
    """The random baseline's record for one instance (drawn with ``seed``, default its id), as the engine
    writes it to predictions.jsonl."""
    task = TASKS[inst.task]
    pred = task.INFO.random_answer(inst, random.Random(seed or inst.id))
    return {
        "instance_id": inst.id,
        "task": inst.task,
        "sample_id": inst.sample_id,
        "scenario": inst.scenario,
        "row_index": inst.row_index,
        "gold": inst.gold,
        "valid": pred.valid,
        "prediction": pred.value,
        "problems": list(pred.problems),
        "meta": inst.meta,
        "scores": task.score(pred, inst).metrics,
    }


def run(path: str, names: str = "") -> RunData:
    records = []
    for name in ("itp", "rpp", "stp", "ssp", "er"):
        if names:
            instances = apply_perturbations(TASKS[name], DEMO, TaskConfig(), names, SEED)
        else:
            instances = [i for s in DEMO for i in TASKS[name].build(s, TaskConfig())]
        records += [answer(i) for i in instances]
    manifest: dict[str, Any] = {"model": {"name": "baseline/random"}}
    if names:
        manifest["config"] = {"perturbation": perturbation_record(names, SEED)}
    return RunData.of(Path(path), manifest, records)


@pytest.fixture(scope="module")
def base() -> RunData:
    return run("base")


def accuracy(records: list[dict[str, Any]]) -> float:
    """Top-1 hit rate, written out: the first ranked answer (or the label) equals gold."""
    hits = [
        (r["prediction"][0] if isinstance(r["prediction"], list) else r["prediction"]) == r["gold"]
        for r in records
    ]
    return sum(hits) / len(hits)


@pytest.mark.parametrize("names", ["name-swap", "anonymize", "shuffle-window", "context:1", "no-cues"])
def test_answers_that_ignore_the_perturbation_do_not_move(base: RunData, names: str) -> None:
    """The random baseline draws from the same candidate positions whatever the names or rows, so after the
    renamed answers are mapped back nothing may change."""
    rows = robustness_rows(base, [run(names, names)], n_resamples=50)
    assert {r.task for r in rows} == {"itp", "rpp", "stp", "ssp", "er"}
    for row in rows:
        assert row.perturbation == names
        assert row.change == pytest.approx(0.0)
        if row.task in TOP1:
            assert row.flipped == 0.0
            assert row.n == len([p for p in base.predictions if p["task"] == row.task])


def test_label_order_moves_the_random_baseline(base: RunData) -> None:
    variant = run("shuffled", "label-order")
    rows = {r.task: r for r in robustness_rows(base, [variant], n_resamples=100)}
    assert rows["itp"].flipped == 0.0  # yes/no is not a closed list the perturbation reorders
    for task in ("rpp", "stp", "ssp"):
        assert rows[task].flipped is not None and rows[task].flipped > 0.2
    by_task = {t: [p for p in variant.predictions if p["task"] == t] for t in ("rpp",)}
    base_rpp = [p for p in base.predictions if p["task"] == "rpp"]
    assert rows["rpp"].metric == "accuracy"
    assert rows["rpp"].change == pytest.approx(accuracy(by_task["rpp"]) - accuracy(base_rpp))
    lo, hi = rows["rpp"].ci or (0.0, 0.0)
    assert lo <= rows["rpp"].change <= hi
    text = markdown_table(robustness_table(base, [variant], n_resamples=50))
    assert "label-order" in text and "RPP" in text


def test_renamed_runs_pair_only_after_mapping_back(base: RunData) -> None:
    variant = run("swapped", "name-swap")
    raw = [p for p in variant.predictions if p["task"] == "stp"]
    with pytest.raises(ConfigError, match="disagree on the gold"):
        compare_task(
            "stp",
            raw,
            [p for p in base.predictions if p["task"] == "stp"],
            spec=task_info("stp").metrics,
            n_resamples=10,
        )


def test_circular_eval_is_never_above_plain_accuracy(base: RunData) -> None:
    k = rotation_count([i for s in DEMO for i in TASKS["ssp"].build(s, TaskConfig())])
    variants = circular_variants("label-order:all", k)
    rotations = [run(f"rot{i}", str(v[0])) for i, v in enumerate(variants[1:], start=1)]
    rows = {r.task: r for r in circular_rows(base, rotations, n_resamples=50)}
    for task in ("rpp", "stp", "ssp"):
        every = [base, *rotations]
        per_id: dict[str, list[bool]] = {}
        for one in every:
            for p in one.predictions:
                if p["task"] == task:
                    per_id.setdefault(p["instance_id"], []).append(accuracy([p]) == 1.0)
        expected = sum(all(v) for v in per_id.values()) / len(per_id)
        assert rows[task].circular.value == pytest.approx(expected)
        assert rows[task].circular.value <= (rows[task].plain.value or 0.0)
        assert rows[task].rotations == k


# -- relation-aware report parts and the local-cue vs relation-intensive profile ---------------------------


@pytest.fixture(scope="module")
def scored(base: RunData) -> RunData:
    from rescue_bench.metrics.aggregate import aggregate_run, split_by_task
    from rescue_bench.metrics.relational import analysis_plan, relational_analyses
    from rescue_bench.tasks import metric_specs, task_infos

    records = base.predictions
    scores = aggregate_run(split_by_task(records), metric_specs(), n_resamples=50)
    plan = analysis_plan(task_infos())
    scores["_relational"] = relational_analyses(base.prediction_lines, DEMO, plan, n_resamples=50)
    return RunData.of(Path("scored"), base.run, records, scores=scores)


def test_relational_tables_and_figures(scored: RunData) -> None:
    from rescue_bench.report.relational import relational_data, relational_figures, relational_tables

    data = [relational_data(scored)]
    assert data[0]["_meta"]["format"] == 1  # read back from scores.json's _relational
    tables = {t.key: t for t in relational_tables(["random"], data)}
    assert {"relational_rpp_transition", "relational_stp_target_type", "relational_er_intensity"} <= set(
        tables
    )
    segment = tables["relational_rpp_segment"]
    rpp = [p for p in scored.predictions if p["task"] == "rpp"]
    assert sum(int(row[3]) for row in segment.rows) == len(rpp)  # type: ignore[arg-type]
    pngs = relational_figures(["random"], data)
    assert [f.key for f in pngs] == [
        "rpp_transition_accuracy_random_couple",
        "rpp_transition_accuracy_random_family",
    ]
    assert all(f.png.startswith(b"\x89PNG") for f in pngs)


def test_profile_groups_tasks_as_the_paper(scored: RunData) -> None:
    from rescue_bench.report.analysis import group_means, task_groups, task_profile
    from rescue_bench.report.relational import profile_figure, profile_table

    assert list(task_groups()) == ["itp", "er", "rpp", "stp", "ssp", "vp"]
    assert set(task_groups().values()) == {"local cues", "relation-intensive"}
    profile = task_profile(scored.scores)
    rpp = [p for p in scored.predictions if p["task"] == "rpp"]
    assert profile["rpp"] == pytest.approx(100 * accuracy(rpp))
    assert profile["er"] is None and profile["vp"] is None  # not judged
    means = group_means(profile)
    assert means["local cues"] == pytest.approx(profile["itp"])
    figure = profile_figure([scored, scored], ["a", "b"])
    assert figure is not None and figure.png.startswith(b"\x89PNG")
    assert len(profile_table([scored], ["a"]).rows) == 1


def repeated(path: str, names: str = "", repeats: int = 2) -> RunData:
    """RPP of :func:`run` with every instance asked ``repeats`` times, each repeat answering on its own."""
    rpp = TASKS["rpp"]
    if names:
        instances = apply_perturbations(rpp, DEMO, TaskConfig(), names, SEED)
    else:
        instances = [i for s in DEMO for i in rpp.build(s, TaskConfig())]
    records = [
        answer(inst, f"{inst.id}#{repeat}") | ({"repeat": repeat} if repeat else {})
        for repeat in range(repeats)
        for inst in instances
    ]
    manifest: dict[str, Any] = {"model": {"name": "baseline/random"}}
    if names:
        manifest["config"] = {"perturbation": perturbation_record(names, SEED)}
    return RunData.of(Path(path), manifest, records)


def test_repeated_runs_pair_each_repeat_and_count_instances_once() -> None:
    """With repeats, n counts instances, the flipped share is over (instance, repeat) pairs of the same
    repeat, and the change is that of the means over repeats (as ``compare``)."""
    base, variant = repeated("base2"), repeated("shuffled2", "label-order")
    (row,) = robustness_rows(base, [variant], n_resamples=50)
    n = len({p["instance_id"] for p in base.predictions})
    assert row.n == n and len(base.predictions) == 2 * n
    key = lambda p: (p["instance_id"], p.get("repeat", 0))  # noqa: E731
    first = lambda p: p["prediction"][0] if p["valid"] else None  # noqa: E731 - the ranked answer's top 1
    before = {key(p): first(p) for p in base.predictions}
    flips = sum(before[key(p)] != first(p) for p in variant.predictions)
    assert row.flipped == pytest.approx(flips / (2 * n)) and 0 < flips < 2 * n
    by_repeat = lambda run, r: [p for p in run.predictions if p.get("repeat", 0) == r]  # noqa: E731
    change = sum(accuracy(by_repeat(variant, r)) - accuracy(by_repeat(base, r)) for r in (0, 1)) / 2
    assert row.change == pytest.approx(change)
