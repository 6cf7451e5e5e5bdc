"""The asking part of a run: a pool of workers over every task's batches, recording each batch as it lands.

All tasks share one worker pool and the engine's global in-flight limit, so a run keeps the endpoint busy. A
batch is recorded at once (its prediction lines, then its request lines), which is what makes resume exact:
a resumed run finds the finished instances in ``predictions.jsonl`` and asks only the rest, in the same
batches, so the cache answers whatever had already been paid for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from rescue_bench.engine.execute import BudgetExceeded, Engine, Outcome
from rescue_bench.engine.manifest import TaskPlan
from rescue_bench.engine.outcomes import asks_again, prediction_record, predictions_of, request_record
from rescue_bench.engine.progress import Progress
from rescue_bench.engine.video import Hook, VideoNote, notes
from rescue_bench.errors import ProviderError
from rescue_bench.models.base import Predictor
from rescue_bench.records import Instance, Json, Prediction, Request
from rescue_bench.rundir import RunStore

if TYPE_CHECKING:
    from rescue_bench.engine.run import RunOptions

IDLE_LIMIT = 0.25
"""Seconds at most that deferrable work (a new run's set-up, an early aggregation) waits for a quiet loop."""
Work = tuple[TaskPlan, tuple[Instance, ...], bool]
"""A batch to ask: its plan, its instances, and whether it re-asks failures (then the cache is not read)."""


class Runner:
    """Schedules the batches of every task and records what comes back."""

    def __init__(
        self,
        store: RunStore,
        options: RunOptions,
        done: dict[str, dict[str, Json]],
        hook: Hook | None = None,
    ) -> None:
        self.plans: list[TaskPlan] = []
        """The plans added so far (see :meth:`add`), in run order."""
        self.hook = hook
        self.store = store
        self.options = options
        self.done = done
        self.stop_reason: str | None = None
        self.progress = Progress.for_terminal(options.quiet)
        self.phases: dict[str, float] = {}
        """Seconds spent loading and planning, asking, and finishing (aggregation) in this session."""
        self.on_task_done: Callable[[TaskPlan], None] | None = None
        """Called when the last pending batch of a task has been recorded in this session."""
        self._work: dict[str, list[tuple[tuple[Instance, ...], bool]]] = {}
        self._left: dict[str, int] = {}
        self._queue: asyncio.Queue[Work | None] = asyncio.Queue()
        self._ready = asyncio.Event()

    def add(self, plan: TaskPlan) -> None:
        """Schedule the batches of ``plan`` that are still to ask (workers may already be running)."""
        self.plans.append(plan)
        self._work[plan.name] = self._pending(plan)
        self._left[plan.name] = len(self._work[plan.name])
        for batch, retry in self._work[plan.name]:
            self._queue.put_nowait((plan, batch, retry))

    def ready(self) -> None:
        """Every plan is added and the store is open: outcomes may be recorded from now on."""
        todo = {name: sum(len(batch) for batch, _ in work) for name, work in self._work.items()}
        self.progress.start({p.name: (len(p.instances), len(p.instances) - todo[p.name]) for p in self.plans})
        self._ready.set()

    def _pending(self, plan: TaskPlan) -> list[tuple[tuple[Instance, ...], bool]]:
        """Batches still to ask, and whether each re-asks failures (then the cache is not read)."""
        out: list[tuple[tuple[Instance, ...], bool]] = []
        for batch in plan.batches:
            todo = tuple(i for i in batch if self._needs(i))
            if todo:
                retry = any(i.id in self.done for i in todo)
                out.append((todo, retry))
        return out

    def _needs(self, inst: Instance) -> bool:
        record = self.done.get(inst.id)
        return record is None or (self.options.retry_failed and not record.get("valid"))

    async def run_provider(self, engine: Engine, setup: Awaitable[None] | None = None) -> None:
        """Ask every pending batch.

        ``setup``, when given, runs while the first requests are out: it adds the other plans and calls
        :meth:`ready`. Without it, every plan must be added and :meth:`ready` called before.
        """
        n_workers = engine.limiter.concurrency * 2 + 4
        if setup is None:
            n_workers = min(n_workers, self._queue.qsize())
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(n_workers):
                    group.create_task(self._worker(engine))
                if setup is not None:
                    await setup
                for _ in range(n_workers):
                    self._queue.put_nowait(None)  # no more work
        except* ProviderError as errors:
            raise errors.exceptions[0] from None
        finally:
            self.progress.stop()

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
        video.update(notes(attached, batch))
        return attached.request

    async def _batch(
        self, plan: TaskPlan, batch: tuple[Instance, ...], refresh: bool, engine: Engine
    ) -> None:
        video: dict[str, VideoNote] = {}
        try:
            outcome = await engine.ask(await self._render(plan, batch, video), refresh=refresh)
            outcomes = [(outcome, False)]
            predictions = predictions_of(plan, batch, outcome)
            if len(batch) > 1 and outcome.reply.ok:
                for index, inst in enumerate(batch):
                    if asks_again(predictions[index]):
                        request = await self._render(plan, [inst], video)
                        single = await engine.ask(request, refresh=refresh)
                        outcomes.append((single, True))
                        predictions[index] = predictions_of(plan, (inst,), single)[0]
        except BudgetExceeded as exc:
            # Nothing of this batch is recorded, so a resumed run asks it again (the cache keeps what was
            # paid for).
            self.stop_reason = self.stop_reason or str(exc)
            return
        await self._ready.wait()
        singles = {o.request.instance_ids[0]: o for o, _ in outcomes[1:]}
        lines = [
            prediction_record(
                plan.task,
                inst,
                pred,
                singles.get(inst.id, outcome),
                inst.id in singles,
                video.get(inst.id),
            )
            for inst, pred in zip(batch, predictions, strict=True)
        ]
        # Predictions first: a request line then always means "its instances are finished", so a kill between
        # the two appends can never make a resumed run send a recorded request again.
        self.store.append_predictions(lines)
        for item, is_single in outcomes:
            self.store.append_request(request_record(item, single=is_single))
        self._report(plan.name, lines, [o for o, _ in outcomes])
        self._left[plan.name] -= 1
        if self._left[plan.name] == 0 and self.on_task_done is not None:
            self.on_task_done(plan)

    def _report(self, task: str, lines: Sequence[Mapping[str, Json]], outcomes: Sequence[Outcome]) -> None:
        for line in lines:
            self.done[str(line["instance_id"])] = dict(line)
        self.progress.update(
            task,
            done=len(lines),
            cache_hits=sum(o.reply.cached for o in outcomes),
            retries=sum(max(0, o.reply.attempts - 1) for o in outcomes),
            failures=sum(not line["valid"] for line in lines),
            tokens=sum(o.reply.usage.total_tokens for o in outcomes if not o.reply.cached),
        )

    def run_predictor(self, predictor: Predictor) -> None:
        try:
            for plan in self.plans:
                batch = tuple(inst for b, _ in self._work[plan.name] for inst in b)
                if not batch:
                    continue
                # All of the task's instances, not only the unfinished ones: a predictor may look across them
                # (the majority prior), and a resumed session must predict what one session would have.
                by_id = {p.instance_id: p for p in predictor.predict(list(plan.instances))}
                preds = [
                    by_id.get(i.id) or Prediction.failed(i.id, "missing: the predictor gave no answer")
                    for i in batch
                ]
                lines = [
                    prediction_record(plan.task, inst, pred, None, False)
                    for inst, pred in zip(batch, preds, strict=True)
                ]
                self.store.append_predictions(lines)
                self._report(plan.name, lines, [])
        finally:
            self.progress.stop()


async def until_idle(limit: float = IDLE_LIMIT, quiet: float = 0.01, tick: float = 0.002) -> None:
    """Return once the event loop has had nothing else to do for ``quiet`` seconds, or after ``limit``.

    Work that can wait (a new run's set-up, aggregating a finished task) waits here for a quiet spell, so that
    requests ready to go out, and replies that came in, are handled first. The probe is a timer of ``tick``
    seconds: on a busy loop it fires late. (Spinning on ``sleep(0)`` instead would burn a core, and would keep
    threads that hand results back to the loop waiting for the GIL.)
    """
    loop = asyncio.get_running_loop()
    now = since = loop.time()
    deadline = now + limit
    while now - since < quiet and now < deadline:
        before = now
        await asyncio.sleep(tick)
        now = loop.time()
        if now - before > tick + 0.001:
            since = now
