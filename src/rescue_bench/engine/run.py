"""Run the benchmark: build instances, ask the model batch by batch, record every outcome, score, aggregate.

For each task: instances of every selected sample -> batches within a sample (the task's default size or
``--batch-size``) -> render -> :class:`~rescue_bench.engine.execute.Engine` (cache, budget, limits, retries)
-> parse. Items missing from a batch reply, or of a batch reply cut off at the token limit, are asked again
singly, once; what is still missing or cut off is recorded as a failure. Every instance ends as exactly one
line of ``predictions.jsonl`` (``valid: false`` when it failed), scored by the task, and ``scores.json``
aggregates them (:mod:`rescue_bench.metrics.aggregate`).

The asking itself (one worker pool over all tasks, each batch recorded as it lands, which makes resume exact)
is :class:`~rescue_bench.engine.runner.Runner`.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rescue_bench.data.load import load_samples
from rescue_bench.data.schema import Sample
from rescue_bench.engine.cache import ResponseCache
from rescue_bench.engine.execute import BudgetGuard, Engine, EngineOptions
from rescue_bench.engine.manifest import (
    RunConfig,
    build_manifest,
    check_tasks,
    count_run,
    finish_manifest,
    plan_task,
    select_samples,
)
from rescue_bench.engine.outcomes import prediction_record, request_record
from rescue_bench.engine.runner import Runner, until_idle
from rescue_bench.engine.scoring import Aggregated, EarlyScores, aggregate_scores
from rescue_bench.engine.video import make_hook
from rescue_bench.errors import ProviderError
from rescue_bench.models.base import Predictor, Provider
from rescue_bench.records import Json
from rescue_bench.rundir import RunStore
from rescue_bench.tasks.base import Task

__all__ = ["RunOptions", "RunResult", "execute_run", "prediction_record", "request_record", "run_benchmark"]

Status = Literal["finished", "stopped"]
GC_THRESHOLD = 10_000
"""Allocations between two collections of the youngest generation during a run (Python's default: 700)."""


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
    with Collector() as collector:
        return await _execute(config, out, options, collector, tasks, model, samples)


async def _execute(
    config: RunConfig,
    out: Path,
    options: RunOptions,
    collector: Collector,
    tasks: Mapping[str, Task] | None,
    model: Provider | Predictor | None,
    samples: Sequence[Sample] | None,
) -> RunResult:
    clock = time.perf_counter()
    hook = make_hook(config)
    chosen = select_samples(samples if samples is not None else load_samples(config.data), config)
    known = check_tasks(config, tasks)
    model = model or _make_model(config, options)
    store = RunStore(out)
    store.lock()
    try:
        runner = Runner(store, options, store.latest_predictions(), hook)
        setup = _SetUp(config, options, chosen, known, model, store, runner, collector)
        if isinstance(model, Provider) and store.is_new() and config.tasks:
            # Nothing here to resume or to be compatible with: the first task's requests go out while the
            # other tasks are planned and run.json is written (outcomes are recorded only after that).
            runner.add(plan_task(config.tasks[0], known[config.tasks[0]], chosen, config))
        else:
            setup.complete()
        runner.phases["setup_s"] = round(time.perf_counter() - clock, 3)
        return await _ask(setup, model, time.time())
    finally:
        store.unlock()


class _SetUp:
    """The part of the set-up that needs every task's plan: ``run.json`` and the open store.

    ``run.json`` is checked against a run already in the directory first. A new run completes this while its
    first requests are out.
    """

    def __init__(
        self,
        config: RunConfig,
        options: RunOptions,
        samples: Sequence[Sample],
        tasks: Mapping[str, Task],
        model: Provider | Predictor,
        store: RunStore,
        runner: Runner,
        collector: Collector,
    ) -> None:
        self.config, self.options, self.samples, self.tasks = config, options, samples, tasks
        self.model, self.store, self.runner, self.collector = model, store, runner, collector
        self.begun = False
        self.manifest: dict[str, Json] | None = None
        self.previous: dict[str, Json] | None = None

    def complete(self) -> None:
        self.begun = True
        config, runner = self.config, self.runner
        for name in config.tasks[len(runner.plans) :]:
            runner.add(plan_task(name, self.tasks[name], self.samples, config))
        manifest = build_manifest(
            config,
            options_record(self.options),
            self.samples,
            runner.plans,
            self.model.identity(),
            config.generation_params(),
        )
        self.store.check_compatible(manifest)
        self.previous = self.store.manifest()
        self.store.write_manifest(_resumed(manifest, self.previous))
        self.store.open()
        # The samples, instances and plans live until the run ends: collections need not walk them again.
        self.collector.freeze()
        runner.ready()
        self.manifest = manifest

    async def overlapped(self) -> None:
        """:meth:`complete`, once the requests already started have gone out."""
        await until_idle()
        clock = time.perf_counter()
        self.complete()
        self.runner.phases["setup_overlapped_s"] = round(time.perf_counter() - clock, 3)


async def _ask(setup: _SetUp, model: Provider | Predictor, started: float) -> RunResult:
    runner, options, config = setup.runner, setup.options, setup.config
    cache = ResponseCache(options.cache_path) if options.engine.use_cache else None
    early = EarlyScores(runner, seed=config.seed or 0)
    status: Status = "stopped"
    clock = time.perf_counter()
    try:
        if isinstance(model, Provider):
            engine = Engine(
                model, config.generation_params(), options.engine, cache=cache, budget=options.budget
            )
            runner.on_task_done = early.schedule
            await runner.run_provider(engine, None if setup.begun else setup.overlapped())
        else:
            runner.run_predictor(model)
        status = "stopped" if runner.stop_reason else "finished"
    except ProviderError as exc:
        runner.stop_reason = str(exc)
        raise
    finally:
        runner.phases["requests_s"] = round(time.perf_counter() - clock, 3)
        early.cancel()
        if cache is not None:
            cache.close()
        if isinstance(model, Provider):
            await model.aclose()
        if not setup.begun:  # stopped before the set-up could run: the run stays resumable all the same
            setup.complete()
        if setup.manifest is not None:
            result = _finish(setup, status, started, early.results)
    return result


class Collector:
    """Fewer and cheaper garbage collections during a run, as it was before afterwards.

    A run allocates millions of short-lived objects over a heap of long-lived ones (the samples, instances
    and plans). With Python's defaults, collections cost 0.17 ms of CPU per request of the engine benchmark
    and stalled the event loop for 150 ms at a time (full collections walking the whole heap). A run raises
    the youngest generation's threshold to :data:`GC_THRESHOLD` allocations and, once set up, freezes what
    exists (``gc.freeze``), unless the caller froze objects itself.
    """

    def __enter__(self) -> Collector:
        self._threshold = gc.get_threshold()
        self._ours = gc.get_freeze_count() == 0
        gc.set_threshold(max(self._threshold[0], GC_THRESHOLD), *self._threshold[1:])
        return self

    def freeze(self) -> None:
        if self._ours:
            gc.freeze()

    def __exit__(self, *exc: object) -> None:
        gc.set_threshold(*self._threshold)
        if self._ours:
            gc.unfreeze()


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
    """A new session's ``run.json``: this session's facts and the run's history (judging is in judging.json).

    >>> old = {"timings": {"created": "t0", "sessions": 2}, "judges": ["a"], "bertscore": {"hash": "h"}}
    >>> new = _resumed({"timings": {"created": "t1"}, "judges": ["b"]}, old)
    >>> new["timings"], new["judges"], "bertscore" in new
    ({'created': 't0', 'sessions': 3}, ['a', 'b'], False)
    """
    if previous is None:
        return manifest
    timings = dict(manifest.get("timings") or {})
    old = previous.get("timings") if isinstance(previous.get("timings"), dict) else {}
    timings["created"] = (old or {}).get("created", timings.get("created"))
    timings["sessions"] = int((old or {}).get("sessions", 1)) + 1
    judges = list(previous.get("judges") or [])
    judges += [j for j in manifest.get("judges") or [] if j not in judges]
    return {**manifest, "judges": judges, "timings": timings}


def _finish(setup: _SetUp, status: Status, started: float, known: Mapping[str, Aggregated]) -> RunResult:
    store, plans, runner, config = setup.store, setup.runner.plans, setup.runner, setup.config
    assert setup.manifest is not None
    clock = time.perf_counter()
    order = [inst.id for plan in plans for inst in plan.instances]
    records = store.compact_predictions(order, runner.done)
    store.close()
    counts = count_run(plans, records, store.request_records())
    complete = all(c["done"] == c["instances"] for c in counts.values())
    scores = None
    if status == "finished" and complete:
        scores = aggregate_scores(plans, records, seed=config.seed or 0, known=known)
        store.write_scores(scores)
    else:
        # An unfinished session may have replaced predictions (--retry-failed): old scores would not fit.
        store.scores_file.unlink(missing_ok=True)
        status = "stopped"
    runner.phases["finish_s"] = round(time.perf_counter() - clock, 3)
    final = finish_manifest(
        _resumed(setup.manifest, setup.previous), status, counts, started, runner.stop_reason, runner.phases
    )
    store.write_manifest(final)
    return RunResult(store.root, status, scores, counts, runner.stop_reason)
