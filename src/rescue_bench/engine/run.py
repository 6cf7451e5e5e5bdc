"""Run the benchmark: build instances, ask the model batch by batch, record every outcome, score, aggregate.

For each task: instances of every selected sample -> batches within a sample (the task's default size or
``--batch-size``) -> render -> :class:`~rescue_bench.engine.execute.Engine` (cache, budget, limits, retries)
-> parse. Items missing from a batch reply, or of a batch reply cut off at the token limit, are asked again
singly, once; what is still missing or cut off is recorded as a failure. Every instance ends as exactly one
line of ``predictions.jsonl`` (``valid: false`` when it failed), scored by the task, and ``scores.json``
aggregates them (:mod:`rescue_bench.metrics.aggregate`).

All tasks share one worker pool and the engine's global in-flight limit, so a run keeps the endpoint busy. A
batch is recorded at once (its prediction lines, then its request lines), which is what makes
resume exact: re-running the same command finds the finished instances in ``predictions.jsonl`` and asks only
the rest, in the same batches, so the cache answers whatever had already been paid for.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rescue_bench.data.load import load_samples
from rescue_bench.data.schema import Sample
from rescue_bench.engine.cache import ResponseCache
from rescue_bench.engine.execute import BudgetExceeded, BudgetGuard, Engine, EngineOptions, Outcome
from rescue_bench.engine.manifest import (
    RunConfig,
    TaskPlan,
    build_manifest,
    build_plans,
    count_run,
    finish_manifest,
    select_samples,
)
from rescue_bench.engine.outcomes import asks_again, prediction_record, predictions_of, request_record
from rescue_bench.engine.progress import Progress
from rescue_bench.engine.store import RunStore
from rescue_bench.engine.video import Hook, VideoNote, make_hook, notes
from rescue_bench.errors import ProviderError
from rescue_bench.models.base import Predictor, Provider
from rescue_bench.records import Instance, Json, Prediction, Request
from rescue_bench.tasks.base import Task

__all__ = ["RunOptions", "RunResult", "execute_run", "prediction_record", "request_record", "run_benchmark"]
JUDGE_KEYS = ("judge_counts", "judge_prompt_hashes", "bertscore")
"""``run.json`` keys the judge pass writes; a resumed session carries them over."""

Status = Literal["finished", "stopped"]


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How to run (never what to ask): limits, retries, cache, budget, resume policy, display."""

    engine: EngineOptions = field(default_factory=EngineOptions)
    timeout: float = 120.0
    retry_failed: bool = False
    quiet: bool = False
    budget: BudgetGuard | None = None
    cache_path: Path | None = None


@dataclass(frozen=True, slots=True)
class RunResult:
    out: Path
    status: Status
    scores: dict[str, Any] | None
    counts: dict[str, dict[str, Any]]
    stop_reason: str | None = None


def run_benchmark(
    config: RunConfig, out: Path, options: RunOptions | None = None, **kwargs: Any
) -> RunResult:
    """Synchronous wrapper of :func:`execute_run`."""
    return asyncio.run(execute_run(config, out, options or RunOptions(), **kwargs))


async def execute_run(
    config: RunConfig,
    out: Path,
    options: RunOptions,
    *,
    tasks: Mapping[str, Task] | None = None,
    model: Provider | Predictor | None = None,
    samples: Sequence[Sample] | None = None,
) -> RunResult:
    """Run (or resume) ``config`` into the run directory ``out``.

    Raises:
        ConfigError: the directory holds a run of another configuration, or the settings cannot work.
        ProviderError: the endpoint refused in a way no request can avoid (the run is left resumable).
    """
    clock = time.perf_counter()
    hook = make_hook(config)
    chosen = select_samples(samples if samples is not None else load_samples(config.data), config)
    plans = build_plans(chosen, config, tasks)
    model = model or _make_model(config, options)
    params = config.generation_params()
    manifest = build_manifest(config, options_record(options), chosen, plans, model.identity(), params)
    store = RunStore(out)
    store.check_compatible(manifest)
    store.lock()
    try:
        return await _run_locked(store, config, options, plans, model, manifest, clock, hook)
    finally:
        store.unlock()


async def _run_locked(
    store: RunStore,
    config: RunConfig,
    options: RunOptions,
    plans: Sequence[TaskPlan],
    model: Provider | Predictor,
    manifest: dict[str, Json],
    clock: float,
    hook: Hook | None = None,
) -> RunResult:
    previous = store.manifest()
    store.write_manifest(_resumed(manifest, previous))
    store.open()
    started = time.time()
    cache = ResponseCache(options.cache_path) if options.engine.use_cache else None
    runner = _Runner(plans, store, options, store.latest_predictions(), hook)
    status: Status = "stopped"
    runner.phases["setup_s"] = round(time.perf_counter() - clock, 3)
    clock = time.perf_counter()
    try:
        if isinstance(model, Provider):
            engine = Engine(
                model, config.generation_params(), options.engine, cache=cache, budget=options.budget
            )
            await runner.run_provider(engine)
        else:
            runner.run_predictor(model)
        status = "stopped" if runner.stop_reason else "finished"
    except ProviderError as exc:
        runner.stop_reason = str(exc)
        raise
    finally:
        runner.phases["requests_s"] = round(time.perf_counter() - clock, 3)
        if cache is not None:
            cache.close()
        if isinstance(model, Provider):
            await model.aclose()
        result = _finish(store, plans, manifest, previous, status, runner, started, config)
    return result


def options_record(options: RunOptions) -> dict[str, Json]:
    e = options.engine
    return {
        "concurrency": e.concurrency,
        "rpm": e.rpm,
        "tpm": e.tpm,
        "max_retries": e.max_retries,
        "timeout": options.timeout,
        "cache": e.use_cache,
        "retry_failed": options.retry_failed,
    }


