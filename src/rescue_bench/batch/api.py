"""``run --batch``: a run's requests through an OpenAI-compatible Batch API (Files + Batches), end to end.

A session (:class:`~rescue_bench.batch.asker.BatchApi`, the run session's asker, once ``run.json`` is
written):

1. the requests still to ask are those the online run would send first
   (:func:`~rescue_bench.batch.plan.pending_work`); cached ones are left out (the engine answers them from
   the cache, as online);
2. they are written as Batch API lines (:func:`~rescue_bench.batch.plan.batch_line`, the body ``batch
   export`` writes too), uploaded with ``client.files.create(purpose="batch")`` and submitted with
   ``client.batches.create``; the batch id goes to ``batches.jsonl`` at once
   (:mod:`rescue_bench.batch.ledger`), so a killed run resumes polling that batch and never uploads its
   requests again;
3. the batch is polled (``client.batches.retrieve``) with a doubling interval, capped; its output and error
   files are read (``client.files.content``) into replies by the same reader as ``batch import``;
4. items a batch reply lacks (or that a cut-off reply left unanswered) are the single re-asks of the online
   run: they are found by the run's own parsing and sent in the next batch;
5. failed and expired requests are submitted again, at most ``max_resubmits`` times each; then their
   failure is recorded like any failed request. A batch cancelled (by someone else) stops the session with
   its reason; re-running submits what it left unanswered.

The replies are then recorded, parsed and scored by the online run's own path
(:class:`~rescue_bench.batch.results.BatchResultsProvider` behind the engine), so ``run --batch``
and ``run`` give the same ``predictions.jsonl`` and ``scores.json`` for the same replies.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

from pydantic import ValidationError

from rescue_bench.batch.ledger import TERMINAL, BatchEvent, BatchLedger, BatchState
from rescue_bench.batch.plan import (
    BATCH_URL,
    BatchOptions,
    BatchProvider,
    Work,
    batch_line,
)
from rescue_bench.batch.results import custom_id, parse_results
from rescue_bench.engine.execute import BudgetGuard, Outcome
from rescue_bench.engine.outcomes import asks_again, predictions_of
from rescue_bench.errors import CallFailed, DataError, ProviderError
from rescue_bench.models.base import Generation
from rescue_bench.pricing import BudgetExceeded
from rescue_bench.records import Json, Reply, Request
from rescue_bench.redaction import public_url, redact_reply
from rescue_bench.rundir.cache import CacheKeys, ResponseCache

if TYPE_CHECKING:
    from openai import AsyncOpenAI

T = TypeVar("T")
COMPLETION_WINDOW: Final = "24h"
LINE_OVERHEAD: Final = 64 * 1024
"""Bytes a result line may hold beyond its reply (ids, status, usage): a batch file larger than its requests'
replies at the cap plus this is a hostile server's, and is not read into memory."""
GONE: Final = frozenset({404, 410})
"""Download statuses of a file that is not there: its requests are submitted again, not waited for."""
__all__ = ["BatchAnswers", "BatchAsker"]


@dataclass(frozen=True, slots=True)
class BatchAnswers:
    """What a batch session got: replies by custom id, the batches fully answered, and why it stopped."""

    replies: dict[str, Reply]
    answered: list[Work]
    stop_reason: str | None


