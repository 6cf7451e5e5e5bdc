"""What the judge pass of a run will ask, before the run: requests and tokens per judge, BERTScore pairs.

The judges see the model's predictions, which do not exist yet, so the estimate stands the gold answer in
for each prediction (a prediction of the gold's length) and counts every ER/VP instance as valid (invalid
predictions are not sent, so this is an upper bound on the instances). Requests are grouped exactly as the
judge pass groups them (:func:`~rescue_bench.judge.runner.plan_groups`). Re-asks are bounded: at most one
per first request, holding at most its items (:func:`~rescue_bench.judge.runner.judge_group`); the upper
bound counts each first request's re-ask with all its items, and every request at the output cap it is sent
with (the judge's reasoning headroom or ``max_tokens`` included, :meth:`Generation.cap`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rescue_bench.engine.plans import TaskPlan
from rescue_bench.judge import rubric
from rescue_bench.judge.bertscore import instance_pairs
from rescue_bench.judge.runner import plan_groups
from rescue_bench.models.base import Generation
from rescue_bench.pricing import Prices, TokenCounter
from rescue_bench.rundir import PredictionLine

REASK_PROBLEM = "the verdict was missing, out of range or unreadable"
"""A stand-in for the reason a re-ask quotes (the real one is known only after the first reply)."""


@dataclass(frozen=True, slots=True)
class JudgeEstimate:
    """One judge's share of a run: first requests, the bounded re-asks, and their tokens (upper bounds)."""

    judge: str
    instances: int
    requests: int
    reasks: int
    """At most one re-ask per first request."""
    prompt_tokens: int
    """First requests and all re-asks."""
    max_output_tokens: int

    def cost(self, prices: Prices | None) -> float | None:
        return None if prices is None else prices.cost(self.prompt_tokens, self.max_output_tokens)


def stand_in_records(plans: Sequence[TaskPlan]) -> list[PredictionLine]:
    """The judged tasks' instances as valid predictions that repeat the gold answer, once per repeat."""
    return [
        line.model_copy(update={"repeat": r})
        for plan in plans
        if plan.name in rubric.JUDGE_TASKS
        for r in range(plan.repeats)
        for line in _stand_ins(plan)
    ]


def _stand_ins(plan: TaskPlan) -> list[PredictionLine]:
    return [
        PredictionLine(
            instance_id=inst.id,
            task=inst.task,
            sample_id=inst.sample_id,
            scenario=inst.scenario,
            row_index=inst.row_index,
            gold=inst.gold,
            valid=True,
            prediction=inst.gold,
            meta=inst.meta if isinstance(inst.meta, dict) else None,
        )
        for inst in plan.instances
    ]


def estimate_judge(
    judge: str,
    plans: Sequence[TaskPlan],
    counter: TokenCounter,
    judge_repeats: int = 1,
    params: Generation | None = None,
) -> JudgeEstimate:
    """Requests and tokens of ``judge`` over the run of ``plans`` (re-asks included, as an upper bound):
    every (instance, repeat) judged ``judge_repeats`` times, output at the cap sent under the judge's
    ``params`` (without them, each request's own cap)."""
    groups, _ = plan_groups(stand_in_records(plans), done=frozenset())
    groups = groups * judge_repeats
    first = [rubric.render(items) for items in groups]
    again = [
        rubric.render_reask(items, dict.fromkeys((i.instance_id for i in items), REASK_PROBLEM))
        for items in groups
    ]
    requests = [*first, *again]
    return JudgeEstimate(
        judge,
        sum(len(items) for items in groups),
        len(first),
        len(again),
        sum(counter.request_tokens(r) for r in requests),
        sum(r.max_tokens if params is None else params.cap(r.max_tokens) for r in requests),
    )


def bertscore_pairs(plans: Sequence[TaskPlan]) -> tuple[int, int]:
    """ER/VP instances and the text pairs BERTScore compares for them, by each task's rule (local)."""
    records = stand_in_records(plans)
    pairs = [instance_pairs(r.task, r.key, r.gold, r.prediction, r.valid) for r in records]
    return len(records), sum(len(group) for p in pairs for group in p.groups)
