"""Robustness of a run to perturbations: a base run against runs of the same instances under perturbations
(``tasks.perturb``), and CircularEval over label rotations (docs/robustness.md).

Per task and perturbation the table shows the headline metric of the base and of the perturbed run on their
shared instances, the change (perturbed - base) with a paired cluster-bootstrap CI
(:func:`rescue_bench.metrics.compare.compare_scope`, conversations resampled within scenario), the share of
instances whose top-1 answer changed (:func:`flipped_ids`), and McNemar's mid-p. Renamed runs (``name-swap``,
``anonymize``) are mapped back to the original names first, so gold answers pair up and an answer "Tom"
under the swap counts as the base's "Nadia".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict

from rescue_bench.errors import ConfigError
from rescue_bench.judge.scores import judged_run_lines
from rescue_bench.metrics.aggregate import scope_labels
from rescue_bench.metrics.bootstrap import cluster_bootstrap_cis
from rescue_bench.metrics.compare import compare_scope, shared_instances
from rescue_bench.metrics.plan import correct_top1, top1
from rescue_bench.records import Json
from rescue_bench.report.entries import ComparedScope, MetricDiff
from rescue_bench.report.tables import Cell, Table
from rescue_bench.rundir import PredictionLine, RunData
from rescue_bench.tasks import TASK_NAMES, task_info
from rescue_bench.tasks.base import TaskInfo
from rescue_bench.tasks.perturb import PerturbationRecord, circular_correct
from rescue_bench.tasks.perturb.names import restore_names
from rescue_bench.taxonomy import SCENARIOS

Lines = dict[str, list[PredictionLine]]
COLUMNS = (
    "Task",
    "Perturbation",
    "n",
    "Metric",
    "Base",
    "Perturbed",
    "Change [95% CI]",
    "Flipped (%)",
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
    variant: int = 0
    """Index of the perturbed run among the variants (for links to its flipped instances)."""


class _Perturbed(BaseModel):
    """The part of ``run.json``'s ``config`` that records the perturbations (the compared configuration)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    perturbation: PerturbationRecord | None = None


def perturbation_of(run: RunData) -> PerturbationRecord | None:
    """The run's perturbation record (``run.json``'s ``config.perturbation``, else a top-level
    ``perturbation``), typed; ``None`` for an unperturbed run."""
    found = _Perturbed.model_validate(run.manifest.config).perturbation
    return found if found is not None else PerturbationRecord.of(run.manifest.perturbation)


def perturbation_name(run: RunData) -> str:
    """The run's perturbations as recorded in ``run.json`` (comma-joined), else its directory name."""
    record = perturbation_of(run)
    return record.label if record is not None and record.names else run.path.name


def run_lines(run: RunData) -> Lines:
    """The run's prediction lines by task, judgments folded in and renamed answers mapped back."""
    out: Lines = {}
    for line in judged_run_lines(run):
        restored = restore_names(line)
        out.setdefault(restored.task, []).append(restored)
    return out


def run_records(run: RunData) -> dict[str, list[dict[str, Json]]]:
    """:func:`run_lines` as JSON objects (for :func:`rescue_bench.metrics.compare.compare_runs`)."""
    return {task: [line.to_json() for line in lines] for task, lines in run_lines(run).items()}


