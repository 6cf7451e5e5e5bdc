"""Robustness of a run to perturbations: a base run against runs of the same instances under perturbations
(``tasks.perturb``), and CircularEval over label rotations (docs/robustness.md).

Per task and perturbation the table shows the headline metric of the base and of the perturbed run on their
shared instances, the change (perturbed - base) with a paired cluster-bootstrap CI
(:func:`rescue_bench.metrics.compare.compare_task`), the share of instances whose top-1 answer changed, and
McNemar's mid-p. Renamed runs (``name-swap``, ``anonymize``) are mapped back to the original names first, so
gold answers pair up and an answer "Tom" under the swap counts as the base's "Nadia".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rescue_bench.judge.merge import judged_records
from rescue_bench.metrics.aggregate import as_line, split_by_task, top1
from rescue_bench.metrics.bootstrap import cluster_bootstrap_cis
from rescue_bench.metrics.compare import compare_task, correct_top1, shared_instances
from rescue_bench.report.tables import Cell, Table
from rescue_bench.rundir import RunData
from rescue_bench.tasks import TASK_NAMES, task_info
from rescue_bench.tasks.base import TaskInfo
from rescue_bench.tasks.perturb import circular_correct
from rescue_bench.tasks.perturb.names import restore_names
from rescue_bench.taxonomy import SCENARIOS

Record = Mapping[str, Any]
COLUMNS = (
    "Task",
    "Perturbation",
    "n",
    "Metric",
    "Base",
    "Perturbed",
    "Change [95% CI]",
    "Flipped",
    "McNemar p",
)


@dataclass(frozen=True, slots=True)
class RobustnessRow:
    """One task under one perturbation, against the base run, on their shared instances."""

    task: str
    perturbation: str
    n: int
    metric: str
    base: float | None
    perturbed: float | None
    change: float | None
    ci: tuple[float, float] | None
    flipped: float | None
    """Share of shared instances whose top-1 answer differs (``None`` for ER and VP)."""
    mcnemar_p: float | None


def perturbation_name(run: RunData) -> str:
    """The run's perturbations as recorded in ``run.json`` (comma-joined), else its directory name."""
    record = run.manifest.perturbation or {}
    names = record.get("names")
    if isinstance(names, list) and names:
        return ",".join(str(n) for n in names)
    return run.path.name


def run_records(run: RunData) -> dict[str, list[Record]]:
    """The run's records by task, judgments folded in and renamed answers mapped back."""
    records = judged_records(run.prediction_lines, run.judgment_lines)
    return split_by_task(restore_names(r) for r in records)


def headline_metric(info: TaskInfo, values: Mapping[str, Any]) -> str:
    """F1 for a binary task, else the first headline metric with a value in ``values``."""
    if "f1" in info.headline:
        return "f1"
    return next(
        (m for m in info.headline if isinstance(values.get(m), dict) and values[m]["a"] is not None),
        info.headline[0],
    )


def labels_by_scenario(info: TaskInfo) -> dict[str, tuple[str, ...]] | None:
    gold = info.gold_labels
    return None if gold is None or info.kind != "multiclass" else {s: gold(s) for s in SCENARIOS}


def flipped_share(task: str, base: Sequence[Record], variant: Sequence[Record]) -> float | None:
    """Share of shared instances whose top-1 answer changed; ``None`` without top-1 answers."""
    if not task_info(task).mcnemar:
        return None
    a, b, counts = shared_instances(task, [as_line(r) for r in base], [as_line(r) for r in variant])
    if not counts["n_shared"]:
        return None
    return sum(top1(x) != top1(y) for x, y in zip(a, b, strict=True)) / counts["n_shared"]


def task_row(
    task: str,
    perturbation: str,
    base: Sequence[Record],
    variant: Sequence[Record],
    *,
    n_resamples: int,
    seed: int,
) -> RobustnessRow:
    info = task_info(task)
    result = compare_task(
        task,
        variant,
        base,
        spec=info.metrics,
        labels_by_scenario=labels_by_scenario(info),
        n_resamples=n_resamples,
        seed=seed,
    )
    scope = result.get("all") or {"n": 0, "metrics": {}}
    metric = headline_metric(info, scope["metrics"])
    entry = scope["metrics"].get(metric) or {"a": None, "b": None, "diff": None, "ci": None}
    mcnemar = scope.get("mcnemar")
    return RobustnessRow(
        task,
        perturbation,
        int(scope["n"]),
        metric,
        entry["b"],
        entry["a"],
        entry["diff"],
        None if entry["ci"] is None else (float(entry["ci"][0]), float(entry["ci"][1])),
        flipped_share(task, base, variant),
        None if mcnemar is None else float(mcnemar["p_mid"]),
    )


