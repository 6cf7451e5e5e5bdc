"""The scores of a run: every task's records aggregated into ``scores.json``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rescue_bench.engine.manifest import TaskPlan
from rescue_bench.metrics.aggregate import aggregate_run, aggregate_task
from rescue_bench.records import Json

N_RESAMPLES = 1000
"""Bootstrap resamples of the confidence intervals in ``scores.json``."""


def aggregate_scores(
    plans: Sequence[TaskPlan],
    records: Sequence[Mapping[str, Json]],
    *,
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
) -> dict[str, Any]:
    """``scores.json``: the aggregation of every task's records, plus ``_meta``."""
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
    return scores
