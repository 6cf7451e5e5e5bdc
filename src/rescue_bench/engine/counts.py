"""The per-task counts of ``run.json``: instances, valid answers and why the others failed, requests, tokens.

Prediction counts come from the run's final lines. Request counts are added up one request line at a time
(:class:`RequestTally`): the lines found in ``requests.jsonl`` when a session starts, then each line the
session appends, so the finish never reads the file back.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rescue_bench.engine.plans import TaskPlan
from rescue_bench.records import Json, ProblemKind
from rescue_bench.rundir import Counts, PredictionLine, RequestLine

__all__ = ["RequestTally", "count_run", "tally_requests"]


@dataclass(slots=True)
class RequestTally:
    """One task's request lines, added up."""

    requests: int = 0
    single_retries: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    refusals: int = 0
    masked: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    """Tokens of the requests that were paid for (not answered from the cache)."""
    truncated: int = 0
    empty_after_reasoning: int = 0
    formats: Counter[str] = field(default_factory=Counter)
    """Answered requests by the response format they were asked in."""
    models: Counter[str] = field(default_factory=Counter)
    """Answered requests by the model the endpoint said answered."""

    def add(self, line: RequestLine) -> None:
        self.requests += 1
        self.single_retries += line.single
        self.retries += max(0, line.attempts - 1)
        self.refusals += line.refused
        self.masked += line.masked
        if line.cached:
            self.cache_hits += 1
        else:
            self.prompt_tokens += line.usage.prompt_tokens
            self.completion_tokens += line.usage.completion_tokens
            self.reasoning_tokens += line.usage.reasoning_tokens
        if line.error is not None:
            self.failures += 1
            return
        if line.response_format:
            self.formats[line.response_format] += 1
        if line.reply.model:
            self.models[line.reply.model] += 1
        # Replies cut off at the output cap, and replies with no answer after their reasoning: their instances
        # are parse failures (counted there); these say why, which a reasoning model's run needs to know.
        self.truncated += line.reply.finish_reason == "length"
        self.empty_after_reasoning += _empty_after_reasoning(line)

    def to_json(self) -> dict[str, Json]:
        """The request part of a task's :class:`~rescue_bench.rundir.Counts`."""
        return {
            "requests": self.requests,
            "single_retries": self.single_retries,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "failures": self.failures,
            "refusals": self.refusals,
            "masked": self.masked,
            "tokens": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "reasoning_tokens": self.reasoning_tokens,
            },
            "truncated": self.truncated,
            "empty_after_reasoning": self.empty_after_reasoning,
            # Only when the endpoint's replies said (an OpenAI-compatible endpoint): how they were asked for,
            # and which model answered.
            **({"response_formats": dict(self.formats.most_common())} if self.formats else {}),
            **({"served_models": dict(self.models.most_common())} if self.models else {}),
        }


def tally_requests(lines: Iterable[RequestLine]) -> defaultdict[str, RequestTally]:
    """The request lines added up per task."""
    tallies: defaultdict[str, RequestTally] = defaultdict(RequestTally)
    for line in lines:
        tallies[line.task].add(line)
    return tallies


def _empty_after_reasoning(line: RequestLine) -> bool:
    """A reply that reasoned (text or tokens) and then gave no answer."""
    reasoned = bool((line.reply.reasoning or "").strip()) or line.usage.reasoning_tokens > 0
    return reasoned and not line.reply.text.strip()


def count_run(
    plans: Sequence[TaskPlan], predictions: Sequence[PredictionLine], requests: Mapping[str, RequestTally]
) -> dict[str, Counts]:
    """Per-task counts over the whole run directory (all sessions)."""
    by_task: defaultdict[str, list[PredictionLine]] = defaultdict(list)
    for line in predictions:
        by_task[line.task].append(line)
    counts: dict[str, Counts] = {}
    for plan in plans:
        preds = by_task[plan.name]
        video: dict[str, int] = {}
        if plan.cfg.mode == "video":
            video = {
                "video_unusable": sum(bool((p.meta or {}).get("video_unusable")) for p in preds),
                "missing_clips": sum(k is ProblemKind.VIDEO for p in preds for k in p.kinds),
            }
        counts[plan.name] = Counts.model_validate(
            {
                "instances": plan.asks,
                **({"repeats": plan.repeats} if plan.repeats > 1 else {}),
                **_prediction_counts(preds),
                **requests.get(plan.name, RequestTally()).to_json(),
                **video,
            }
        )
    return counts


def _prediction_counts(preds: Sequence[PredictionLine]) -> dict[str, int]:
    first = [p.kinds[0] if p.kinds else None for p in preds]
    return {
        "done": len(preds),
        "valid": sum(p.valid for p in preds),
        "invalid": sum(not p.valid for p in preds),
        "request_failures": sum(k is ProblemKind.REQUEST_FAILED for k in first),
        "parse_failures": sum(k in (ProblemKind.PARSE_FAILURE, ProblemKind.MISSING) for k in first),
        "invalid_labels": sum(k is ProblemKind.INVALID_LABEL for k in first),
    }
