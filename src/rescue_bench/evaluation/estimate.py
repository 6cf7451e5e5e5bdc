"""What a planned run will send, for ``estimate``: every request of its plans, priced by
:mod:`rescue_bench.pricing` at the output cap the model's generation settings send each one with.

Here rather than in :mod:`rescue_bench.pricing`: a plan and the generation settings are the engine's and
the models' types, and pricing sits below both.
"""

from __future__ import annotations

from rescue_bench.engine.plans import TaskPlan
from rescue_bench.models.base import REASONING_HEADROOM, Generation
from rescue_bench.pricing import TaskEstimate, TokenCounter, estimate_requests

__all__ = ["cap_note", "estimate_plan"]


def estimate_plan(plan: TaskPlan, counter: TokenCounter, params: Generation | None = None) -> TaskEstimate:
    """:func:`~rescue_bench.pricing.estimate_requests` of a planned task, every repeat counted: ``repeats =
    K`` sends each batch K times; CircularEval sends each rotation's own batches (``plan.rotated``).
    Instances count every ask; output tokens are at the cap sent under ``params`` (the model's generation
    settings)."""
    batches = [*plan.batches, *(b for rotation in plan.rotated for b in rotation)]
    requests = [plan.task.render(b, plan.cfg) for b in batches]
    if not plan.rotated:
        requests = requests * plan.repeats
    return estimate_requests(plan.name, plan.asks, requests, counter, None if params is None else params.cap)


def cap_note(params: Generation) -> str:
    """Which output cap the estimate's "max output tokens" counts, in one phrase.

    >>> cap_note(Generation())
    "each task's own cap"
    >>> cap_note(Generation(reasoning_effort="high"))
    "each task's cap + 16,384 tokens of reasoning headroom (reasoning_effort 'high')"
    >>> cap_note(Generation(reasoning_effort="high", max_tokens=4000))
    'max_tokens 4,000 for every request'
    """
    if params.max_tokens is not None:
        return f"max_tokens {params.max_tokens:,} for every request"
    headroom = REASONING_HEADROOM[params.reasoning_effort]
    if headroom == 0:
        return "each task's own cap"
    effort = params.reasoning_effort
    return f"each task's cap + {headroom:,} tokens of reasoning headroom (reasoning_effort {effort!r})"
