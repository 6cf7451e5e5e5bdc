"""What a batch session asks: its options, the providers that can, the pending work in run order, and each
request's Batch API line.

Split from :mod:`rescue_bench.batch.api` (the asking) so that ``batch export`` and ``run --batch``
share the line format, and the run can check a provider before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, cast, runtime_checkable

from rescue_bench.batch.results import custom_id
from rescue_bench.engine.ending import unanswered
from rescue_bench.engine.execute import repeat_params
from rescue_bench.engine.plans import TaskPlan
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Generation, Provider, ResponseFormat
from rescue_bench.records import Instance, Json, Request
from rescue_bench.rundir import PredictionLine
from rescue_bench.spec import RunSpec
from rescue_bench.tasks.perturb import is_circular

if TYPE_CHECKING:
    from rescue_bench.models.openai_sdk import SdkEndpoint

BATCH_URL: Final = "/v1/chat/completions"


@runtime_checkable
class BatchLines(Protocol):
    """Writes a request as a Batch API line: the body the online run sends, in the format it would use."""

    def body(self, request: Request, params: Generation, fmt: ResponseFormat) -> dict[str, Any]: ...

    def effective_format(self, params: Generation) -> ResponseFormat: ...


class BatchProvider(Provider, BatchLines, Protocol):
    """A provider whose endpoint has a Batch API (Files + Batches): what ``run --batch`` asks through.

    An OpenAI-compatible provider is one; a plugin is one when it declares ``Capabilities.batch_export`` and
    has these members.
    """

    base_url: str
    max_reply_bytes: int
    secrets: tuple[str, ...]
    """Taken out of every reply and error the endpoint gives (its key, its URL's secrets)."""

    @property
    def endpoint(self) -> SdkEndpoint:
        """The SDK side of the endpoint, whose ``call`` reaches its Files and Batches APIs."""
        ...


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


def batchable(spec: RunSpec, provider: Provider) -> BatchProvider:
    """The provider whose Batch API ``spec`` is asked through; a spec that cannot go through a Batch API is
    a one-line :class:`ConfigError` (before anything is written)."""
    if spec.is_video:
        raise ConfigError("--batch sends text only; for --mode video run without --batch")
    if spec.repeats > 1 or is_circular(spec.perturb):
        # The session asks and keys each batch once: the repeats would all get repeat 0's reply.
        raise ConfigError(
            "--batch asks each instance once; for --repeats or label-order:all run without --batch, "
            "or use `rescue-bench batch export`, which writes every repeat"
        )
    return check_batchable(provider)


def check_batchable(provider: Provider) -> BatchProvider:
    """The provider, if it declares a Batch API (``Capabilities.batch_export``) and writes Batch lines; else
    the one-line refusal (before anything is written)."""
    if not provider.capabilities.batch_export or not isinstance(provider, BatchLines):
        raise ConfigError(
            f"--batch: {provider.name} has no Batch API (only OpenAI-compatible endpoints have one); "
            "run without --batch"
        )
    # The endpoint's members are declared, not probed: reading ``endpoint`` would build the SDK client.
    return cast("BatchProvider", provider)


def repeat_custom_id(request: Request, repeat: int = 0) -> str:
    """The custom id of ``request`` asked for the ``repeat``-th time: :func:`custom_id` for repeat 0 (the id
    of every export before repeats), ``<custom id>-r<repeat>`` after, so that no repeat's result answers
    another's, as the repeat enters the response-cache key (``CacheKeys.of``)."""
    return custom_id(request) if repeat == 0 else f"{custom_id(request)}-r{repeat}"


def repeat_of(base: Generation, sent: Generation) -> int:
    """Which repeat a request sent with ``sent`` asks, in a run whose own settings are ``base``: the inverse
    of :func:`~rescue_bench.engine.execute.repeat_params` (repeat r > 0 carries seed (base seed or 0) + r).

    >>> base = Generation(seed=5)
    >>> repeat_of(base, base), repeat_of(base, repeat_params(base, 3))
    (0, 3)
    """
    if sent.seed == base.seed or sent.seed is None:
        return 0
    return sent.seed - (base.seed or 0)


def check_repeats_keyed(params: Generation, repeats: int) -> None:
    """Refuse repeats whose asks a results file cannot tell apart: a sampling run with no seed sends every
    repeat with the same settings (``repeat_params``), so a result could not be mapped to its repeat."""
    if repeats > 1 and repeat_params(params, 1) == params:
        raise ConfigError(
            "batch export with --repeats: with temperature > 0 and no --seed the repeats' requests are "
            "identical and their results cannot be told apart; give --seed (repeat r is sent with seed + r)"
        )


def batch_line(
    provider: BatchLines, request: Request, params: Generation, repeat: int = 0
) -> dict[str, Json]:
    """One Batch API input line: ``{"custom_id", "method", "url", "body"}``, the body the online run sends
    for ``repeat`` of ``request`` (with that repeat's seed) and its :func:`repeat_custom_id`."""
    sent = repeat_params(params, repeat)
    body = provider.body(request, sent, provider.effective_format(sent))
    return {"custom_id": repeat_custom_id(request, repeat), "method": "POST", "url": BATCH_URL, "body": body}


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
    plans: Sequence[TaskPlan], done: Mapping[str, PredictionLine], retry_failed: bool
) -> list[Work]:
    """The batches still to ask, in run order: the rule of :class:`~rescue_bench.engine.runner.Runner`."""
    work = []
    for plan in plans:
        for index, batch in enumerate(plan.batches):
            todo = tuple(
                i
                for i in batch
                if i.id not in done
                or unanswered(done[i.id])  # no answer is unfinished work: asked again, as online
                or (retry_failed and not done[i.id].valid)
            )
            if todo:
                refresh = any(i.id in done for i in todo)
                work.append(Work(plan, index, todo, plan.task.render(todo, plan.cfg), refresh))
    return work
