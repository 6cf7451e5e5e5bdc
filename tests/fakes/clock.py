"""Time that passes only when waited for, so tests of backoff and rate limits take no real time.

* :class:`FakeClock`: a clock and the ``sleep`` that moves it (``call_with_retries(sleep=...)``,
  ``RetryPolicy(clock=...)``).
* :func:`run_virtual`: ``asyncio.run`` on an event loop whose clock jumps to its next timer instead of waiting
  for it: ``asyncio.sleep`` and every timer-based wait (``aiolimiter``'s rate limits) return at once, and the
  loop's ``time()`` says how long they would have taken.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class FakeClock:
    """A monotonic clock that a ``sleep`` moves forward; what was slept is kept in :attr:`slept`."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += max(0.0, seconds)


class _VirtualLoop(asyncio.SelectorEventLoop):
    """A loop that polls its sockets without waiting; when none is ready, its clock moves to the next timer.

    The loop asks its selector to wait exactly until the earliest timer (``BaseEventLoop._run_once``); here
    that wait is skipped and added to :meth:`time` instead.
    """

    def __init__(self) -> None:
        self.now = 0.0
        super().__init__()
        selector: selectors.BaseSelector = self._selector  # type: ignore[attr-defined]
        poll = selector.select

        # No timeout (no timer pending) means the loop only waits for a socket: polling in a loop then spins,
        # which a test that waits on sockets alone would notice; the tests here always have a timer.
        def select(timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            ready = poll(0)
            if not ready and timeout is not None:
                self.now += timeout
            return ready

        selector.select = select  # type: ignore[method-assign]

    def time(self) -> float:
        return self.now


def run_virtual(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to the end on a :class:`_VirtualLoop` (a fresh one, closed after)."""
    with asyncio.Runner(loop_factory=_VirtualLoop) as runner:
        return runner.run(main)
