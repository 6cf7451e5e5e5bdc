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

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rescue_bench.data.load import load_samples
from rescue_bench.data.schema import Sample
from rescue_bench.engine.asking import LIVE, Asker, Pending
from rescue_bench.engine.counts import count_run
from rescue_bench.engine.ending import Ending, run_status, stepped_down, summarise
from rescue_bench.engine.execute import BudgetGuard, Engine, EngineOptions
from rescue_bench.engine.hook import Hook
from rescue_bench.engine.outcomes import prediction_record, request_record
from rescue_bench.engine.plans import TaskPlan, build_plans, check_tasks, select_samples
from rescue_bench.engine.runner import Runner
from rescue_bench.engine.scoring import aggregate_scores
from rescue_bench.errors import ConfigError, ProviderError
from rescue_bench.metrics.aggregate import check_required
from rescue_bench.models.base import Provider
from rescue_bench.records import Json
from rescue_bench.rundir import Counts, Manifest, RunStore
from rescue_bench.rundir.cache import ResponseCache
from rescue_bench.rundir.manifest import finish_manifest
from rescue_bench.rundir.status import RunStatus, is_final
from rescue_bench.spec import RunSpec
from rescue_bench.spec.record import build_manifest, check_compatible
from rescue_bench.tasks.base import Task

__all__ = [
    "RunOptions",
    "RunResult",
    "execute_run",
    "prediction_record",
    "request_record",
]


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What a session needs beyond the spec: display, the budget guard, the cache file, engine tuning."""

    quiet: bool = False
    budget: BudgetGuard | None = None
    cache_path: Path | None = None
    engine: EngineOptions | None = None
    """``None``: the spec's engine settings (:meth:`EngineOptions.of`); tests tune the retry timings here."""
    asker: Asker = LIVE
    """How the planned requests are answered (:mod:`rescue_bench.engine.asking`), and by which provider: live
    by default; the caller chooses another way (the Batch API: :class:`rescue_bench.batch.asker.BatchApi`; a
    results file: :class:`rescue_bench.batch.offline.ResultsFile`)."""
    hook: Hook | None = None
    """Applied to each rendered request: video mode's clips (:func:`rescue_bench.video.mode.make_hook`)."""
    store: RunStore | None = None
    """The run directory, whose lock the caller holds (``rundir.run_lock``) because it writes it after the
    session too (the judge pass); ``None``: the session locks the directory itself."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a session ended: the run directory, its status, and (when finished) ``scores.json``."""

    out: Path
    status: RunStatus
    scores: dict[str, Any] | None
    counts: dict[str, Counts]
    stop_reason: str | None = None
    ending: Ending | None = None
    """The status's reasons: instances without an answer, the share and main reason of failed answers."""


async def execute_run(
    spec: RunSpec,
    out: Path,
    options: RunOptions,
    *,
    tasks: Mapping[str, Task] | None = None,
    model: Provider | None = None,
    samples: Sequence[Sample] | None = None,
) -> RunResult:
    """Run (or resume) ``spec`` into the run directory ``out``.

    Every task is planned and the directory checked before ``run.json`` is written and the first request
    goes out; a new and a resumed run take the same path.

    Raises:
        ConfigError: the directory holds a run of another configuration, or the settings cannot work.
        ProviderError: the endpoint refused in a way no request can avoid (the run is left resumable).
    """
    known = check_tasks(spec, tasks)
    if spec.is_video and options.hook is None:
        raise ConfigError("video mode needs its clip hook: run it through rescue_bench.evaluation.run")
    chosen = select_samples(samples if samples is not None else load_samples(spec.data), spec)
    provider = model or options.asker.model(spec)
    try:
        options.asker.check(spec, provider)  # refused before anything is written
        store = options.store or RunStore(out)
        if options.store is None:
            store.lock()
        try:
            return await _session(spec, store, options, known, chosen, provider)
        finally:
            if options.store is None:
                store.unlock()
    finally:
        await provider.aclose()


