"""From a request's outcome to recorded lines: predictions parsed from a reply, and the JSONL records.

Pure functions: the run (:mod:`rescue_bench.engine.run`) does the asking and the writing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rescue_bench.engine.execute import Outcome
from rescue_bench.engine.hook import VideoNote
from rescue_bench.engine.plans import TaskPlan
from rescue_bench.records import Instance, Json, Prediction, ProblemKind, Reply
from rescue_bench.tasks.base import Task

TRUNCATED = "parse_failure: truncated reply (finish_reason=length)"
"""The problem of every instance of a request whose reply hit the token limit."""


def predictions_of(plan: TaskPlan, batch: Sequence[Instance], outcome: Outcome) -> list[Prediction]:
    """One prediction per instance of ``batch``: parsed, or failed with the reason.

    A prompt the endpoint's moderation refused got an answer (a refusal): scored as a miss, not asked again.
    """
    if outcome.refused and not outcome.reply.ok:
        return [Prediction.failed(i.id, f"refused: {outcome.reply.error}") for i in batch]
    return reply_predictions(plan.task, batch, outcome.reply)


def reply_predictions(task: Task, batch: Sequence[Instance], reply: Reply) -> list[Prediction]:
    """One prediction per instance of ``batch`` from ``reply`` by ``task``'s rules: a failed request, a
    truncated reply, a parser error and a missing item each make a failed prediction."""
    if not reply.ok:
        return [Prediction.failed(i.id, f"request_failed: {reply.error}") for i in batch]
    if reply.predictions is not None:
        given = {p.instance_id: p for p in reply.predictions}
        return [given.get(i.id) or Prediction.failed(i.id, "missing: no answer for this item") for i in batch]
    if reply.finish_reason == "length":
        # Parsers find JSON inside text, so a cut-off reply could still yield items that the model never
        # finished answering: none of it counts.
        return [Prediction.failed(i.id, TRUNCATED) for i in batch]
    try:
        parsed = task.parse(reply.text, batch)
    except Exception as exc:  # parse() must not raise on model text; if it does, the answer counts as wrong
        return [
            Prediction.failed(i.id, f"parse_failure: parser error {exc.__class__.__name__}") for i in batch
        ]
    by_id = {p.instance_id: p for p in parsed}
    return [
        by_id.get(i.id) or Prediction.failed(i.id, "missing: no answer for this item in the reply")
        for i in batch
    ]


def is_missing(prediction: Prediction) -> bool:
    """Whether the reply had no answer for this item (its first problem is of kind ``missing``)."""
    return bool(prediction.problems) and ProblemKind.of(prediction.problems[0]) is ProblemKind.MISSING


def asks_again(prediction: Prediction) -> bool:
    """Whether an item of a batch reply is asked again singly: it was missing, or the reply was cut off."""
    return is_missing(prediction) or prediction.problems[:1] == (TRUNCATED,)


def request_record(outcome: Outcome, *, single: bool) -> dict[str, Json]:
    """One ``requests.jsonl`` line."""
    reply, request = outcome.reply, outcome.request
    return {
        "request_key": outcome.request_key,
        "cache_key": outcome.cache_key,
        "task": request.task,
        "instance_ids": list(request.instance_ids),
        "single": single,
        "attempts": reply.attempts,
        "latency": round(reply.latency, 4),
        "usage": {
            "prompt_tokens": reply.usage.prompt_tokens,
            "completion_tokens": reply.usage.completion_tokens,
            "reasoning_tokens": reply.usage.reasoning_tokens,
        },
        "error": reply.error,
        "cached": reply.cached,
        "masked": outcome.masked,
        "refused": outcome.refused,
        "reply": {
            "text": reply.text,
            "reasoning": reply.reasoning,
            "finish_reason": reply.finish_reason,
            # Which model answered, when the endpoint says (written only then: older lines stay as they were).
            **{
                k: v
                for k, v in (("model", reply.model), ("system_fingerprint", reply.system_fingerprint))
                if v
            },
        },
        **({"response_format": reply.response_format} if reply.response_format else {}),
        "time": round(time.time(), 3),
    }


def prediction_record(
    task: Task,
    inst: Instance,
    pred: Prediction,
    outcome: Outcome | None,
    single: bool,
    video: VideoNote | None = None,
) -> dict[str, Json]:
    """One ``predictions.jsonl`` line, scored by the task.

    In video mode the clips an instance's request lacked follow the prediction's own problems (so the first
    problem still says why an invalid prediction failed), and ``meta["video_unusable"]`` flags an instance
    sent without the clip its task needs.
    """
    score = task.score(pred, inst)
    meta = inst.meta
    if video is not None and video.unusable:
        meta = {**(meta if isinstance(meta, dict) else {}), "video_unusable": True}
    return {
        "instance_id": inst.id,
        "task": inst.task,
        "sample_id": inst.sample_id,
        "scenario": inst.scenario,
        "row_index": inst.row_index,
        "gold": inst.gold,
        "valid": pred.valid,
        "prediction": pred.value,
        "problems": [*pred.problems, *(video.problems if video else ())],
        "meta": meta,
        "scores": score.metrics,
        "request_key": outcome.request_key if outcome else None,
        "single": single,
        **({"reason": pred.reason} if pred.reason else {}),
    }
