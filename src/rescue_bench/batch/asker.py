"""``run --batch`` as a way of asking, for the engine's run session (an
:class:`~rescue_bench.engine.asking.Asker`).

The run operation (:mod:`rescue_bench.evaluation.run`) hands the session a :class:`BatchApi` when the spec
asks for ``--batch``; the session stays the same for every way of asking. Once ``run.json`` is written, the
pending work goes through the provider's Batch API (:func:`~rescue_bench.batch.api.ask_by_batch`), and the
engine is routed to the replies it got: the answered plans are recorded, parsed and scored by the online
run's own path, and the batches' summary goes under ``run.json``'s ``options.batch``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace

from rescue_bench.batch.api import ask_by_batch
from rescue_bench.batch.plan import BatchOptions, batchable
from rescue_bench.engine.asking import Pending, Route
from rescue_bench.models.base import Provider
from rescue_bench.spec import RunSpec

__all__ = ["BatchApi"]


@dataclass(frozen=True, slots=True)
class BatchApi:
    """Asks a run's requests through its provider's Batch API (Files + Batches), then routes the engine to
    the replies."""

    options: BatchOptions = BatchOptions()  # noqa: RUF009 - frozen, so one shared default is safe
    """How batches are polled and re-submitted (``--batch-poll``)."""

    def check(self, spec: RunSpec, model: Provider) -> None:
        batchable(spec, model)

    async def route(self, pending: Pending) -> Route:
        spec = pending.spec
        notify = self.options.notify or (None if pending.quiet else _to_stderr)
        answers = await ask_by_batch(
            batchable(spec, pending.model),
            spec.generation_params(),
            pending.root,
            pending.plans,
            pending.done,
            retry_failed=spec.engine.retry_failed,
            options=replace(self.options, notify=notify),
            cache=pending.cache,
            budget=pending.budget,
        )
        # The budget reserved each request when it was submitted: the engine's replies cost nothing more.
        return Route(answers.provider, answers.plans, None, answers.stop_reason, {"batch": answers.summary})


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
