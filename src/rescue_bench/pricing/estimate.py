"""What a run's requests will cost before anything is sent: requests, prompt tokens and output tokens at the
cap, per task.

Output tokens are priced at the cap each request is sent with (the caller's ``cap``: for a run, the model's
:meth:`~rescue_bench.models.base.Generation.cap`, which adds the reasoning headroom of its effort or
applies its ``max_tokens``): an upper bound. Plain requests in, plain counts out: estimates of a run's plans
(:mod:`rescue_bench.evaluation.estimate`), of a judge pass and of an annotation draft all add up here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rescue_bench.pricing.prices import Prices
from rescue_bench.pricing.tokens import TokenCounter
from rescue_bench.records import Request

__all__ = ["TaskEstimate", "estimate_requests"]


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
