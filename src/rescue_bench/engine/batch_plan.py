"""What a batch session asks: its options, the pending work in run order, and each request's Batch API line.

Split from :mod:`rescue_bench.engine.batch_api` (the asking) so that ``batch export`` and ``run --batch``
share the line format, and the run can check a provider before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from rescue_bench.engine.batch_results import custom_id
from rescue_bench.engine.manifest import TaskPlan
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import GenerationParams, Provider
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.records import Instance, Json, Request

BATCH_URL: Final = "/v1/chat/completions"


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """How a batch session waits and retries (operational: they never change what is asked)."""

    poll: float = 30.0
    """Seconds before the first poll of a new batch; doubled after each poll that finds it still going."""
    poll_cap: float = 600.0
    """The longest wait between two polls."""
    max_resubmits: int = 2
    """How many times a failed or expired request is submitted again before its failure is recorded."""
    notify: Callable[[str], None] | None = None
    """Where batch status lines go (the terminal, unless quiet)."""

    def __post_init__(self) -> None:
        if not self.poll > 0 or not self.poll_cap >= self.poll:
            raise ConfigError(
                f"--batch-poll must be > 0 s and at most {self.poll_cap:g} s (got {self.poll:g})"
            )
        if self.max_resubmits < 0:
            raise ConfigError(f"batch re-submits must be >= 0 (got {self.max_resubmits})")


def check_batchable(provider: Provider) -> OpenAICompatProvider:
    """The provider, if it has a Batch API; else the one-line refusal (before anything is written)."""
    if not provider.capabilities.batch_export or not isinstance(provider, OpenAICompatProvider):
        raise ConfigError(
            f"--batch: {provider.name} has no Batch API (only OpenAI-compatible endpoints have one); "
            "run without --batch"
        )
    return provider


def batch_line(provider: OpenAICompatProvider, request: Request, params: GenerationParams) -> dict[str, Json]:
    """One Batch API input line: ``{"custom_id", "method", "url", "body"}`` (the online request's body)."""
    body = provider.body(request, params, provider.effective_format(params))
    return {"custom_id": custom_id(request), "method": "POST", "url": BATCH_URL, "body": body}


@dataclass(slots=True)
class Work:
    """One batch of a task's instances as the online run would ask it, and its single re-asks."""

    plan: TaskPlan
    index: int
    """Which of the plan's batches this is."""
    batch: tuple[Instance, ...]
    """Its instances still to ask."""
    request: Request
    refresh: bool
    """It re-asks failures (``--retry-failed``): the cache is not read, as online."""
    singles: list[Request] = field(default_factory=list)
    checked: bool = False
    """Whether its reply was parsed for single re-asks already."""


def pending_work(
    plans: Sequence[TaskPlan], done: Mapping[str, Mapping[str, Json]], retry_failed: bool
) -> list[Work]:
    """The batches still to ask, in run order: the rule of :class:`~rescue_bench.engine.runner.Runner`."""
    work = []
    for plan in plans:
        for index, batch in enumerate(plan.batches):
            todo = tuple(
                i for i in batch if i.id not in done or (retry_failed and not done[i.id].get("valid"))
            )
            if todo:
                refresh = any(i.id in done for i in todo)
                work.append(Work(plan, index, todo, plan.task.render(todo, plan.cfg), refresh))
    return work
