"""Concurrency limits and the retry policy."""

from __future__ import annotations

import asyncio
import random

import pytest
from tests.fakes.clock import FakeClock, run_virtual

from rescue_bench.engine.limits import Limiter, RetryPolicy, call_with_retries
from rescue_bench.errors import ConfigError, ProviderError, RetryableError


def test_in_flight_never_exceeds_the_limit() -> None:
    limiter = Limiter(5)

    async def one() -> None:
        async with limiter.slot():
            assert limiter.in_flight <= 5
            await asyncio.sleep(0.01)

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(50)))

    run_virtual(main())
    assert limiter.peak_in_flight == 5


def test_rpm_limit_spaces_requests() -> None:
    limiter = Limiter(10, rpm=600)  # a bucket of 600 requests, refilled at 10 per second

    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        for _ in range(600):
            async with limiter.slot():
                pass
        started = loop.time()
        for _ in range(5):
            async with limiter.slot():
                pass
        return started, loop.time() - started

    burst, spaced = run_virtual(main())  # the loop's clock: what the waits would have taken
    assert burst == 0.0 and spaced == pytest.approx(0.5, abs=0.01)
    with pytest.raises(ConfigError):
        Limiter(0)
    with pytest.raises(ConfigError):
        Limiter(1, tpm=-5)


def test_tpm_limit_waits_for_tokens() -> None:
    limiter = Limiter(4, tpm=600)  # 10 tokens per second once the bucket is spent

    async def main() -> float:
        loop = asyncio.get_running_loop()
        async with limiter.slot(tokens=600):
            pass
        started = loop.time()
        async with limiter.slot(tokens=5):
            pass
        return loop.time() - started

    assert run_virtual(main()) == pytest.approx(0.5, abs=0.01)


def test_backoff_is_full_jitter_within_the_exponential_ceiling() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=4.0)
    rng = random.Random(1)
    delays = [[policy.delay(n, None, rng) for _ in range(200)] for n in (1, 2, 3, 4, 5)]
    for n, values in zip((1, 2, 3, 4, 5), delays, strict=True):
        ceiling = min(4.0, 0.5 * 2 ** (n - 1))
        assert all(0 <= v <= ceiling for v in values)
        assert max(values) > 0.8 * ceiling  # full jitter spreads over the whole interval
    assert all(policy.delay(1, 3.0, rng) >= 3.0 for _ in range(50))
    assert RetryPolicy(max_retry_after=10).delay(1, 9999, rng) <= 11


def test_retries_only_retryable_errors_and_counts_attempts() -> None:
    calls = {"n": 0}
    clock = FakeClock()

    async def flaky() -> str:
        calls["n"] += 1
        if calls["n"] <= 2:
            raise RetryableError("HTTP 429", retry_after=0.25)
        return "ok"

    result = asyncio.run(
        call_with_retries(
            flaky,
            policy=RetryPolicy(max_retries=5, base_delay=0.01),
            limiter=Limiter(1),
            rng=random.Random(0),
            sleep=clock.sleep,
        )
    )
    assert (result.value, result.attempts, result.error) == ("ok", 3, None)
    assert len(clock.slept) == 2 and all(w >= 0.25 for w in clock.slept)

    async def fatal() -> str:
        raise ProviderError("HTTP 401")

    with pytest.raises(ProviderError):
        asyncio.run(call_with_retries(fatal, policy=RetryPolicy(), limiter=Limiter(1), sleep=clock.sleep))
    assert len(clock.slept) == 2


def test_gives_up_after_max_retries() -> None:
    async def always() -> str:
        raise RetryableError("HTTP 503")

    clock = FakeClock()
    result = asyncio.run(
        call_with_retries(always, policy=RetryPolicy(max_retries=2), limiter=Limiter(1), sleep=clock.sleep)
    )
    assert result.value is None and result.attempts == 3 and len(clock.slept) == 2
    assert result.error == "HTTP 503 (gave up after 3 attempts)"


# --- a hostile Retry-After (issue 13) ---------------------------------------------------------------------


def test_a_huge_retry_after_is_capped_and_said_once_per_run(caplog: pytest.LogCaptureFixture) -> None:
    policy = RetryPolicy(max_retries=3, base_delay=0.01, max_retry_after=600.0)
    clock = FakeClock()

    async def parked() -> str:
        raise RetryableError("HTTP 429", retry_after=86_400.0)

    async def both() -> None:
        for _ in range(2):  # two requests of one run share its policy
            await call_with_retries(
                parked, policy=policy, limiter=Limiter(1), rng=random.Random(0), sleep=clock.sleep
            )

    caplog.set_level("WARNING")
    asyncio.run(both())
    assert len(clock.slept) == 6 and all(600.0 <= w <= 601.0 for w in clock.slept)
    said = [r.getMessage() for r in caplog.records if "Retry-After" in r.getMessage()]
    assert said == [
        "warning: a server sent Retry-After: 86400 s; waiting 600 s at most (the cap on Retry-After). "
        "Said once per run"
    ]
    caplog.clear()
    modest = RetryPolicy(max_retry_after=600.0)
    assert 30.0 <= modest.delay(1, 30.0, random.Random(0)) <= 31.0 and not caplog.records


def test_a_retry_that_would_wait_past_the_deadline_fails_at_once() -> None:
    clock = FakeClock(now=1000.0)

    async def parked() -> str:
        raise RetryableError("HTTP 503", retry_after=120.0)

    policy = RetryPolicy(max_retries=5, deadline=1010.0, clock=clock)
    result = asyncio.run(
        call_with_retries(parked, policy=policy, limiter=Limiter(1), rng=random.Random(0), sleep=clock.sleep)
    )
    assert clock.slept == [] and result.value is None and result.attempts == 1
    assert result.error is not None and "would pass the run's deadline" in result.error

    async def quick() -> str:
        raise RetryableError("HTTP 503", retry_after=1.0)

    # Waits of about 1 s each: two fit before the deadline, the third would end past it (the clock moved).
    soon = RetryPolicy(max_retries=5, base_delay=0.01, deadline=1002.5, clock=clock)
    done = asyncio.run(
        call_with_retries(quick, policy=soon, limiter=Limiter(1), rng=random.Random(0), sleep=clock.sleep)
    )
    assert len(clock.slept) == 2 and done.attempts == 3 and 1002.0 <= clock.now <= 1002.5
    assert done.error is not None and "gave up after 3 attempts: waiting 1.0 s" in done.error