def _make_model(config: RunConfig, options: RunOptions) -> Provider | Predictor:
    from rescue_bench.models.registry import get_model

    return get_model(
        config.model,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        timeout=options.timeout,
        seed=config.seed,
    )


def _resumed(manifest: dict[str, Json], previous: dict[str, Json] | None) -> dict[str, Json]:
    """A new session's ``run.json``: this session's facts, the run's history, and what judging recorded.

    >>> old = {"timings": {"created": "t0", "sessions": 2}, "judges": ["a"], "bertscore": {"hash": "h"}}
    >>> new = _resumed({"timings": {"created": "t1"}, "judges": ["b"]}, old)
    >>> new["timings"], new["judges"], new["bertscore"]
    ({'created': 't0', 'sessions': 3}, ['a', 'b'], {'hash': 'h'})
    """
    if previous is None:
        return manifest
    timings = dict(manifest.get("timings") or {})
    old = previous.get("timings") if isinstance(previous.get("timings"), dict) else {}
    timings["created"] = (old or {}).get("created", timings.get("created"))
    timings["sessions"] = int((old or {}).get("sessions", 1)) + 1
    # `score` and `run --judge` record judges and their counts; a later session must not erase them.
    judged = {key: previous[key] for key in JUDGE_KEYS if key in previous}
    judges = list(previous.get("judges") or [])
    judges += [j for j in manifest.get("judges") or [] if j not in judges]
    return {**manifest, **judged, "judges": judges, "timings": timings}


def _finish(
    store: RunStore,
    plans: Sequence[TaskPlan],
    manifest: dict[str, Json],
    previous: dict[str, Json] | None,
    status: Status,
    runner: _Runner,
    started: float,
    config: RunConfig,
) -> RunResult:
    clock = time.perf_counter()
    order = [inst.id for plan in plans for inst in plan.instances]
    records = store.compact_predictions(order, runner.done)
    store.close()
    counts = count_run(plans, records, store.request_records())
    complete = all(c["done"] == c["instances"] for c in counts.values())
    scores = None
    if status == "finished" and complete:
        scores = aggregate_scores(plans, records, seed=config.seed or 0)
        store.write_scores(scores)
    else:
        # An unfinished session may have replaced predictions (--retry-failed): old scores would not fit.
        store.scores_file.unlink(missing_ok=True)
        status = "stopped"
    runner.phases["finish_s"] = round(time.perf_counter() - clock, 3)
    final = finish_manifest(
        _resumed(manifest, previous), status, counts, started, runner.stop_reason, runner.phases
    )
    store.write_manifest(final)
    return RunResult(store.root, status, scores, counts, runner.stop_reason)


def aggregate_scores(
    plans: Sequence[TaskPlan],
    records: Sequence[Mapping[str, Json]],
    *,
    seed: int = 0,
    n_resamples: int = 1000,
) -> dict[str, Any]:
    """``scores.json``: the aggregation of every task's records, plus ``_meta``."""
    from rescue_bench.metrics.aggregate import aggregate_run, aggregate_task

    by_task: dict[str, list[Mapping[str, Json]]] = {plan.name: [] for plan in plans}
    for record in records:
        if record.get("task") in by_task:
            by_task[str(record["task"])].append(record)
    scores: dict[str, Any] = {}
    for plan in plans:
        if by_task[plan.name]:
            scores[plan.name] = aggregate_task(
                plan.name, plan.task.KIND, by_task[plan.name], seed=seed, n_resamples=n_resamples
            )
    scores["_meta"] = aggregate_run({}, seed=seed, n_resamples=n_resamples)["_meta"]
    return scores


class _Runner:
    """Schedules the batches of every task and records what comes back."""

    def __init__(
        self,
        plans: Sequence[TaskPlan],
        store: RunStore,
        options: RunOptions,
        done: dict[str, dict[str, Json]],
        hook: Hook | None = None,
    ) -> None:
        self.plans = plans
        self.hook = hook
        self.store = store
        self.options = options
        self.done = done
        self.stop_reason: str | None = None
        self.progress = Progress.for_terminal(options.quiet)
        self.phases: dict[str, float] = {}
        """Seconds spent loading and planning, asking, and finishing (aggregation) in this session."""

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

    def _start_progress(self) -> list[tuple[TaskPlan, tuple[Instance, ...], bool]]:
        work = [(plan, batch, retry) for plan in self.plans for batch, retry in self._pending(plan)]
        todo = {plan.name: 0 for plan in self.plans}
        for plan, batch, _ in work:
            todo[plan.name] += len(batch)
        self.progress.start({p.name: (len(p.instances), len(p.instances) - todo[p.name]) for p in self.plans})
        return work

    async def run_provider(self, engine: Engine) -> None:
        work = self._start_progress()
        queue: asyncio.Queue[tuple[TaskPlan, tuple[Instance, ...], bool]] = asyncio.Queue()
        for item in work:
            queue.put_nowait(item)
        n_workers = min(len(work), engine.limiter.concurrency * 2 + 4)
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(n_workers):
                    group.create_task(self._worker(queue, engine))
        except* ProviderError as errors:
            raise errors.exceptions[0] from None
        finally:
            self.progress.stop()

    async def _worker(
        self, queue: asyncio.Queue[tuple[TaskPlan, tuple[Instance, ...], bool]], engine: Engine
    ) -> None:
        while not queue.empty() and self.stop_reason is None:
            plan, batch, refresh = queue.get_nowait()
            await self._batch(plan, batch, refresh, engine)

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
        work = self._start_progress()
        try:
            for plan in self.plans:
                batch = tuple(inst for p, b, _ in work if p is plan for inst in b)
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
