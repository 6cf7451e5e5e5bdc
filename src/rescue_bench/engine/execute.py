"""Ask a provider many requests at once: cache, budget, limits, retries and the moderation fallback.

:func:`execute_requests` is the public entry point that the judge and annotation layers reuse; the run
orchestration holds one :class:`Engine` per run and calls :meth:`Engine.ask` per request, so that every
outcome can be recorded as it lands.

Order per request: cache lookup (a hit costs nothing and skips the budget) -> budget reservation -> in-flight
slot and rate limits -> provider call, retried by :class:`~rescue_bench.engine.limits.RetryPolicy` -> on a
moderation refusal, one more round with sensitive words masked -> cache store of a successful reply.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Protocol

from rescue_bench.engine.limits import Limiter, RetryPolicy, call_with_retries
from rescue_bench.engine.masking import mask_messages
from rescue_bench.errors import BenchError, ModerationRefusal
from rescue_bench.models.base import Generation, Provider, check_settings
from rescue_bench.records import Reply, Request, Usage, chat_message
from rescue_bench.rundir.cache import CacheKeys, ResponseCache
from rescue_bench.spec.settings import EngineSpec

_SPEC: Final = EngineSpec()
"""The run spec's engine defaults, which are this record's: one place for each setting's default."""


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """Operational settings: they change how fast and how robustly a run goes, never what it asks.

    The defaults are the run spec's (``EngineOptions() == EngineOptions.of(EngineSpec())``).

    >>> EngineOptions() == EngineOptions.of(EngineSpec())
    True
    """

    concurrency: int = _SPEC.concurrency
    adaptive: bool = not _SPEC.fixed_concurrency
    """Adapt the in-flight window to the endpoint, ``concurrency`` its ceiling; ``False``: keep
    ``concurrency`` requests in flight."""
    timeout: float | None = _SPEC.timeout
    """The provider's request timeout, when known: an adapted window shrinks before replies reach it."""
    rpm: float | None = _SPEC.rpm
    tpm: float | None = _SPEC.tpm
    max_retries: int = _SPEC.max_retries
    retry_base: float = 1.0
    retry_cap: float = 60.0
    use_cache: bool = _SPEC.cache
    jitter_seed: int | None = None

    @classmethod
    def of(cls, engine: EngineSpec, concurrency: int | None = None) -> EngineOptions:
        """The engine settings of a spec; ``concurrency``: the asked model's own in-flight limit, which wins.

        >>> EngineOptions.of(EngineSpec(rpm=30), 4)
        EngineOptions(concurrency=4, adaptive=True, timeout=120.0, rpm=30.0, tpm=None, max_retries=5, \
retry_base=1.0, retry_cap=60.0, use_cache=True, jitter_seed=None)
        """
        return cls(
            concurrency=concurrency or engine.concurrency,
            adaptive=not engine.fixed_concurrency,
            timeout=engine.timeout,
            rpm=engine.rpm,
            tpm=engine.tpm,
            max_retries=engine.max_retries,
            use_cache=engine.cache,
        )

    @classmethod
    def of_judge(cls, engine: EngineSpec, concurrency: int | None = None) -> EngineOptions:
        """A judge's engine settings: the spec's, with its judge overrides (``judge_concurrency``,
        ``judge_rpm``, ``judge_tpm``) where given; ``concurrency`` is the judge's own, which wins.

        >>> EngineOptions.of_judge(EngineSpec(rpm=2, judge_tpm=900)).rpm, EngineOptions.of_judge(
        ...     EngineSpec(rpm=2, judge_tpm=900)).tpm
        (2.0, 900.0)
        """
        return replace(
            cls.of(engine, concurrency or engine.judge_concurrency),
            rpm=engine.judge_rpm or engine.rpm,
            tpm=engine.judge_tpm or engine.tpm,
        )


class BudgetExceeded(Exception):
    """Sending this request could exceed the run's budget; the run stops cleanly before it."""


class BudgetGuard(Protocol):
    def reserve(self, request: Request, output_cap: int | None = None) -> float:
        """Reserve the request's worst-case cost (``output_cap`` completion tokens at most: the cap it is sent
        with, default its ``max_tokens``); raise :class:`BudgetExceeded` if it does not fit."""
        ...

    def settle(self, reserved: float, usage: Usage) -> None:
        """Replace the reservation by the cost of the tokens actually used."""
        ...


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one request."""

    request: Request
    request_key: str
    """``request.content_key()``: what ``requests.jsonl`` and ``predictions.jsonl`` call the request."""
    cache_key: str
    reply: Reply
    masked: bool = False
    """The reply answers the masked prompt (after a moderation refusal)."""
    refused: bool = False
    """The endpoint's moderation refused the prompt at least once."""


