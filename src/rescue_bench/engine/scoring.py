"""The scores of a run: every task's records aggregated into ``scores.json``, with the relation-aware
analyses of the records (``_relational``, :mod:`rescue_bench.metrics.relational`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rescue_bench.data.schema import Sample
from rescue_bench.engine.plans import TaskPlan
from rescue_bench.metrics.aggregate import aggregate_run, aggregate_task, typed_records
from rescue_bench.metrics.relational import analysis_plan, relational_analyses
from rescue_bench.metrics.repeats import Verdict, aggregate_repeated_task, circular_scopes
from rescue_bench.rundir import PredictionLine
from rescue_bench.tasks.perturb import circular_correct

N_RESAMPLES = 1000
"""Bootstrap resamples of the confidence intervals in ``scores.json``."""


def aggregate_scores(
    plans: Sequence[TaskPlan],
    records: Sequence[PredictionLine],
    *,
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
    samples: Sequence[Sample] | None = None,
) -> dict[str, Any]:
    """``scores.json``: the aggregation of every task's records, plus ``_meta``, and with ``samples`` the
    analyses the planned tasks declare (``TaskInfo.analyses``) as ``_relational``.

    A task asked several times (``repeats``, CircularEval's rotations) gets the mean over repeats with a
    two-level CI (:mod:`rescue_bench.metrics.repeats`); CircularEval adds ``circular`` per scope.
    ``records`` are the run's lines (checked here, once).
    """
    by_task: dict[str, list[PredictionLine]] = {plan.name: [] for plan in plans}
    for record in records:
        if record.task in by_task:
            by_task[record.task].append(record)
    scores: dict[str, Any] = {}
    typed: dict[str, list[PredictionLine]] = {}
    for plan in plans:
        if not by_task[plan.name]:
            continue
        spec = plan.task.INFO.metrics
        # Checked once here (one-line errors naming the record), then handed down.
        mine = typed[plan.name] = typed_records(plan.name, by_task[plan.name], spec)
        if plan.repeats > 1:
            scores[plan.name] = aggregate_repeated_task(
                plan.name, spec, mine, plan.repeats, seed=seed, n_resamples=n_resamples
            )
        else:
            scores[plan.name] = aggregate_task(plan.name, spec, mine, seed=seed, n_resamples=n_resamples)
        if plan.rotated:
            for scope, entry in _circular(plan, mine, seed, n_resamples).items():
                scores[plan.name][scope]["circular"] = entry
    scores["_meta"] = aggregate_run({}, {}, seed=seed, n_resamples=n_resamples)["_meta"]
    wanted = analysis_plan(p.task.INFO for p in plans)
    if samples is not None and wanted:
        lines = [line for task in typed.values() for line in task]
        scores["_relational"] = relational_analyses(
            lines, samples, wanted, n_resamples=n_resamples, seed=seed
        )
    return scores


def _circular(
    plan: TaskPlan, records: Sequence[PredictionLine], seed: int, n_resamples: int
) -> dict[str, dict[str, Any]]:
    """CircularEval per scope: an instance counts only if it is correct under every rotation (repeat)."""
    rotations: list[list[PredictionLine]] = [[] for _ in range(plan.repeats)]
    for line in records:
        rotations[line.repeat].append(line)
    correct = circular_correct(rotations)
    verdicts = [Verdict(i.sample_id, i.scenario, correct[i.id]) for i in plan.instances if i.id in correct]
    return circular_scopes(verdicts, seed=seed, n_resamples=n_resamples)
