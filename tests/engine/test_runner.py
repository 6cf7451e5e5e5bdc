"""The run's worker pool helpers: waiting for the event loop to go quiet."""

from __future__ import annotations

import asyncio
import time

from rescue_bench.engine.runner import until_idle


def test_until_idle_returns_soon_on_a_quiet_loop() -> None:
    async def scenario() -> float:
        started = time.perf_counter()
        await until_idle(limit=5.0)
        return time.perf_counter() - started

    assert asyncio.run(scenario()) < 1.0


def test_until_idle_waits_out_a_busy_loop_up_to_its_limit() -> None:
    async def busy(stop: asyncio.Event) -> None:
        while not stop.is_set():
            time.sleep(0.002)  # a turn of the loop that takes 2 ms: not quiet
            await asyncio.sleep(0)

    async def scenario() -> tuple[float, float]:
        stop = asyncio.Event()
        worker = asyncio.create_task(busy(stop))
        started = time.perf_counter()
        await until_idle(limit=0.3)
        busy_wait = time.perf_counter() - started
        stop.set()
        await worker
        started = time.perf_counter()
        await until_idle(limit=5.0)
        return busy_wait, time.perf_counter() - started

    busy_wait, quiet_wait = asyncio.run(scenario())
    assert 0.3 <= busy_wait < 2.0 and quiet_wait < 1.0