class _Selection(BaseModel):
    """The part of ``run.json``'s ``config`` that selects the samples."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    limit_samples: int | None = None
    sample_ids: str | None = None


def differences(base: RunData, variant: RunData) -> list[str]:
    """What a perturbed run does not share with its base: data, model or tasks (empty when it fits)."""
    pairs = (
        ("data", base.manifest.dataset.hash, variant.manifest.dataset.hash),
        (
            "sample selection",
            _Selection.model_validate(base.manifest.config),
            _Selection.model_validate(variant.manifest.config),
        ),
        ("model", base.manifest.candidate, variant.manifest.candidate),
        ("repeats", str(base.repeats), str(variant.repeats)),
    )
    out = [f"{what} {_shown(b)} vs {_shown(v)}" for what, b, v in pairs if b != v]
    extra = [t for t in variant.tasks if t not in base.tasks]
    if extra:
        out.append(f"tasks {', '.join(extra)} not in the base")
    return out


def _shown(value: BaseModel | str | None) -> str:
    if isinstance(value, BaseModel):
        return ", ".join(f"{k}={v}" for k, v in value.model_dump().items())
    return repr(value)


def check_variants(base: RunData, variants: Sequence[RunData]) -> None:
    """Raises :class:`ConfigError` (one line) for the first variant that does not share the base's data,
    model or tasks, naming what differs."""
    for variant in variants:
        found = differences(base, variant)
        if found:
            raise ConfigError(
                f"{variant.path} cannot be compared with the base {base.path}: {'; '.join(found)}"
            )


def headline_metric(info: TaskInfo, metrics: dict[str, MetricDiff]) -> str:
    """F1 for a binary task, else the first headline metric with a value in both runs."""
    if "f1" in info.headline:
        return "f1"
    return next((m for m in info.headline if m in metrics and metrics[m].a is not None), info.headline[0])


def labels_by_scenario(info: TaskInfo) -> dict[str, tuple[str, ...]] | None:
    gold = info.gold_labels
    return None if gold is None or info.kind != "multiclass" else {s: gold(s) for s in SCENARIOS}


def flipped_pairs(
    task: str, base: Sequence[PredictionLine], variant: Sequence[PredictionLine]
) -> tuple[list[tuple[PredictionLine, PredictionLine]], int]:
    """(base, variant) lines of the shared instances whose top-1 answer changed (after renamed answers are
    mapped back), sorted, and how many lines the runs share; with repeats, each (instance, repeat) is paired
    with the same repeat. No pairs for tasks without top-1 answers (ER, VP)."""
    a, b, counts = shared_instances(task, base, variant)
    return (_flips(a, b) if task_info(task).mcnemar else []), counts["n_shared"]


def _flips(
    first: Sequence[PredictionLine], second: Sequence[PredictionLine]
) -> list[tuple[PredictionLine, PredictionLine]]:
    """The aligned pairs whose top-1 answers differ."""
    return [(x, y) for x, y in zip(first, second, strict=True) if top1(x) != top1(y)]


def _number(value: Json) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _interval(ci: Sequence[float | None] | None) -> tuple[float, float] | None:
    if ci is None or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return None
    return float(ci[0]), float(ci[1])


def task_row(
    task: str,
    perturbation: str,
    base: Sequence[PredictionLine],
    variant: Sequence[PredictionLine],
    *,
    n_resamples: int,
    seed: int,
    index: int = 0,
) -> RobustnessRow:
    info = task_info(task)
    aligned_v, aligned_b, counts = shared_instances(task, variant, base)
    labels = scope_labels(aligned_v, labels_by_scenario(info)) if info.kind == "multiclass" else ()
    shared = counts["n_shared"]  # (instance, repeat) lines: the flipped share's denominator
    scope = ComparedScope.model_validate(
        compare_scope(info.metrics, aligned_v, aligned_b, labels, n_resamples=n_resamples, seed=seed)
        if shared
        else {"n": 0}
    )
    metric = headline_metric(info, scope.metrics)
    entry = scope.metrics[metric] if metric in scope.metrics else MetricDiff()
    flipped = len(_flips(aligned_b, aligned_v)) / shared if shared and info.mcnemar else None
    return RobustnessRow(
        task,
        perturbation,
        len({line.instance_id for line in aligned_v}),
        metric,
        _number(entry.b),
        _number(entry.a),
        _number(entry.diff),
        _interval(entry.ci),
        flipped,
        None if scope.mcnemar is None else _number(scope.mcnemar["p_mid"]),
        index,
    )


def robustness_rows(
    base: RunData, variants: Sequence[RunData], *, n_resamples: int = 1000, seed: int = 0
) -> list[RobustnessRow]:
    """One row per task both runs have, per variant run, in task order then variant order.

    Raises:
        ConfigError: a variant does not share the base's data, model or tasks.
    """
    check_variants(base, variants)
    base_lines = run_lines(base)
    by_variant = [(perturbation_name(v), run_lines(v)) for v in variants]
    order = [t for t in TASK_NAMES if t in base_lines]
    return [
        task_row(task, name, base_lines[task], lines[task], n_resamples=n_resamples, seed=seed, index=i)
        for task in order
        for i, (name, lines) in enumerate(by_variant)
        if lines.get(task)
    ]


def robustness_table(
    base: RunData,
    variants: Sequence[RunData],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    rows: Sequence[RobustnessRow] | None = None,
) -> Table:
    """The robustness table of ``variants`` against ``base`` (see the module docstring)."""
    if rows is None:
        rows = robustness_rows(base, variants, n_resamples=n_resamples, seed=seed)
    shown = []
    for row in rows:
        info = task_info(row.task)
        scale, digits = (100.0, 2) if info.percent else (1.0, 3)
        lo, hi = row.ci if row.ci is not None else (None, None)
        shown.append(
            (
                row.task.upper(),
                row.perturbation,
                row.n,
                row.metric,
                Cell(row.base, scale=scale, digits=digits),
                Cell(row.perturbed, scale=scale, digits=digits),
                Cell(row.change, lo, hi, scale, digits),
                Cell(row.flipped, scale=100.0, digits=1),
                row.mcnemar_p,
            )
        )
    note = (
        f"Base: {base.name} ({base.path.name}). Change = perturbed - base on shared instances, paired "
        "cluster bootstrap CI (conversations resampled within scenario). Flipped: share of instances whose "
        "top-1 answer changed. McNemar: two-sided mid-p on top-1 correctness (independent instances)."
    )
    return Table("robustness", "Robustness to perturbations", COLUMNS, tuple(shown), note)


@dataclass(frozen=True, slots=True)
class CircularRow:
    task: str
    n: int
    rotations: int
    plain: Cell
    circular: Cell


def circular_rows(
    base: RunData, rotations: Sequence[RunData], *, n_resamples: int = 1000, seed: int = 0
) -> list[CircularRow]:
    """Per task with top-1 answers: plain accuracy of the base run and CircularEval accuracy (correct under
    every rotation run, on instances all of them share), each with a cluster-bootstrap CI."""
    base_lines = run_lines(base)
    per_rotation = [run_lines(r) for r in rotations]
    out = []
    for task in (t for t in TASK_NAMES if t in base_lines and task_info(t).mcnemar):
        verdicts = circular_correct([base_lines[task], *(r.get(task, []) for r in per_rotation)])
        if not verdicts:
            continue
        members = [r for r in base_lines[task] if r.instance_id in verdicts]
        kind = task_info(task).kind
        plain = [correct_top1(kind, r) for r in members]
        circular = [verdicts[r.instance_id] for r in members]
        out.append(
            CircularRow(
                task,
                len(members),
                1 + len(rotations),
                _mean_ci(plain, members, n_resamples, seed),
                _mean_ci(circular, members, n_resamples, seed),
            )
        )
    return out


def _mean_ci(hits: Sequence[bool], records: Sequence[PredictionLine], n_resamples: int, seed: int) -> Cell:
    features = np.asarray([[1.0, float(h)] for h in hits])
    cis = cluster_bootstrap_cis(
        features,
        [r.sample_id for r in records],
        lambda s: {"acc": s[..., 1] / s[..., 0]},
        n_resamples=n_resamples,
        seed=seed,
        strata=[r.scenario for r in records],
    )
    lo, hi = cis["acc"]
    return Cell(float(np.mean(features[:, 1])), lo, hi, 100.0, 2)


def circular_table(
    base: RunData, rotations: Sequence[RunData], *, n_resamples: int = 1000, seed: int = 0
) -> Table:
    """CircularEval beside plain accuracy (``label-order:all``: the base run is rotation 0)."""
    rows = tuple(
        (r.task.upper(), r.n, r.rotations, r.plain, r.circular)
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
