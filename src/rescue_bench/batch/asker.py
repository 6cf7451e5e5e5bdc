"""``run --batch`` as a way of asking, for the engine's run session (an
:class:`~rescue_bench.engine.asking.Asker`).

The run operation (:mod:`rescue_bench.evaluation.run`) hands the session a :class:`BatchApi` when the spec
asks for ``--batch``; the session stays the same for every way of asking. Once ``run.json`` is written, the
pending work goes through the provider's Batch API (:class:`~rescue_bench.batch.api.BatchAsker`), and the
engine is routed to the replies it got (a :class:`~rescue_bench.batch.results.BatchResultsProvider`): the
answered plans are recorded, parsed and scored by the online run's own path, and the batches' summary goes
under ``run.json``'s ``options.batch``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

from rescue_bench.batch.api import BatchAsker
from rescue_bench.batch.ledger import BatchLedger
from rescue_bench.batch.plan import BatchOptions, Work, batchable, pending_work
from rescue_bench.batch.results import BatchResultsProvider
from rescue_bench.engine.asking import Pending, Route, make_model
from rescue_bench.engine.plans import TaskPlan
from rescue_bench.models.base import Provider
from rescue_bench.spec import RunSpec

__all__ = ["BatchApi"]


@dataclass(frozen=True, slots=True)
class BatchApi:
    """Asks a run's pending work through its provider's Batch API, then routes the engine to the replies;
    the batches not answered stay pending (a re-run submits them)."""

    options: BatchOptions = BatchOptions()  # noqa: RUF009 - frozen, so one shared default is safe
    """How batches are polled and re-submitted (``--batch-poll``)."""

    def model(self, spec: RunSpec) -> Provider:
        return make_model(spec)

    def check(self, spec: RunSpec, model: Provider) -> None:
        batchable(spec, model)

    async def route(self, pending: Pending) -> Route:
        spec, provider = pending.spec, batchable(pending.spec, pending.model)
        notify = self.options.notify or (None if pending.quiet else _to_stderr)
        options = replace(self.options, notify=notify)
        ledger = BatchLedger(pending.root)
        try:
            work = pending_work(pending.plans, pending.done, spec.engine.retry_failed)
            params = spec.generation()
            asker = BatchAsker(provider, params, ledger, options, cache=pending.cache, budget=pending.budget)
            answers = await asker.ask(work)
        finally:
            ledger.close()
        cacheable = pending.cache is not None
        replies = BatchResultsProvider(
            answers.replies, provider.identity(), provider.name, cacheable=cacheable
        )
        plans = _answered(pending.plans, answers.answered)
        # The budget reserved each request when it was submitted: the engine's replies cost nothing more.
        return Route(replies, plans, None, answers.stop_reason, {"batch": ledger.summary()})


def _answered(plans: Sequence[TaskPlan], answered: Sequence[Work]) -> list[TaskPlan]:
    """``plans`` cut to their batches whose every request has its final reply."""
    keep = {(id(w.plan), w.index) for w in answered}
    return [
        replace(p, batches=tuple(b for i, b in enumerate(p.batches) if (id(p), i) in keep)) for p in plans
    ]


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
