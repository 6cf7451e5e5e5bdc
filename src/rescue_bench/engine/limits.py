"""How many requests fly at once, how fast they go out, and when a failed one is tried again.

* :class:`Limiter`: a global in-flight window, fixed or adapted to what the endpoint sustains (additive
  increase, multiplicative decrease), plus optional requests-per-minute and tokens-per-minute limits
  (``aiolimiter``), shared by every task of a run.
* :class:`RetryPolicy`: exponential backoff with full jitter that honours ``Retry-After`` up to a cap (a
  longer one is cut to the cap, with one warning per run) and never past the run's deadline, if it has one.
  Only :class:`RetryableError` (429, 5xx, timeouts, connection errors, unreadable bodies) is retried;
  anything else fails at once, because retrying a 401 or an unknown model only burns time (the reference
  scripts did so 45 times).
* :class:`ModerationRefusal`: a content-moderation refusal; the engine retries it once with sensitive words
  masked.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiolimiter import AsyncLimiter

from rescue_bench.errors import ConfigError, RetryableError

log = logging.getLogger("rescue_bench.engine.limits")


@dataclass(slots=True)
class _Notice:
    """Whether the capped ``Retry-After`` was reported already (once per policy, which is once per run)."""

    said: bool = False


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter; ``Retry-After`` from the server wins when it is longer."""

    max_retries: int = 5
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 600.0
    """Upper bound on a server's ``Retry-After``, so a bogus header cannot park a run for a day."""
    deadline: float | None = None
    """The :attr:`clock`'s time by which every wait must be over (a run-level deadline), if the run has one: a
    retry that would have to wait past it is given up instead."""
    notice: _Notice = field(default_factory=_Notice, compare=False, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)
    """Where :attr:`deadline` is read against; a test passes a fake one with the fake ``sleep`` of
    :func:`call_with_retries`, so that backing off takes no real time."""

    def capped(self, retry_after: float) -> float:
        """``retry_after`` cut to :attr:`max_retry_after`; the first cut of this policy is a warning.

        >>> RetryPolicy(max_retry_after=10).capped(3.0), RetryPolicy(max_retry_after=10).capped(-5)
        (3.0, 0.0)
        """
        if retry_after <= self.max_retry_after:
            return max(0.0, retry_after)
        if not self.notice.said:
            self.notice.said = True
            log.warning(
                "warning: a server sent Retry-After: %g s; waiting %g s at most (the cap on Retry-After). "
                "Said once per run",
                retry_after,
                self.max_retry_after,
            )
        return self.max_retry_after

    def delay(self, retry_number: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry ``retry_number`` (1-based).

        >>> policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
        >>> rng = random.Random(0)
        >>> all(0 <= policy.delay(n, None, rng) <= min(8.0, 2 ** (n - 1)) for n in range(1, 10))
        True
        >>> policy.delay(1, 5.0, rng) >= 5.0
        True
        """
        ceiling = min(self.max_delay, self.base_delay * 2 ** (retry_number - 1))
        jittered = rng.uniform(0.0, ceiling)
        if retry_after is None:
            return jittered
        #  Honour the server, and spread the herd a little so every client does not come back in the same
        # instant.
        return self.capped(retry_after) + rng.uniform(0.0, min(ceiling, 1.0))

    def past_deadline(self, wait: float) -> bool:
        """Whether waiting ``wait`` seconds from now would end after :attr:`deadline`."""
        return self.deadline is not None and self.clock() + wait > self.deadline


QUEUEING = 3.0
"""A reply that took this many times the quickest recent one, sent while others were in flight, waited in
the server's queue: the window shrinks as for a 429."""
PROMPT = 1.5
"""A reply within this many times the quickest recent one came back promptly: the window may grow. Between
the two the window holds: the server is busy, and its queue is not worth lengthening."""


@dataclass(slots=True)
class Ticket:
    """One held slot: when it was granted and how many were in flight then (the feedback needs both)."""

    started: float
    load: int


class Limiter:
    """The in-flight window and the optional per-minute rate limits of one run.

    ``concurrency`` is the ceiling. With ``adaptive`` (the default of a run) the window follows what the
    endpoint sustains, by additive increase and multiplicative decrease: it starts at one request, doubles
    while the replies come back promptly (:data:`PROMPT`; slow start), then grows by one request per window of
    prompt replies;
    a timeout, a 429 or 503, a reply that waited in the server's queue (:data:`QUEUEING`) or took more than
    half the request ``timeout`` (while others were in flight) halves it, at
    most once per window (the requests already in flight when it was cut do not cut it again). A
    ``Retry-After`` also holds every new request until it has passed, so a rate-limited API sees one retry,
    not a storm. Without ``adaptive`` the window stays at ``concurrency`` (``--fixed-concurrency``).
    """

    def __init__(
        self,
        concurrency: int = 16,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        adaptive: bool = False,
        timeout: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1 (got {concurrency})")
        for name, value in (("--rpm", rpm), ("--tpm", tpm)):
            if value is not None and value <= 0:
                raise ConfigError(f"{name} must be positive (got {value})")
        self.concurrency = concurrency
        self.adaptive = adaptive
        self.window = 1.0 if adaptive else float(concurrency)
        """How many requests may be in flight now (its whole part counts)."""
        self.cuts = 0
        """How many times the window was halved."""
        self._slow_start = adaptive
        self._slow = timeout / 2 if timeout else math.inf
        """A reply slower than this (half the request timeout) came close to timing out: the window
        shrinks."""
        self._clock = clock
        self._rpm = AsyncLimiter(rpm, 60.0) if rpm else None
        self._tpm = AsyncLimiter(tpm, 60.0) if tpm else None
        self._tpm_max = tpm or 0.0
        self._held = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._last_cut = -math.inf
        self._hold_until = -math.inf
        self._quick: deque[float] = deque(maxlen=64)
        self.in_flight = 0
        self.peak_in_flight = 0

    @property
    def current(self) -> int:
        """The whole requests the window allows now (at least one)."""
        return max(1, int(self.window))

    @asynccontextmanager
    async def slot(self, tokens: int = 0) -> AsyncIterator[Ticket]:
        """Hold one in-flight slot; wait for the rate limits (``tokens`` counts against the TPM limit)."""
        await self._acquire()
        try:
            hold = self._hold_until - self._clock()
            if hold > 0:  # a server's Retry-After holds every new request, not only the one it answered
                await asyncio.sleep(hold)
            if self._rpm is not None:
                await self._rpm.acquire()
            if self._tpm is not None and tokens > 0:
                # aiolimiter refuses amounts above its capacity; a request larger than the whole minute budget
                # waits for a full bucket instead.
                await self._tpm.acquire(min(float(tokens), self._tpm_max))
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                yield Ticket(self._clock(), self.in_flight)
            finally:
                self.in_flight -= 1
        finally:
            self._held -= 1
            self._wake()

    def answered(self, ticket: Ticket) -> None:
        """Feedback: the request of ``ticket`` got a reply (its latency is read on the limiter's clock)."""
        if not self.adaptive:
            return
        latency = self._clock() - ticket.started
        quickest = min(self._quick, default=latency)
        self._quick.append(latency)
        if ticket.load > 1 and (latency > QUEUEING * quickest or latency > self._slow):
            self._cut(ticket)
            return
        busy = ticket.load > 1 and latency >= PROMPT * quickest
        if busy or latency > self._slow or ticket.started <= self._last_cut:
            return  # busy, near the timeout even alone, or sent before the last cut: hold
        step = 1.0 if self._slow_start else 1.0 / self.window
        self.window = min(float(self.concurrency), self.window + step)
        self._wake()

    def overloaded(self, ticket: Ticket, retry_after: float | None) -> None:
        """Feedback: the endpoint refused the request of ``ticket`` as too much (429, 503, a timeout)."""
        if not self.adaptive:
            return
        if retry_after is not None and retry_after > 0:
            self._hold_until = max(self._hold_until, self._clock() + retry_after)
        self._cut(ticket)

    def _cut(self, ticket: Ticket) -> None:
        """Halve the window, unless it was cut after this request went out (one cut per window)."""
        self._slow_start = False
        if ticket.started <= self._last_cut:
            return
        self._last_cut = self._clock()
        self.window = max(1.0, self.window / 2)
        self.cuts += 1

    async def _acquire(self) -> None:
        while self._held >= self.current:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif not waiter.cancelled():
                    self._wake()  # it was woken and will not take the slot: pass the turn on
                raise
        self._held += 1

    def _wake(self) -> None:
        """Wake as many waiters as the window has free slots (each checks again when it runs)."""
        free = self.current - self._held
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1


@dataclass(frozen=True, slots=True)
class Attempted:
    """The result of :func:`call_with_retries`."""

    value: object | None
    """What the call returned, or ``None`` when every attempt failed."""
    error: str | None
    attempts: int
    latency: float
    """Seconds spent inside the calls (waits between attempts excluded)."""


async def call_with_retries(
    call: Callable[[], Awaitable[object]],
    *,
    policy: RetryPolicy,
    limiter: Limiter,
    tokens: int = 0,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Attempted:
    """Run ``call`` inside a limiter slot, retrying :class:`RetryableError` by ``policy``.

    Other exceptions (``ProviderError``, :class:`ModerationRefusal`) propagate at once. The slot is released
    while waiting between attempts, so a backing-off request does not block the others. A wait that would end
    past the policy's deadline is not waited: the request fails at once, saying why.
    """
    rng = rng or random.Random()
    attempts = 0
    latency = 0.0
    while True:
        attempts += 1
        try:
            async with limiter.slot(tokens) as ticket:
                started = time.perf_counter()
                try:
                    value = await call()
                except RetryableError as exc:
                    if exc.overload:
                        limiter.overloaded(ticket, exc.retry_after)
                    raise
                finally:
                    latency += time.perf_counter() - started
                limiter.answered(ticket)
            return Attempted(value, None, attempts, latency)
        except RetryableError as exc:
            if attempts > policy.max_retries:
                return Attempted(None, f"{exc} (gave up after {attempts} attempts)", attempts, latency)
            wait = policy.delay(attempts, exc.retry_after, rng)
            if policy.past_deadline(wait):
                why = f"waiting {wait:.1f} s to retry would pass the run's deadline"
                return Attempted(None, f"{exc} (gave up after {attempts} attempts: {why})", attempts, latency)
            await sleep(wait)
