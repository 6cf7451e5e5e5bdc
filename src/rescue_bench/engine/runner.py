"""The asking part of a run: a pool of workers over every task's batches, recording each batch as it lands.

All tasks share one worker pool and the engine's global in-flight limit, so a run keeps the endpoint busy. A
batch is recorded at once (its prediction lines, then its request lines), which is what makes resume exact:
a resumed run finds the finished instances in ``predictions.jsonl`` and asks only the rest (those never
asked, and those that got no answer), in the same batches, so the cache answers whatever had already been
paid for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from rescue_bench.engine.counts import tally_requests
from rescue_bench.engine.ending import unanswered
from rescue_bench.engine.execute import Engine, Outcome
from rescue_bench.engine.hook import Hook, VideoNote
from rescue_bench.engine.outcomes import asks_again, prediction_record, predictions_of, request_record
from rescue_bench.engine.plans import TaskPlan
from rescue_bench.engine.progress import Progress
from rescue_bench.errors import ProviderError
from rescue_bench.pricing import BudgetExceeded
from rescue_bench.records import Instance, Json, Request
from rescue_bench.rundir import PredictionLine, RequestLine, RunStore, line_key

Work = tuple[TaskPlan, tuple[Instance, ...], bool, int]
"""A batch to ask: its plan, its instances, whether it re-asks failures (then the cache is not read), and
the repeat it is asked for."""


class Runner:
    """Schedules the batches of every task and records what comes back."""

    def __init__(
        self,
        store: RunStore,
        quiet: bool,
        retry_failed: bool,
        done: dict[str, PredictionLine],
        hook: Hook | None = None,
        requests: Iterable[RequestLine] = (),
    ) -> None:
        self.plans: list[TaskPlan] = []
        """The plans added so far (see :meth:`add`), in run order."""
        self.hook = hook
        self.store = store
        self.retry_failed = retry_failed
        self.done = done
        """The run's latest prediction line per line key: read when the session started, then appended."""
        self.requests = tally_requests(requests)
        """The run's request lines added up per task: those given (earlier sessions'), then this session's."""
        self.stop_reason: str | None = None
        self.progress = Progress.for_terminal(quiet)
        self.phases: dict[str, float] = {}
        """Seconds spent loading and planning, asking, and finishing (aggregation) in this session."""
        self._queue: asyncio.Queue[Work | None] = asyncio.Queue()
        self._work: list[Work] = []
        self._todo: dict[str, tuple[int, int]] = {}

    def add(self, plan: TaskPlan) -> None:
        """Schedule the batches of ``plan`` that are still to ask."""
        self.plans.append(plan)
        todo = 0
        for repeat in range(plan.repeats):
            for batch, retry in self._pending(plan, repeat):
                self._work.append((plan, batch, retry, repeat))
                todo += len(batch)
        self._todo[plan.name] = (plan.asks, plan.asks - todo)

    def _pending(self, plan: TaskPlan, repeat: int) -> list[tuple[tuple[Instance, ...], bool]]:
        """Batches of ``repeat`` still to ask, and whether each re-asks failures (then the cache is not
        read)."""
        out: list[tuple[tuple[Instance, ...], bool]] = []
        for batch in plan.batches_of(repeat):
            todo = tuple(i for i in batch if self._needs(i, repeat))
            if todo:
                # An answer asked again (--retry-failed) must not come back from the cache; an instance that
                # got no answer has no cache entry, unless another run has answered it since.
                retry = any(self._answered(i, repeat) for i in todo)
                out.append((todo, retry))
        return out

    def _answered(self, inst: Instance, repeat: int) -> bool:
        record = self.done.get(line_key(inst.id, repeat))
        return record is not None and not unanswered(record)

    def _needs(self, inst: Instance, repeat: int) -> bool:
        """Whether an instance is asked: never asked, no answer yet, or answered badly (--retry-failed)."""
        record = self.done.get(line_key(inst.id, repeat))
        return record is None or unanswered(record) or (self.retry_failed and not record.valid)

    async def run(self, engine: Engine) -> None:
        """Ask every pending batch of the plans added.

        CircularEval's rotations are asked one repeat after the other, the model prepared with each
        rotation's instances first: a baseline answers from the instances it was given, by id, and every
        rotation has the same ids. Other runs ask all their work in one go.
        """
        self.progress.start(self._todo)
        try:
            if not any(plan.rotated for plan in self.plans):
                await self._ask(self._work, engine)
                return
            for repeat in range(max(plan.repeats for plan in self.plans)):
                work = [w for w in self._work if w[3] == repeat]
                if work and self.stop_reason is None:
                    if repeat > 0:
                        engine.provider.prepare([i for p in self.plans for i in _instances(p, repeat)])
                    await self._ask(work, engine)
        finally:
            self.progress.stop()

    async def _ask(self, work: Sequence[Work], engine: Engine) -> None:
        for item in work:
            self._queue.put_nowait(item)
        n_workers = min(engine.limiter.concurrency * 2 + 4, len(work))
        for _ in range(n_workers):
            self._queue.put_nowait(None)  # one "no more work" per worker, after all the work
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(n_workers):
                    group.create_task(self._worker(engine))
        except* ProviderError as errors:
            raise errors.exceptions[0] from None

    async def _worker(self, engine: Engine) -> None:
        while self.stop_reason is None:
            work = await self._queue.get()
            if work is None:
                return
            await self._batch(*work, engine)

    async def _render(
        self, plan: TaskPlan, batch: Sequence[Instance], video: dict[str, VideoNote]
    ) -> Request:
        """The task's request, with the rows' clips attached in video mode (``video`` gets the notes)."""
        request = plan.task.render(batch, plan.cfg)
        if self.hook is None:
            return request
        # Reading clips and cutting frames is disk and ffmpeg work: off the event loop.
        attached = await asyncio.to_thread(self.hook, request, batch)
        video.update(attached.notes)
        return attached.request

    async def _batch(
        self, plan: TaskPlan, batch: tuple[Instance, ...], refresh: bool, repeat: int, engine: Engine
    ) -> None:
        video: dict[str, VideoNote] = {}
        try:
            outcome = await engine.ask(await self._render(plan, batch, video), refresh=refresh, repeat=repeat)
            outcomes = [(outcome, False)]
            predictions = predictions_of(plan, batch, outcome)
            # A reply of typed predictions (a baseline) answers every item it can: nothing to ask again.
            if len(batch) > 1 and outcome.reply.ok and outcome.reply.predictions is None:
                for index, inst in enumerate(batch):
                    if asks_again(predictions[index]):
                        request = await self._render(plan, [inst], video)
                        single = await engine.ask(request, refresh=refresh, repeat=repeat)
                        outcomes.append((single, True))
                        predictions[index] = predictions_of(plan, (inst,), single)[0]
        except BudgetExceeded as exc:
            # Nothing of this batch is recorded, so a resumed run asks it again (the cache keeps what was
            # paid for).
            self.stop_reason = self.stop_reason or str(exc)
            return
        singles = {o.request.instance_ids[0]: o for o, _ in outcomes[1:]}
        lines = [
            with_repeat(
                prediction_record(
                    plan.task,
                    inst,
                    pred,
                    singles.get(inst.id, outcome),
                    inst.id in singles,
                    video.get(inst.id),
                ),
                repeat,
            )
            for inst, pred in zip(batch, predictions, strict=True)
        ]
        # Predictions first: a request line then always means "its instances are finished", so a kill between
        # the two appends can never make a resumed run send a recorded request again.
        typed = self.store.append_predictions(lines)
        for item, is_single in outcomes:
            record = with_repeat(request_record(item, single=is_single), repeat)
            self.store.append_request(record)
            line = RequestLine.from_json(record)
            self.requests[line.task].add(line)
        self._report(plan.name, typed, [o for o, _ in outcomes], engine)

    def _report(
        self, task: str, lines: Sequence[PredictionLine], outcomes: Sequence[Outcome], engine: Engine
    ) -> None:
        for line in lines:
            self.done[line.key] = line
        self.progress.update(
            task,
            done=len(lines),
            cache_hits=sum(o.reply.cached for o in outcomes),
            retries=sum(max(0, o.reply.attempts - 1) for o in outcomes),
            failures=sum(not line.valid for line in lines),
            tokens=sum(o.reply.usage.total_tokens for o in outcomes if not o.reply.cached),
            window=(engine.limiter.current, engine.limiter.concurrency),
        )


def _instances(plan: TaskPlan, repeat: int) -> list[Instance]:
    """The instances ``plan`` asks for ``repeat`` (a CircularEval rotation's, or its only ones)."""
    if repeat >= plan.repeats or not plan.rotated:
        return list(plan.instances)
    return [inst for batch in plan.batches_of(repeat) for inst in batch]


def with_repeat(record: dict[str, Json], repeat: int) -> dict[str, Json]:
    """A prediction or request line with its ``repeat``, written only when > 0 (a run without repeats is
    byte for byte as before)."""
    return {**record, "repeat": repeat} if repeat > 0 else record
