"""Concurrency limits and the retry policy."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any

import pytest
from tests.engine import tiny_task
from tests.engine.conftest import TINY_TASKS, make_samples, provider_on, tiny_config
from tests.fakes.clock import FakeClock, run_virtual
from tests.fakes.openai_server import FakeOpenAIServer

from rescue_bench.engine.limits import Limiter, RetryPolicy, Ticket, call_with_retries
from rescue_bench.engine.run import RunOptions, RunResult, execute_run
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


# --- an in-flight window that fits the server (issue 39) ---------------------------------------------------


def _one_slot_run(
    limiter: Limiter, requests: int, *, service: tuple[float, float] = (0.4, 0.4), timeout: float = 3.0
) -> tuple[float, int, int, int]:
    """``requests`` calls through ``limiter`` to a one-slot server (``service``: the range of seconds each
    takes, drawn at random; in arrival order; a
    request the client gave up on still takes its turn, as on a llama.cpp server), each call timed out
    after ``timeout`` s. Virtual time: returns (seconds taken, attempts, failures, timeouts)."""
    seen = {"timeouts": 0}
    draw = random.Random(0)

    async def main() -> tuple[float, int, int, int]:
        loop = asyncio.get_running_loop()
        slot = asyncio.Lock()

        async def serve() -> None:
            async with slot:
                await asyncio.sleep(draw.uniform(*service))

        async def call() -> str:
            job = asyncio.ensure_future(serve())  # the server goes on whether the client waits or not
            try:
                await asyncio.wait_for(asyncio.shield(job), timeout)
            except TimeoutError:
                seen["timeouts"] += 1
                raise RetryableError(f"timed out after {timeout:g} s", overload=True) from None
            return "ok"

        policy = RetryPolicy(max_retries=5, base_delay=1.0, max_delay=60.0)
        rng = random.Random(0)
        results = await asyncio.gather(
            *(call_with_retries(call, policy=policy, limiter=limiter, rng=rng) for _ in range(requests))
        )
        failed = sum(r.value is None for r in results)
        return loop.time(), sum(r.attempts for r in results), failed, seen["timeouts"]

    return run_virtual(main())


def test_the_window_fits_a_one_slot_server_where_a_fixed_one_times_out() -> None:
    # Virtual time: a limiter whose clock is the loop's sees the real queueing delays without real waits.
    one = _one_slot_run(Limiter(1), 40)
    assert one[1:] == (40, 0, 0) and one[0] == pytest.approx(16.0, abs=0.1)

    def adaptive() -> Limiter:
        return Limiter(16, adaptive=True, clock=lambda: asyncio.get_running_loop().time())

    limiter = adaptive()
    took, attempts, failed, timeouts = _one_slot_run(limiter, 40)
    assert failed == 0 and timeouts == 0 and attempts == 40
    assert took <= 2 * one[0]
    assert limiter.peak_in_flight <= 4
    fixed = _one_slot_run(Limiter(16), 40)  # today's fixed 16: its queue outlasts the timeout
    assert fixed[3] > 0 and fixed[0] > took


def test_a_busy_one_slot_server_whose_replies_vary_gets_no_timeouts() -> None:
    """A small model on a loaded CPU: 10 to 60 s a reply, one at a time, the default timeout of 120 s. The
    window shrinks when a reply takes more than half the timeout, before any request times out."""
    limiter = Limiter(16, adaptive=True, timeout=120.0, clock=lambda: asyncio.get_running_loop().time())
    _, attempts, failed, timeouts = _one_slot_run(limiter, 30, service=(10.0, 60.0), timeout=120.0)
    assert (attempts, failed, timeouts) == (30, 0, 0)
    blind = Limiter(16, adaptive=True, clock=lambda: asyncio.get_running_loop().time())
    assert _one_slot_run(blind, 30, service=(10.0, 60.0), timeout=120.0)[3] > 0  # the timeout rule is needed


def test_the_window_grows_to_the_ceiling_when_the_server_keeps_up() -> None:
    limiter = Limiter(8, adaptive=True, clock=lambda: asyncio.get_running_loop().time())

    async def quick() -> str:
        await asyncio.sleep(0.1)
        return "ok"

    async def main() -> None:
        policy = RetryPolicy()
        await asyncio.gather(*(call_with_retries(quick, policy=policy, limiter=limiter) for _ in range(80)))

    run_virtual(main())
    assert limiter.current == 8 and limiter.peak_in_flight == 8 and limiter.cuts == 0


def test_an_overload_halves_the_window_once_per_round_and_retry_after_holds_new_requests() -> None:
    now = [0.0]
    limiter = Limiter(16, adaptive=True, clock=lambda: now[0])
    limiter.window = 16.0
    early = [limiter_ticket(limiter) for _ in range(4)]
    now[0] = 1.0
    limiter.overloaded(early[0], retry_after=2.0)
    assert limiter.current == 8 and limiter.cuts == 1
    limiter.overloaded(early[1], retry_after=None)  # sent before the cut: the same congestion, no second cut
    assert limiter.current == 8
    now[0] = 1.5
    limiter.overloaded(limiter_ticket(limiter), retry_after=None)
    assert limiter.current == 4 and limiter.cuts == 2
    assert limiter._hold_until == pytest.approx(3.0)
    fixed = Limiter(16)
    fixed.overloaded(limiter_ticket(fixed), retry_after=5.0)
    assert fixed.current == 16  # --fixed-concurrency: the window stays where it was set


def limiter_ticket(limiter: Limiter) -> Ticket:
    return Ticket(limiter._clock(), 2)


def _rate_limited_run(limiter: Limiter, requests: int = 80) -> tuple[int, int]:
    """``requests`` calls through ``limiter`` to an API that takes 8 requests a second (0.5 s each) and
    answers the rest 429 with Retry-After: 1. Virtual time: returns (429s, requests given up)."""
    sent: list[float] = []
    refused = {"n": 0}

    async def main() -> int:
        loop = asyncio.get_running_loop()

        async def call() -> str:
            now = loop.time()
            if len([t for t in sent if t > now - 1.0]) >= 8:
                await asyncio.sleep(0.05)
                refused["n"] += 1
                raise RetryableError("HTTP 429", retry_after=1.0, overload=True)
            sent.append(now)
            await asyncio.sleep(0.5)
            return "ok"

        policy = RetryPolicy(max_retries=8)
        rng = random.Random(0)
        done = await asyncio.gather(
            *(call_with_retries(call, policy=policy, limiter=limiter, rng=rng) for _ in range(requests))
        )
        return sum(r.value is None for r in done)

    failed = run_virtual(main())
    return refused["n"], failed


def test_a_rate_limited_api_gets_no_429_storm() -> None:
    fixed, _ = _rate_limited_run(Limiter(16))
    limiter = Limiter(16, adaptive=True, clock=lambda: asyncio.get_running_loop().time())
    adaptive, failed = _rate_limited_run(limiter)
    assert failed == 0
    assert adaptive <= 12 and 10 * adaptive < fixed  # a handful of 429s, where a fixed window gets a storm


@pytest.mark.slow  # real waits: a one-slot server takes 0.4 s a request
def test_a_one_slot_server_at_the_default_settings_takes_at_most_twice_concurrency_one(
    tmp_path: Path,
) -> None:
    """The issue's acceptance: one request at a time, 0.4 s each, --timeout 3; the default settings (the
    spec's: concurrency 16, adapted) against --concurrency 1."""

    def timed(name: str, **engine: Any) -> tuple[float, RunResult, FakeOpenAIServer]:
        with FakeOpenAIServer(tiny_task.oracle, latency=0.4, slots=1) as server:
            started = time.monotonic()
            result = asyncio.run(
                execute_run(
                    tiny_config(engine={"timeout": 3.0, **engine}),
                    tmp_path / name,
                    RunOptions(quiet=True),
                    tasks=TINY_TASKS,
                    model=provider_on(server, timeout=3.0),
                    samples=make_samples(30, 3),
                )
            )
            return time.monotonic() - started, result, server

    one, one_result, _ = timed("one", concurrency=1)
    default, result, server = timed("default")
    assert one_result.status == result.status == "finished"
    counts = result.counts["echo"]
    assert counts.request_failures == 0 and counts.retries == 0  # no request timed out or given up
    assert server.count == 30 and default <= 2 * one, (default, one)


def test_a_reply_near_the_timeout_does_not_grow_the_window_even_alone() -> None:
    now = [0.0]
    limiter = Limiter(16, adaptive=True, timeout=120.0, clock=lambda: now[0])
    ticket = Ticket(0.0, 1)
    now[0] = 65.0  # one request alone took more than half the timeout: a second would queue behind it
    limiter.answered(ticket)
    assert limiter.current == 1
    now[0] = 70.0
    limiter.answered(Ticket(65.0, 1))
    assert limiter.current == 2