class BatchAsker:
    """Submits, polls, collects and re-submits the requests of a run's pending work."""

    def __init__(
        self,
        provider: BatchProvider,
        params: Generation,
        ledger: BatchLedger,
        options: BatchOptions,
        *,
        cache: ResponseCache | None = None,
        budget: BudgetGuard | None = None,
    ) -> None:
        self.provider, self.params, self.ledger, self.options = provider, params, ledger, options
        self.cache, self.budget = cache, budget
        self._keys = CacheKeys(provider.identity(), params)
        self.requests: dict[str, Request] = {}
        """Every request to answer, by custom id."""
        self.cached: dict[str, Reply] = {}
        self.replies: dict[str, Reply] = {}
        self.held: set[str] = set()
        """Left unanswered by a batch cancelled during this session: not sent again until a re-run."""
        self.reserved: dict[str, float] = {}
        self.stop_reason: str | None = None
        self.unreachable = False
        """The Batch API could not be reached: nothing more is sent this session (:meth:`_give_up`)."""

    async def ask(self, work: Sequence[Work]) -> BatchAnswers:
        """Answer ``work`` (its first requests, then its single re-asks) through batches."""
        for item in work:
            self._want(item.request, item.refresh)
        try:
            await asyncio.gather(*(self._settle(e, resumed=True) for e in self._resumable()))
            while True:
                self._add_singles(work)
                todo = [cid for cid in self.requests if self._to_send(cid)]
                if self.stop_reason is not None or not todo:
                    break
                submitted = await self._submit(todo)
                if submitted is None:
                    break
                await self._settle(submitted, resumed=False)
        except _Unreachable as exc:
            self._give_up(work, str(exc))
        answered = [w for w in work if self._final(w)]
        stop = self.stop_reason
        if stop is None and len(answered) < len(work):
            stop = (
                f"batch: {len(work) - len(answered)} requests still unanswered; re-run to submit them again"
            )
        known = {**self.replies, **self.cached}
        return BatchAnswers(known, answered, stop)

    def _give_up(self, work: Sequence[Work], reason: str) -> None:
        """The Batch API cannot be reached: every request without a reply has failed (no answer), as a dead
        endpoint's requests do online, so the run ends ``incomplete`` (exit 4) and a re-run asks them."""
        self.unreachable = True
        for _ in range(2):  # the singles a failed batch reply asks for get the same failure
            for cid in self.requests:
                if self._reply(cid) is None:
                    self.replies[cid] = Reply.failure(reason)
            self._add_singles(work)

    # -- what to send
    def _want(self, request: Request, refresh: bool) -> None:
        cid = custom_id(request)
        if cid in self.requests:
            return
        self.requests[cid] = request
        hit = None if self.cache is None or refresh else self.cache.get(self._keys.of(request.content_key()))
        if hit is not None:
            self.cached[cid] = hit[0]

    def _to_send(self, cid: str) -> bool:
        if cid in self.cached or cid in self.held or self.unreachable:
            return False
        reply = self.replies.get(cid)
        if reply is not None and reply.ok:
            return False
        return self.ledger.submissions(cid) <= self.options.max_resubmits

    def _reply(self, cid: str) -> Reply | None:
        """The final reply of a request (cached, answered, or failed for good), else ``None``."""
        reply = self.cached.get(cid) or self.replies.get(cid)
        return reply if reply is not None and not self._to_send(cid) else None

    def _final(self, work: Work) -> bool:
        return (
            self._reply(custom_id(work.request)) is not None
            and work.checked
            and all(self._reply(custom_id(s)) is not None for s in work.singles)
        )

    def _add_singles(self, work: Sequence[Work]) -> None:
        """Items a batch reply lacks (or cut off) are asked again singly, as the online run does."""
        for item in work:
            reply = self._reply(custom_id(item.request))
            if item.checked or reply is None:
                continue
            item.checked = True
            if len(item.batch) < 2 or not reply.ok or reply.predictions is not None:
                continue
            outcome = Outcome(item.request, item.request.content_key(), "", reply)
            for inst, pred in zip(item.batch, predictions_of(item.plan, item.batch, outcome), strict=True):
                if asks_again(pred):
                    single = item.plan.task.render([inst], item.plan.cfg)
                    item.singles.append(single)
                    self._want(single, item.refresh)

    # -- submitting
    async def _submit(self, todo: Sequence[str]) -> BatchEvent | None:
        chosen = self._within_budget(todo)
        if not chosen:
            return None
        lines = [batch_line(self.provider, self.requests[cid], self.params) for cid in chosen]
        data = b"".join(_json_line(line) for line in lines)
        uploaded = await self._call(
            "upload",
            lambda client: client.files.create(
                file=("rescue-bench-batch.jsonl", data, "application/jsonl"), purpose="batch"
            ),
        )
        created = await self._call(
            "create",
            lambda client: client.batches.create(
                input_file_id=uploaded.id, endpoint=BATCH_URL, completion_window=COMPLETION_WINDOW
            ),
        )
        event = self.ledger.submitted(created.id, uploaded.id, chosen)
        self._note(f"batch {created.id}: submitted {len(chosen)} requests")
        return event

    def _within_budget(self, todo: Sequence[str]) -> list[str]:
        """The requests whose worst case fits the budget (all without one); the first that does not stops."""
        if self.budget is None:
            return list(todo)
        chosen = []
        for cid in todo:
            if cid not in self.reserved:
                try:
                    request = self.requests[cid]
                    cap = self.params.cap(request.max_tokens)
                    self.reserved[cid] = self.budget.reserve(request, cap)
                except BudgetExceeded as exc:
                    self.stop_reason = str(exc)
                    break
            chosen.append(cid)
        return chosen

    # -- waiting and collecting
    def _resumable(self) -> list[BatchEvent]:
        """Batches of earlier sessions that hold requests still wanted (polled again, never re-uploaded)."""
        return [e for e in self.ledger.batches() if any(c in self.requests for c in e.custom_ids)]

    async def _settle(self, batch: BatchEvent, *, resumed: bool) -> None:
        """Poll ``batch`` until it ends (a batch of an earlier session at once), then read its results."""
        state = self.ledger.state(batch.batch_id)
        delay, at_once = self.options.poll, resumed
        while state is None or state.status not in TERMINAL:
            if not at_once:
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.options.poll_cap)
            at_once = False
            polled = await self._poll(batch.batch_id)
            if polled is None:
                continue
            if state is None or polled != state:
                self.ledger.status(polled)
                self._note(
                    f"batch {polled.batch_id}: {polled.status} ({polled.completed}/{polled.total} done)"
                )
            state = polled
        await self._collect(batch, state)

    async def _poll(self, batch_id: str) -> BatchState | None:
        try:
            found = await self.provider.endpoint.call(lambda client: client.batches.retrieve(batch_id))
        except CallFailed as exc:
            if not exc.transient:
                raise self._failure("poll", exc) from None
            self._note(f"batch {batch_id}: poll failed ({exc.kind}); polling again")
            return None
        counts = found.request_counts
        try:
            return BatchState(
                batch_id=batch_id,
                status=found.status,
                output_file_id=found.output_file_id,
                error_file_id=found.error_file_id,
                completed=counts.completed if counts else 0,
                failed=counts.failed if counts else 0,
                total=counts.total if counts else 0,
            )
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]
            field = ".".join(str(p) for p in problem["loc"])
            raise ProviderError(
                f"batch {batch_id}: the endpoint reports {field} {problem['input']!r}, which is not a "
                f"Batch API {field} ({public_url(self.provider.base_url)}); the run is left resumable: "
                "re-run to poll the batch again"
            ) from None

    async def _collect(self, batch: BatchEvent, state: BatchState) -> None:
        found: dict[str, Reply] = {}
        unreadable: str | None = None
        for file_id in (state.error_file_id, state.output_file_id):  # an answer wins over an error line
            if file_id:
                try:
                    data = await self._download(file_id, len(batch.custom_ids))
                    where = f"batch {batch.batch_id} file {file_id}"
                    replies = parse_results(data, where, self.provider.max_reply_bytes)
                    # As online: a key (or URL secret) the endpoint echoes is never recorded or cached.
                    found.update({c: redact_reply(r, self.provider.secrets) for c, r in replies.items()})
                except (DataError, _Missing) as exc:
                    unreadable = str(exc)
        if unreadable is not None:
            # Not a state to wait in for ever: each request the files leave unanswered has failed once, and
            # is submitted again (at most max_resubmits times; then its failure is recorded).
            self._note(f"{unreadable}; its requests are submitted again")
        cancelled = state.status == "cancelled" and not self.ledger.ended_before(batch.batch_id)
        for cid in batch.custom_ids:
            reply = found.get(cid) or _unreadable(unreadable) or _unanswered(state)
            if reply is None:
                self.held.update([cid] if cancelled else [])
                continue
            old = self.replies.get(cid)
            if old is None or not old.ok:
                self.replies[cid] = reply
                self._settle_budget(cid, reply)
        if cancelled:
            left = sum(cid not in found for cid in batch.custom_ids)
            self.stop_reason = self.stop_reason or (
                f"batch {batch.batch_id} was cancelled ({left} of {len(batch.custom_ids)} requests "
                "unanswered); re-run the same command to submit them again"
            )

    async def _download(self, file_id: str, requests: int) -> bytes:
        """A batch file's bytes, read up to what ``requests`` replies at the reply cap can fill."""
        limit = requests * (self.provider.max_reply_bytes + LINE_OVERHEAD)

        async def read(client: AsyncOpenAI) -> bytes:
            async with client.files.with_streaming_response.content(file_id) as response:
                chunks, size = [], 0
                async for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > limit:
                        raise _Missing(f"batch file {file_id} is over {limit:,} bytes; not read further")
                    chunks.append(chunk)
                return b"".join(chunks)

        try:
            return await self._call("download", read)
        except _Gone as exc:
            raise _Missing(f"batch file {file_id} cannot be downloaded (HTTP {exc.status})") from None

    def _settle_budget(self, cid: str, reply: Reply) -> None:
        reserved = self.reserved.pop(cid, None)
        if self.budget is not None and reserved is not None:
            self.budget.settle(reserved, reply.usage)

    # -- the endpoint
    async def _call(self, what: str, call: Callable[[AsyncOpenAI], Awaitable[T]]) -> T:
        """An upload, create or download, tried again on transient faults (a few times, then an error)."""
        for attempt in range(4):
            try:
                return await self.provider.endpoint.call(call)
            except CallFailed as exc:
                if what == "download" and exc.status in GONE:
                    raise _Gone(exc.status) from None
                if not exc.transient:
                    raise self._failure(what, exc) from None
                self._note(f"batch {what} failed ({exc.kind}); trying again")
                if attempt == 3:
                    raise _Unreachable(
                        f"{exc.kind}: batch {what} failed 4 times at {public_url(self.provider.base_url)}"
                    ) from None
                await asyncio.sleep(min(self.options.poll, 5.0) * 2**attempt)
        raise AssertionError("unreachable")

    def _failure(self, what: str, exc: CallFailed) -> ProviderError:
        # The status alone: an error body may quote the request, and never the key is worth risking.
        return ProviderError(
            f"batch {what}: HTTP {exc.status} from {self.provider.name} at "
            f"{public_url(self.provider.base_url)}; the run is left resumable"
        )

    def _note(self, message: str) -> None:
        if self.options.notify is not None:
            self.options.notify(message)


class _Unreachable(Exception):
    """The Batch API failed transiently (connection, timeout, 5xx) every time it was tried: no answer."""


class _Gone(Exception):
    """A download answered 404 or 410: the file is not there (expired, deleted, never written)."""

    def __init__(self, status: int | None) -> None:
        super().__init__(status)
        self.status = status


class _Missing(Exception):
    """A batch's output or error file that cannot be had: its requests failed once, and are sent again."""


def _unreadable(problem: str | None) -> Reply | None:
    return None if problem is None else Reply.failure(problem)


def _unanswered(state: BatchState) -> Reply | None:
    """The failure of a request with no result line: none for a cancelled batch (it is submitted again)."""
    if state.status == "cancelled":
        return None
    return Reply.failure(f"batch {state.batch_id} {state.status}: no result for this request")


def _json_line(line: Mapping[str, Json]) -> bytes:
    return (json.dumps(line, ensure_ascii=False) + "\n").encode()
