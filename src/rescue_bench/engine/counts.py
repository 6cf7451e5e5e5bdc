"""The per-task counts of ``run.json``: instances, valid answers and why the others failed, requests, tokens.

Prediction counts come from the run's final lines. Request counts are added up one request line at a time
(:class:`RequestTally`): the lines found in ``requests.jsonl`` when a session starts, then each line the
session appends, so the finish never reads the file back.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from rescue_bench.engine.plans import TaskPlan
from rescue_bench.records import Json, ProblemKind
from rescue_bench.rundir import Counts, PredictionLine, RequestLine, TokenCounts

__all__ = ["RequestTally", "count_run", "tally_requests"]


NO_REQUESTS: Final = Counts(
    requests=0,
    single_retries=0,
    cache_hits=0,
    retries=0,
    failures=0,
    refusals=0,
    masked=0,
    tokens=TokenCounts(prompt_tokens=0, completion_tokens=0, reasoning_tokens=0),  # written, even if 0
    truncated=0,
    empty_after_reasoning=0,
)
"""The request part of a task's counts before its first request line: each count written, as 0; the
answers by response format and by served model only once an endpoint's reply said."""


@dataclass(slots=True)
class RequestTally:
    """One task's request lines, added up: the request part of its :class:`~rescue_bench.rundir.Counts`."""

    counts: Counts = NO_REQUESTS

    def add(self, line: RequestLine) -> None:
        c, usage, answered = self.counts, line.usage, line.error is None
        # Tokens of the requests that were paid for (not answered from the cache).
        tokens = c.tokens
        if not line.cached:
            tokens = TokenCounts(
                prompt_tokens=tokens.prompt_tokens + usage.prompt_tokens,
                completion_tokens=tokens.completion_tokens + usage.completion_tokens,
                reasoning_tokens=tokens.reasoning_tokens + usage.reasoning_tokens,
            )
        update: dict[str, object] = {
            "requests": c.requests + 1,
            "single_retries": c.single_retries + line.single,
            "cache_hits": c.cache_hits + line.cached,
            "retries": c.retries + max(0, line.attempts - 1),
            "failures": c.failures + (not answered),
            "refusals": c.refusals + line.refused,
            "masked": c.masked + line.masked,
            "tokens": tokens,
            # Replies cut off at the output cap, and replies with no answer after their reasoning: their
            # instances are parse failures (counted there); these say why, which a reasoning model's run
            # needs to know.
            "truncated": c.truncated + (answered and line.reply.finish_reason == "length"),
            "empty_after_reasoning": c.empty_after_reasoning + (answered and _empty_after_reasoning(line)),
        }
        # Only when the endpoint's replies said (an OpenAI-compatible endpoint): how they were asked for, and
        # which model answered; in the order first seen here, ranked by :meth:`to_json`.
        if answered and line.response_format:
            update["response_formats"] = _one_more(c.response_formats, line.response_format)
        if answered and line.reply.model:
            update["served_models"] = _one_more(c.served_models, line.reply.model)
        self.counts = c.model_copy(update=update)

    def to_json(self) -> dict[str, Json]:
        """The request part of a task's :class:`~rescue_bench.rundir.Counts`, each answer count ranked by
        size (ties in the order first seen)."""
        ranked = {
            name: dict(Counter(found).most_common())
            for name, found in (
                ("response_formats", self.counts.response_formats),
                ("served_models", self.counts.served_models),
            )
            if found
        }
        return self.counts.model_copy(update=ranked).to_json()


def _one_more(counts: Mapping[str, int], key: str) -> dict[str, int]:
    return {**counts, key: counts.get(key, 0) + 1}


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