def robustness_rows(
    base: RunData, variants: Sequence[RunData], *, n_resamples: int = 1000, seed: int = 0
) -> list[RobustnessRow]:
    """One row per task both runs have, per variant run, in task order then variant order."""
    base_records = run_records(base)
    by_variant = [(perturbation_name(v), run_records(v)) for v in variants]
    order = [t for t in TASK_NAMES if t in base_records]
    return [
        task_row(task, name, base_records[task], records[task], n_resamples=n_resamples, seed=seed)
        for task in order
        for name, records in by_variant
        if records.get(task)
    ]


def robustness_table(
    base: RunData, variants: Sequence[RunData], *, n_resamples: int = 1000, seed: int = 0
) -> Table:
    """The robustness table of ``variants`` against ``base`` (see the module docstring)."""
    rows = []
    for row in robustness_rows(base, variants, n_resamples=n_resamples, seed=seed):
        info = task_info(row.task)
        scale, digits = (100.0, 2) if info.percent else (1.0, 3)
        lo, hi = row.ci if row.ci is not None else (None, None)
        rows.append(
            (
                row.task.upper(),
                row.perturbation,
                row.n,
                row.metric,
                Cell(row.base, scale=scale, digits=digits),
                Cell(row.perturbed, scale=scale, digits=digits),
                Cell(row.change, lo, hi, scale, digits),
                None if row.flipped is None else f"{100 * row.flipped:.1f}%",
                None if row.mcnemar_p is None else f"{row.mcnemar_p:.3g}",
            )
        )
    note = (
        f"Base: {base.name} ({base.path.name}). Change = perturbed - base on shared instances, paired "
        "cluster bootstrap CI (conversations resampled within scenario). Flipped: share of instances whose "
        "top-1 answer changed. McNemar: two-sided mid-p on top-1 correctness (independent instances)."
    )
    return Table("robustness", "Robustness to perturbations", COLUMNS, tuple(rows), note)


def circular_rows(
    base: RunData, rotations: Sequence[RunData], *, n_resamples: int = 1000, seed: int = 0
) -> list[dict[str, Any]]:
    """Per task with top-1 answers: plain accuracy of the base run and CircularEval accuracy (correct under
    every rotation run, on instances all of them share), each with a cluster-bootstrap CI."""
    base_records = run_records(base)
    per_rotation = [run_records(r) for r in rotations]
    out = []
    for task in (t for t in TASK_NAMES if t in base_records and task_info(t).mcnemar):
        lists = [base_records[task], *(r.get(task, []) for r in per_rotation)]
        verdicts = circular_correct(lists)
        if not verdicts:
            continue
        by_id = {str(r["instance_id"]): r for r in base_records[task]}
        members = [by_id[i] for i in verdicts]
        kind = task_info(task).kind
        plain = [correct_top1(kind, as_line(r)) for r in members]
        out.append(
            {
                "task": task,
                "n": len(members),
                "rotations": len(lists),
                "plain": _mean_ci(plain, members, n_resamples, seed),
                "circular": _mean_ci(
                    [verdicts[str(r["instance_id"])] for r in members], members, n_resamples, seed
                ),
            }
        )
    return out


def _mean_ci(hits: Sequence[bool], records: Sequence[Record], n_resamples: int, seed: int) -> Cell:
    features = np.asarray([[1.0, float(h)] for h in hits])
    cis = cluster_bootstrap_cis(
        features,
        [str(r["sample_id"]) for r in records],
        lambda s: {"acc": s[..., 1] / s[..., 0]},
        n_resamples=n_resamples,
        seed=seed,
        strata=[str(r["scenario"]) for r in records],
    )
    lo, hi = cis["acc"]
    return Cell(float(np.mean(features[:, 1])), lo, hi, 100.0, 2)


def circular_table(
    base: RunData, rotations: Sequence[RunData], *, n_resamples: int = 1000, seed: int = 0
) -> Table:
    """CircularEval beside plain accuracy (``label-order:all``: the base run is rotation 0)."""
    rows = tuple(
        (r["task"].upper(), r["n"], r["rotations"], r["plain"], r["circular"])
        for r in circular_rows(base, rotations, n_resamples=n_resamples, seed=seed)
    )
    note = (
        "An instance counts for CircularEval only if its top-1 answer is correct under every label rotation."
    )
    return Table(
        "circular_eval",
        "CircularEval over label rotations",
        ("Task", "n", "Rotations", "Accuracy [95% CI]", "CircularEval [95% CI]"),
        rows,
        note,
    )
