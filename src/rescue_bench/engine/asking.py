"""How a run session's planned requests get their answers: the seam between the session and a way of asking.

The session (:mod:`rescue_bench.engine.run`) plans, writes ``run.json``, then hands what is still to ask to
its :class:`Asker`, which says whom the engine asks and for what (:class:`Route`); the session then asks,
records, parses and scores every batch along one path. :data:`LIVE` sends the requests to the model itself.
The caller chooses another way when the spec asks for one: the Batch API (:mod:`rescue_bench.batch`) answers
the requests first and routes the engine to a provider holding those replies, so a batch run is recorded by
the online run's own code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from rescue_bench.engine.execute import BudgetGuard, EngineOptions
from rescue_bench.engine.plans import TaskPlan
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Provider, check_settings
from rescue_bench.models.registry import get_model
from rescue_bench.records import Json
from rescue_bench.rundir import PredictionLine
from rescue_bench.rundir.cache import ResponseCache
from rescue_bench.spec import RunSpec

__all__ = ["LIVE", "Asker", "Live", "Pending", "Route", "make_model"]


@dataclass(frozen=True, slots=True)
class Pending:
    """What an asker is given once ``run.json`` is written: the run's plans and what of them is done."""

    spec: RunSpec
    root: Path
    """The run directory (an asker may keep its own record there)."""
    plans: Sequence[TaskPlan]
    done: Mapping[str, PredictionLine]
    """The run's latest prediction lines by line key: instances already answered."""
    model: Provider
    cache: ResponseCache | None
    budget: BudgetGuard | None
    quiet: bool


@dataclass(frozen=True, slots=True)
class Route:
    """Whom the session's engine asks, for which plans, under which budget."""

    model: Provider
    plans: Sequence[TaskPlan]
    budget: BudgetGuard | None
    stop_reason: str | None = None
    """Why the asker left work unasked (the session stops with it unless it stops for another reason)."""
    record: Mapping[str, Json] = field(default_factory=dict)
    """Added under ``run.json``'s ``options``: how this way of asking went (nothing for a live run)."""
    engine: EngineOptions | None = None
    """How the engine asks ``model``: ``None``, the spec's engine settings; replies already in hand (a results
    file) need neither the spec's pace nor its retries."""


class Asker(Protocol):
    """A way of asking a run's requests, chosen by the caller of the session."""

    def model(self, spec: RunSpec) -> Provider:
        """The provider the session plans for and records as the run's model (built, not yet asked)."""
        ...

    def check(self, spec: RunSpec, model: Provider) -> None:
        """Refuse what this way cannot ask, with a one-line :class:`ConfigError`, before anything is
        written."""
        ...

    async def route(self, pending: Pending) -> Route:
        """Whom the engine asks for ``pending``'s work (it may answer some of it first)."""
        ...


@dataclass(frozen=True, slots=True)
class Live:
    """The model itself, request by request, through the engine (cache, budget, limits, retries)."""

    def model(self, spec: RunSpec) -> Provider:
        return make_model(spec)

    def check(self, spec: RunSpec, model: Provider) -> None:
        # A spec that asks for the Batch API is priced at batch prices: asked live, it could overspend.
        if spec.batch:
            raise ConfigError(
                "this spec asks for --batch, which the run session does not do itself: run it through "
                "rescue_bench.evaluation.run (or give the session rescue_bench.batch's asker)"
            )

    async def route(self, pending: Pending) -> Route:
        return Route(pending.model, pending.plans, pending.budget)


LIVE: Final = Live()


def make_model(spec: RunSpec) -> Provider:
    """The provider of the spec's model; a setting it would ignore is refused here, before the run starts."""
    provider = get_model(
        spec.model.name,
        base_url=spec.model.base_url,
        api_key_env=spec.model.api_key_env,
        timeout=spec.engine.timeout,
        seed=spec.model.seed,
    )
    check_settings(provider, spec.generation())
    return provider