class Engine:
    """Cache, budget, limits and retries around one provider with one set of generation parameters."""

    def __init__(
        self,
        provider: Provider,
        params: Generation,
        options: EngineOptions | None = None,
        *,
        cache: ResponseCache | None = None,
        budget: BudgetGuard | None = None,
    ) -> None:
        check_settings(provider, params)  # before anything is sent
        self.provider = provider
        self.params = params
        self.options = options or EngineOptions()
        cacheable = provider.capabilities.cacheable
        self.cache = cache if self.options.use_cache and cacheable else None
        self.budget = budget
        o = self.options
        self.limiter = Limiter(o.concurrency, rpm=o.rpm, tpm=o.tpm, adaptive=o.adaptive, timeout=o.timeout)
        self.policy = RetryPolicy(self.options.max_retries, self.options.retry_base, self.options.retry_cap)
        self.identity = provider.identity()
        self._keys = CacheKeys(self.identity, params)
        self._rng = random.Random(self.options.jitter_seed)

    async def ask(self, request: Request, *, refresh: bool = False, repeat: int = 0) -> Outcome:
        """Answer one request; ``refresh`` skips the cache lookup (but still stores the new reply).

        ``repeat`` > 0 asks the request again as its own cache entry, with :func:`repeat_params`.

        Raises:
            BudgetExceeded: the request was not sent because it could exceed the budget.
            ProviderError: the endpoint failed in a way that no other request can avoid (bad key, unknown
            model).
        """
        content = request.content_key()
        key = self._keys.of(content, repeat)
        if self.cache is not None and not refresh:
            hit = self.cache.get(key)
            if hit is not None:
                reply, meta = hit
                return Outcome(request, content, key, reply, masked=bool(meta.get("masked")))
        cap = self.params.cap(request.max_tokens)  # the reasoning headroom is paid for too
        reserved = self.budget.reserve(request, cap) if self.budget is not None else 0.0
        outcome = await self._call(request, content, key, repeat_params(self.params, repeat))
        if self.budget is not None:
            self.budget.settle(reserved, outcome.reply.usage)
        if self.cache is not None and outcome.reply.ok:
            self.cache.put(
                key, outcome.reply, self.identity, {"masked": outcome.masked, "task": request.task}
            )
        return outcome

    async def _call(self, request: Request, content: str, key: str, params: Generation) -> Outcome:
        reply, attempts = await self._attempts(request, 0, params)
        if not isinstance(reply, ModerationRefusal):
            return Outcome(request, content, key, reply)
        masked_messages, n_masked = mask_messages(request.messages)
        if n_masked == 0:
            failure = Reply.failure(
                f"content moderation refused the prompt ({reply}); no sensitive word to mask",
                attempts=attempts,
            )
            return Outcome(request, content, key, failure, refused=True)
        masked, attempts = await self._attempts(replace(request, messages=masked_messages), attempts, params)
        if isinstance(masked, ModerationRefusal):
            failure = Reply.failure(
                f"content moderation refused the prompt ({masked}), also with {n_masked} "
                "sensitive words masked",
                attempts=attempts,
            )
            return Outcome(request, content, key, failure, masked=True, refused=True)
        return Outcome(request, content, key, masked, masked=True, refused=True)

    async def _attempts(
        self, request: Request, before: int, params: Generation
    ) -> tuple[Reply | ModerationRefusal, int]:
        async def once() -> Reply | ModerationRefusal:
            try:
                return await self.provider.complete(request, params)
            except ModerationRefusal as exc:
                return exc

        tokens = _rough_tokens(request)
        try:
            result = await call_with_retries(
                once, policy=self.policy, limiter=self.limiter, tokens=tokens, rng=self._rng
            )
        except BenchError:
            raise
        except Exception as exc:  # a provider bug must cost one request, not the run
            return Reply.failure(f"{exc.__class__.__name__}: {exc}", attempts=before + 1), before + 1
        attempts = before + result.attempts
        if result.value is None:
            return Reply.failure(
                result.error or "request failed", latency=result.latency, attempts=attempts
            ), attempts
        value = result.value
        if isinstance(value, ModerationRefusal):
            return value, attempts
        assert isinstance(value, Reply)
        return replace(value, attempts=attempts, latency=result.latency, cached=False), attempts


def repeat_params(params: Generation, repeat: int) -> Generation:
    """The parameters of a request's ``repeat``-th ask: repeat 0 is sent as the run's parameters; a later
    repeat gets seed = base seed (0 when unset) + repeat, unless the run samples (temperature > 0) with no
    seed, whose asks differ already. A fixed seed, or greedy decoding with none, would answer every repeat
    alike on a server that honours seeds; one that ignores them may still do so (docs/repeats.md).

    >>> repeat_params(Generation(), 2).seed, repeat_params(Generation(seed=7), 1).seed
    (2, 8)
    >>> repeat_params(Generation(temperature=0.7), 3).seed is None
    True
    """
    if repeat == 0 or (params.temperature > 0 and params.seed is None):
        return params
    return params.model_copy(update={"seed": (params.seed or 0) + repeat})


def _rough_tokens(request: Request) -> int:
    """Prompt characters / 4 plus the completion limit: what a request can weigh against a TPM limit."""
    chars = sum(len(str(chat_message(m).content or "")) for m in request.messages)
    return chars // 4 + request.max_tokens


async def execute_requests(
    requests: Sequence[Request],
    provider: Provider,
    params: Generation,
    *,
    engine_options: EngineOptions | None = None,
    cache: ResponseCache | None = None,
) -> list[Reply]:
    """Answer ``requests`` concurrently (cache, limits, retries); replies come back in request order.

    Failed requests come back as ``Reply.failure``; only errors no request can survive (``ProviderError``)
    raise.
    """
    options = engine_options or EngineOptions()
    own_cache = ResponseCache() if cache is None and options.use_cache else None
    engine = Engine(provider, params, options, cache=own_cache or cache)
    try:
        outcomes = await asyncio.gather(*(engine.ask(r) for r in requests))
    finally:
        if own_cache is not None:
            own_cache.close()
    return [o.reply for o in outcomes]
