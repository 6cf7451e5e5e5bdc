"""The scores of a run: every task's records aggregated into ``scores.json``, with the relation-aware
analyses of the records (``_relational``, :mod:`rescue_bench.metrics.relational`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rescue_bench.data.schema import Sample
from rescue_bench.engine.manifest import TaskPlan
from rescue_bench.metrics.aggregate import aggregate_run, aggregate_task
from rescue_bench.metrics.relational import analysis_plan, relational_analyses
from rescue_bench.records import Json
from rescue_bench.rundir import PredictionLine

N_RESAMPLES = 1000
"""Bootstrap resamples of the confidence intervals in ``scores.json``."""


def aggregate_scores(
    plans: Sequence[TaskPlan],
    records: Sequence[Mapping[str, Json]],
    *,
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
    samples: Sequence[Sample] | None = None,
) -> dict[str, Any]:
    """``scores.json``: the aggregation of every task's records, plus ``_meta``, and with ``samples`` the
    analyses the planned tasks declare (``TaskInfo.analyses``) as ``_relational``."""
    by_task: dict[str, list[Mapping[str, Json]]] = {plan.name: [] for plan in plans}
    for record in records:
        if record.get("task") in by_task:
            by_task[str(record["task"])].append(record)
    scores: dict[str, Any] = {}
    for plan in plans:
        mine = by_task[plan.name]
        if mine:
            scores[plan.name] = aggregate_task(
                plan.name, plan.task.INFO.metrics, mine, seed=seed, n_resamples=n_resamples
            )
    scores["_meta"] = aggregate_run({}, {}, seed=seed, n_resamples=n_resamples)["_meta"]
    wanted = analysis_plan(p.task.INFO for p in plans)
    if samples is not None and wanted:
        lines = [PredictionLine.from_json(r) for task in by_task.values() for r in task]
        scores["_relational"] = relational_analyses(
            lines, samples, wanted, n_resamples=n_resamples, seed=seed
        )
    return scores
