"""``scores.json`` of a judge pass: the run's tasks aggregated with the judgments folded in.

A run without repeats (and judged once per reply) is aggregated exactly as before
(:func:`rescue_bench.metrics.aggregate.aggregate_run`). A judged task with repeats, or judged
``judge_repeats`` > 1 times per reply, is aggregated as every repeated task is
(:func:`rescue_bench.metrics.repeats.aggregate_repeated_task`: mean over repeats, two-level CI, spread), each
(prediction repeat r, judge repeat j) being repeat ``r * judge_repeats + j`` (docs/repeats.md). A task that
is not judged keeps the entry the engine wrote (it holds CircularEval's ``circular``), or is aggregated anew.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rescue_bench.judge.merge import JUDGED_TASKS, judge_repeat_count, judge_repeat_lines, judged_lines
from rescue_bench.judge.rubric import judge_rubric
from rescue_bench.metrics.aggregate import aggregate_run, aggregate_task, split_by_task
from rescue_bench.metrics.generation import score_value
from rescue_bench.metrics.repeats import aggregate_repeated_task
from rescue_bench.records import Json
from rescue_bench.rundir import JudgmentLine, PredictionLine, RunData
from rescue_bench.tasks import metric_specs


def repeat_count(lines: Sequence[PredictionLine]) -> int:
    """How often a task's instances were asked: 1 + the highest repeat present."""
    return 1 + max((line.repeat for line in lines), default=0)


def rescaled(
    lines: Sequence[PredictionLine], to_score: Mapping[str, Callable[[float], float]]
) -> list[PredictionLine]:
    """The lines with each judged instance's ``llm`` taken from its judge total by its task's reading
    (``to_score``: task -> map, e.g. VP's ``--vp-judge-scale integer``); other lines unchanged."""
    out = []
    for line in lines:
        rule = judge_rubric(line.task) if line.task in to_score else None
        key = rule.total.key if rule is not None and rule.total is not None else None
        total = score_value(line.scores, key) if key is not None else None
        if total is not None:
            line = line.model_copy(update={"scores": {**line.scores, "llm": to_score[line.task](total)}})
        out.append(line)
    return out


def run_to_score(config: Mapping[str, Json]) -> dict[str, Callable[[float], float]]:
    """Task -> how its instances' ``llm`` is read from the judge total under a run's recorded config, for the
    tasks whose reading is not their own ``derive`` (VP's ``--vp-judge-scale integer``).

    >>> run_to_score({"task_options": {"vp": {"judge_scale": "integer"}}})["vp"](4.0)
    4.0
    >>> run_to_score({})
    {}

    Raises:
        DataError: a recorded option is damaged (one line naming it).
    """
    readings = {task: judge_rubric(task).read(config) for task in JUDGED_TASKS}
    return {task: found.to_score for task, found in readings.items() if found.to_score is not None}


def judged_run_lines(run: RunData) -> list[PredictionLine]:
    """The run's prediction lines with its judgments folded in, each judged instance's ``llm`` read as the run
    reads it (:func:`run_to_score`): what its ``scores.json`` aggregates, for every reader that folds the
    judgments itself (reports of unfinished runs, the viewer, exports, robustness)."""
    lines = judged_lines(run.prediction_lines, run.judgment_lines)
    return rescaled(lines, run_to_score(run.manifest.config))


def judged_scores(
    predictions: Sequence[PredictionLine],
    judgments: Sequence[JudgmentLine],
    old: Mapping[str, Json] | None,
    *,
    seed: int,
    n_resamples: int,
    to_score: Mapping[str, Callable[[float], float]] | None = None,
) -> dict[str, Any]:
    """The ``scores.json`` dict (tasks and ``_meta``) of a run's predictions with ``judgments`` folded in;
    ``old`` is the ``scores.json`` the engine wrote (or ``None``); ``to_score`` gives a task's instances
    their ``llm`` from the judge total by the run's reading (:func:`rescaled`)."""

    def rescale(lines: Sequence[PredictionLine]) -> list[PredictionLine]:
        return rescaled(lines, to_score or {})

    merged = rescale(judged_lines(predictions, judgments))
    by_task = split_by_task(merged)
    judge_repeats = judge_repeat_count(judgments)
    if judge_repeats == 1 and all(repeat_count(lines) == 1 for lines in by_task.values()):
        return aggregate_run(
            {t: [r.to_json() for r in lines] for t, lines in by_task.items()},
            metric_specs(),
            n_resamples=n_resamples,
            seed=seed,
        )
    specs = metric_specs()
    scores: dict[str, Any] = {}
    for task, lines in by_task.items():
        if task in JUDGED_TASKS:
            asks = rescale(judge_repeat_lines(predictions, judgments, judge_repeats))
            mine = [r.to_json() for r in asks if r.task == task]
            k = repeat_count(lines) * judge_repeats
            scores[task] = aggregate_repeated_task(
                task, specs[task], mine, k, seed=seed, n_resamples=n_resamples
            )
        elif old is not None and task in old:
            scores[task] = old[task]
        elif repeat_count(lines) > 1:
            rows = [r.to_json() for r in lines]
            scores[task] = aggregate_repeated_task(
                task, specs[task], rows, repeat_count(lines), seed=seed, n_resamples=n_resamples
            )
        else:
            scores[task] = aggregate_task(task, specs[task], lines, seed=seed, n_resamples=n_resamples)
    scores["_meta"] = aggregate_run({}, {}, seed=seed, n_resamples=n_resamples)["_meta"]
    return scores
