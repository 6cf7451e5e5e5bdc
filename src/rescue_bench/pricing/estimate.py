"""What a run's requests will cost before anything is sent: requests, prompt tokens and output tokens at the
cap, per task.

Output tokens are priced at the cap each request is sent with (the caller's ``cap``: for a run, the model's
:meth:`~rescue_bench.models.base.Generation.cap`, which adds the reasoning headroom of its effort or
applies its ``max_tokens``): an upper bound. Plain requests in, plain counts out: estimates of a run's plans
(:mod:`rescue_bench.evaluation.estimate`), of a judge pass and of an annotation draft all add up here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rescue_bench.pricing.prices import Prices
from rescue_bench.pricing.tokens import TokenCounter
from rescue_bench.records import Request

__all__ = ["LONG_CONVERSATION", "TaskEstimate", "estimate_requests", "long_conversation_note"]

LONG_CONVERSATION = 2_000
"""Rows of a conversation past which an estimate warns before it starts: each instance's prompt carries the
conversation up to its row, so the prompts (rendered and counted, every one) grow with the square of its
length: a conversation of 10,000 rows takes minutes and gigabytes to estimate."""


@dataclass(frozen=True, slots=True)
class TaskEstimate:
    task: str
    instances: int
    requests: int
    prompt_tokens: int
    max_output_tokens: int

    def cost(self, prices: Prices | None) -> float | None:
        return None if prices is None else prices.cost(self.prompt_tokens, self.max_output_tokens)


def estimate_requests(
    task: str,
    instances: int,
    requests: Sequence[Request],
    counter: TokenCounter,
    cap: Callable[[int], int] | None = None,
) -> TaskEstimate:
    """Requests and tokens of one task's first-attempt requests (retries and single re-asks come on top).

    Output tokens are counted at ``cap`` of each request's own ``max_tokens`` (the cap it is sent with);
    without ``cap``, at the request's own.
    """
    caps = (r.max_tokens if cap is None else cap(r.max_tokens) for r in requests)
    return TaskEstimate(
        task, instances, len(requests), sum(counter.request_tokens(r) for r in requests), sum(caps)
    )


def long_conversation_note(rows: Mapping[str, int], limit: int | None = None) -> str | None:
    """A warning for the conversations over ``limit`` rows (``rows``: sample id -> rows), said before an
    estimate renders their prompts; ``None`` when there is none.

    >>> long_conversation_note({"s1": 10_000, "s2": 40}, limit=2_000).startswith(
    ...     "1 conversation has more than 2,000 rows (s1: 10,000): ")
    True
    """
    limit = LONG_CONVERSATION if limit is None else limit
    long = sorted(((n, sample) for sample, n in rows.items() if n > limit), reverse=True)
    if not long:
        return None
    listed = ", ".join(f"{sample}: {n:,}" for n, sample in long[:3]) + (" ..." if len(long) > 3 else "")
    noun = "conversation has" if len(long) == 1 else "conversations have"
    return (
        f"{len(long)} {noun} more than {limit:,} rows ({listed}): every prompt carries the conversation up "
        "to its row, so rendering and counting them all can take minutes and gigabytes of memory; "
        "--limit-samples or --sample-ids estimates fewer"
    )
