"""Scoring inspect samples with our own parser, scorer, judge rubric and metrics.

Each sample's score carries the ``predictions.jsonl`` lines of its batch in ``metadata["records"]`` (and, for
ER and VP, the judge's lines in ``metadata["judgments"]``). The corpus metric gathers them from every sample
and computes the headline metrics per scenario with :mod:`rescue_bench.metrics.aggregate`, so inspect's
numbers are the point values of a run's ``scores.json`` (bootstrap CIs are left to ``rescue-bench report``
on an imported log).

ER and VP are judged by the model bound to inspect's ``grader`` role (``--model-role grader=...``), with our
rubric (:mod:`rescue_bench.judge.rubric`): the judge runner's own :func:`judge_group` asks it (one request
per sample, one re-ask for invalid verdicts), and :func:`merged_scores` folds the verdicts in. Without a
``grader`` the judge metrics are left out rather than judged by the candidate itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai.model import GenerateConfig, Model, model_roles
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, Value, metric, scorer
from inspect_ai.solver import TaskState
from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.adapters.inspect.messages import chat_messages, response_schema
from rescue_bench.adapters.plan import batch_records, corpus_values
from rescue_bench.judge.merge import merged_scores
from rescue_bench.judge.runner import Judge, judge_group, plan_groups
from rescue_bench.records import Instance, Reply, Request, Usage
from rescue_bench.rundir import JudgmentLine, PredictionLine
from rescue_bench.tasks import get_task

GRADER_ROLE = "grader"


@metric
def rescue_metrics(task: str) -> Metric:
    """Headline metrics of ``task`` per scope (``all_f1``, ``couple_f1``, ...) from every sample's records,
    the pooled ones first (:func:`pooled_first`)."""

    def compute(scores: list[SampleScore]) -> Value:
        records = [r for s in scores for r in sample_records(s.score).predictions]
        values = corpus_values(get_task(task), records)
        return pooled_first({name: value for name, value in values.items() if value is not None})

    return compute


def pooled_first(values: Mapping[str, float]) -> dict[str, float]:
    """The metrics with the pooled scope (``all_*``) first: inspect shows a metric's first value as its
    headline, and the paper's headline pools both scenarios.

    >>> list(pooled_first({"couple_f1": 0.5, "family_f1": 0.4, "all_f1": 0.45, "all_precision": 0.6}))
    ['all_f1', 'all_precision', 'couple_f1', 'family_f1']
    """
    return dict(sorted(values.items(), key=lambda item: not item[0].startswith("all_")))


def grader() -> Model | None:
    """The model bound to the ``grader`` role, if any."""
    bound = model_roles().get(GRADER_ROLE)
    if isinstance(bound, list):
        return bound[0] if bound else None
    return bound


def judge_complete(model: Model) -> Judge:
    """Our judge interface over an inspect model: the judge request goes out as rendered."""

    async def complete(request: Request) -> Reply:
        config = GenerateConfig(
            temperature=0.0,
            max_tokens=request.max_tokens,
            response_schema=response_schema(request.task, request.response_schema),
        )
        output = await model.generate(chat_messages(request), config=config)
        if output.error:
            return Reply.failure(output.error)
        usage = output.usage
        return Reply(
            text=output.completion,
            finish_reason=output.stop_reason,
            usage=Usage(usage.input_tokens, usage.output_tokens) if usage else Usage(),
        )

    return Judge(str(model), complete)


class SampleRecords(BaseModel):
    """What our scorer keeps in a sample score's ``metadata``: the batch's prediction and judgment lines."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    predictions: tuple[PredictionLine, ...] = Field(default=(), alias="records")
    judgments: tuple[JudgmentLine, ...] = ()

    def to_metadata(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def sample_records(score: Score) -> SampleRecords:
    """The records our scorer left in ``score`` (none for a score without metadata)."""
    return SampleRecords.model_validate(score.metadata or {})


async def judged(
    records: Sequence[PredictionLine], model: Model
) -> tuple[list[PredictionLine], list[JudgmentLine]]:
    """``records`` with the grader's verdicts folded into their scores, and the judgment lines."""
    groups, _ = plan_groups(list(records), frozenset())
    lines: list[JudgmentLine] = []
    judge = judge_complete(model)
    for items in groups:
        judgments, _ = await judge_group(items, judge)
        lines.extend(judgments)
    by_instance: dict[str, list[JudgmentLine]] = {}
    for line in lines:
        by_instance.setdefault(line.instance_id, []).append(line)
    merged = [
        r.model_copy(update={"scores": merged_scores(r, by_instance.get(r.instance_id, []), judged=True)})
        for r in records
    ]
    return merged, lines


def rescue_scorer(task_name: str, batches: Mapping[str, Sequence[Instance]]) -> Scorer:
    """The scorer of ``task_name``: ``batches`` maps each inspect sample id to the instances it asks about."""
    task = get_task(task_name)

    @scorer(metrics=[rescue_metrics(task_name)], name=f"rescue_bench_{task_name}")
    def make() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            batch = batches[str(state.sample_id)]
            output = state.output
            text = output.completion if output is not None and output.choices else None
            error = output.error if output is not None else None
            truncated = output is not None and output.stop_reason == "max_tokens"
            records = batch_records(task, batch, text, error=error, truncated=truncated)
            lines: list[JudgmentLine] = []
            model = grader() if task.INFO.judged else None
            if model is not None:
                records, lines = await judged(records, model)
            return Score(
                value=item_means(records),
                answer=text,
                explanation=explain(records),
                metadata=SampleRecords(records=tuple(records), judgments=tuple(lines)).to_metadata(),
            )

        return score

    return make()


def item_means(records: Sequence[PredictionLine]) -> dict[str, float]:
    """A sample's score in ``inspect view``: the share of valid answers, and the mean of each per-instance
    score over the batch (a miss counts 0, as in the corpus metrics).

    >>> item_means([PredictionLine(instance_id="a", task="itp", valid=True, scores={"correct": 1.0}),
    ...             PredictionLine(instance_id="b", task="itp", valid=False)])
    {'valid': 0.5, 'correct': 0.5}
    """
    names = dict.fromkeys(name for r in records for name, v in r.scores.items() if _number(v) is not None)
    out = {"valid": sum(r.valid for r in records) / len(records)}
    for name in names:
        out[name] = sum(_number(r.scores.get(name)) or 0.0 for r in records) / len(records)
    return out


def explain(records: Sequence[PredictionLine]) -> str:
    """One line per instance of the batch: its id, the gold, the parsed answer (or why there is none) and
    its scores: the per-item signal ``inspect view`` shows under the sample's score.

    >>> print(explain([PredictionLine(instance_id="s::itp::3", task="itp", valid=True, gold="no",
    ...     prediction="yes", scores={"correct": 0.0})]))
    - `s::itp::3`: gold `"no"`, answer `"yes"`; correct 0
    """
    lines = []
    for r in records:
        answer = (
            f"answer `{_short(r.prediction)}`" if r.valid else f"no valid answer ({', '.join(r.problems)})"
        )
        scores = ", ".join(f"{k} {_number(v):.4g}" for k, v in r.scores.items() if _number(v) is not None)
        lines.append(
            f"- `{r.instance_id}`: gold `{_short(r.gold)}`, {answer}" + (f"; {scores}" if scores else "")
        )
    return "\n".join(lines)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _short(value: object, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False).replace("`", "'")
    return text if len(text) <= limit else text[: limit - 1] + "…"