async def _session(
    spec: RunSpec,
    store: RunStore,
    options: RunOptions,
    tasks: Mapping[str, Task],
    samples: Sequence[Sample],
    model: Provider,
) -> RunResult:
    clock, started = time.perf_counter(), time.time()
    plans = build_plans(samples, spec, tasks, model.capabilities)
    manifest = Manifest.from_json(build_manifest(spec, samples, plans, model.identity(), tasks))
    check_compatible(store, manifest.to_json(), tasks)
    previous = store.manifest()
    store.write_manifest(_resumed(manifest, previous).to_json())
    store.open()
    model.prepare([inst for plan in plans for inst in plan.instances])
    # The store's reader names a damaged request line and leaves it out of the counts (results are whole).
    earlier = store.request_lines()
    latest = store.latest_predictions()
    runner = Runner(store, options.quiet, spec.engine.retry_failed, latest, options.hook, earlier)
    runner.phases["setup_s"] = round(time.perf_counter() - clock, 3)
    engine_options = options.engine or EngineOptions.of(spec.engine, spec.model.concurrency)
    use_cache = engine_options.use_cache and model.capabilities.cacheable
    cache = ResponseCache(options.cache_path) if use_cache else None
    status: RunStatus = "stopped"
    clock = time.perf_counter()
    try:
        pending = Pending(spec, store.root, plans, runner.done, model, cache, options.budget, options.quiet)
        route = await options.asker.route(pending)
        manifest = _with_options(manifest, route.record)
        for plan in route.plans:
            runner.add(plan)
        how = route.engine or engine_options
        engine = Engine(route.model, spec.generation(), how, cache=cache, budget=route.budget)
        await runner.run(engine)
        runner.stop_reason = runner.stop_reason or route.stop_reason
        status = "stopped" if runner.stop_reason else "finished"
    except ProviderError as exc:
        runner.stop_reason = str(exc)
        raise
    finally:
        runner.phases["requests_s"] = round(time.perf_counter() - clock, 3)
        if cache is not None:
            cache.close()
        # Also when interrupted: the records are closed and run.json says "stopped", so the run resumes.
        result = _finish(store, runner, plans, spec, _resumed(manifest, previous), status, started, samples)
    return result


def _with_options(manifest: Manifest, record: Mapping[str, Json]) -> Manifest:
    """``run.json`` with what the way of asking recorded under ``options`` (unchanged when it has nothing).

    >>> _with_options(Manifest(options={"a": 1}), {"batch": {"batches": 2}}).options
    {'a': 1, 'batch': {'batches': 2}}
    >>> _with_options(Manifest(status="running"), {}).to_json()
    {'status': 'running'}
    """
    if not record:
        return manifest
    return manifest.model_copy(update={"options": {**manifest.options, **record}})


def _resumed(manifest: Manifest, previous: dict[str, Json] | None) -> Manifest:
    """A new session's ``run.json``: this session's facts and the run's history (judging is in judging.json).

    >>> old = {"timings": {"created": "t0", "sessions": 2}, "judges": ["a"], "bertscore": {"model": "m",
    ...        "hash": "h"}}
    >>> new = _resumed(Manifest(timings={"created": "t1"}, judges=["b"]), old).to_json()
    >>> new["timings"], new["judges"], "bertscore" in new
    ({'created': 't0', 'sessions': 3, 'session_elapsed_s': []}, ['a', 'b'], False)
    """
    if previous is None:
        return manifest
    before = Manifest.from_json(previous, "run.json")
    first = before.timings
    timings = manifest.timings.model_copy(
        update={
            "created": first.created or manifest.timings.created,
            "sessions": first.sessions + 1,
            "session_elapsed_s": list(first.session_elapsed_s),
        }
    )
    judges = [*before.judges, *(j for j in manifest.judges if j not in before.judges)]
    return manifest.model_copy(update={"judges": judges, "timings": timings})


def _finish(
    store: RunStore,
    runner: Runner,
    plans: Sequence[TaskPlan],
    spec: RunSpec,
    manifest: Manifest,
    status: RunStatus,
    started: float,
    samples: Sequence[Sample],
) -> RunResult:
    clock = time.perf_counter()
    order = [key for plan in plans for key in plan.line_keys()]
    lines = store.compact_predictions(order, runner.done)
    store.close()
    counts = count_run(plans, lines, runner.requests)
    complete = all(c.done == c.instances for c in counts.values())
    scores, ending = None, None
    if status == "finished" and complete:
        planned = sum(plan.asks for plan in plans)
        step_down = stepped_down(counts, spec.generation().response_format)
        ending = run_status(lines, planned, spec.degraded_share, step_down)
        status = ending.status
    if is_final(status):
        check_required(lines)  # the lines were typed as read or appended; a file line lacking a field fails
        scores = aggregate_scores(plans, lines, seed=spec.model.seed or 0, samples=samples)
        store.write_scores(scores)
    else:
        # Unfinished: old scores would not fit (a re-run may have replaced predictions), new ones would count
        # instances that got no answer as misses.
        store.scores_file.unlink(missing_ok=True)
        if status == "finished":
            status = "stopped"
    if ending is not None and ending.status == "incomplete":
        runner.stop_reason = runner.stop_reason or no_answer_reason(ending)
    runner.phases["finish_s"] = round(time.perf_counter() - clock, 3)
    final = finish_manifest(manifest, status, counts, started, runner.stop_reason, runner.phases)
    store.write_manifest(final.to_json())
    return RunResult(store.root, status, scores, counts, runner.stop_reason, ending)


def no_answer_reason(ending: Ending) -> str:
    """One line: how many instances got no answer, and the most frequent reason."""
    reasons: Counter[str] = Counter()
    for task_reasons in ending.unanswered.values():
        reasons.update(task_reasons)
    return f"{sum(reasons.values())} instances got no answer ({summarise(reasons, 1)})"
