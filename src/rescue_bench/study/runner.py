"""Run a study: every (model, perturbation) through the engine and the judge pass, at the same time.

Each run is what ``rescue-bench run`` makes of its spec: :func:`rescue_bench.engine.run.execute_run` (plan,
check the directory, ask, record, score), then the judge pass
(:func:`rescue_bench.judge.after_run.score_after_run`) when it finished, so every run directory is an
ordinary one. The runs share one event loop and nothing else: each has its own engine, hence its own
in-flight limit (the model's ``concurrency``, else ``engine.concurrency``), rate limits and budget. A run that
fails (the endpoint refuses: bad key, unknown model; a configuration its directory refuses) stops alone,
its reason recorded in ``study.json``; the others go on. Re-running resumes every run: finished instances
are never asked again, so a finished run sends nothing and a model added to the study is the only one asked.

Everything that can be checked is checked before the first directory is written: every run spec, every
judge (its provider is built, so a missing key stops the study now), budgets and prices.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rescue_bench.data.load import load_samples
from rescue_bench.data.schema import Sample
from rescue_bench.engine.manifest import build_plans, check_tasks, select_samples
from rescue_bench.engine.preflight import check_model
from rescue_bench.engine.run import RunOptions, RunResult, execute_run
from rescue_bench.engine.video import check_video_config
from rescue_bench.errors import BenchError
from rescue_bench.judge.after_run import JudgeSettings, has_endpoint, score_after_run
from rescue_bench.judge.runner import JudgeStopped
from rescue_bench.judge.setup import judge_budgets, judge_settings, run_budget, spec_prices, with_judges
from rescue_bench.pricing import spent_so_far
from rescue_bench.rundir import read_requests
from rescue_bench.study.lock import study_lock
from rescue_bench.study.progress import StudyProgress
from rescue_bench.study.record import RunCounts, RunEntry, StudyRecord, now, read_record, write_record
from rescue_bench.study.spec import StudyRun, StudySpec

REFRESH_S = 0.5
"""Seconds between two looks of the progress display at the run directories."""


@dataclass(frozen=True, slots=True)
class StudyOptions:
    quiet: bool = False
    cache_path: Path | None = None
    warn: Callable[[str], None] = lambda _: None


@dataclass(frozen=True, slots=True)
class Prepared:
    """One run, checked and ready: its spec with judges resolved, and its judge pass."""

    run: StudyRun
    judging: JudgeSettings


@dataclass(slots=True)
class _State:
    """The study's record as it goes (one event loop: no lock needed)."""

    study: StudySpec
    entries: list[RunEntry]
    folder: Path
    started: dict[int, float] = field(default_factory=dict)

    def save(self) -> StudyRecord:
        record = StudyRecord(spec=self.study.to_table(), updated=now(), runs=tuple(self.entries))
        write_record(self.folder, record)
        return record


def prepare(study: StudySpec) -> list[Prepared]:
    """Check every run before anything is written; a :class:`ConfigError` names what is wrong."""
    prepared = []
    for run in study.runs():
        spec = with_judges(run.spec)
        check_model(spec)  # an unknown provider or a baseline asked to batch stops the study before any run
        check_tasks(spec)
        check_video_config(spec)
        run_budget(spec, run.out)  # a budget without prices is named now
        prepared.append(
            Prepared(
                StudyRun(run.index, run.model, run.perturbation, run.out, spec),
                judge_settings(spec, None, run.out),
            )
        )
    return prepared


def run_study(study: StudySpec, options: StudyOptions | None = None) -> StudyRecord:
    """Run (or resume) every run of ``study``; the final ``study.json``. Failed runs are in its entries."""
    options = options or StudyOptions()
    prepared = prepare(study)
    samples = select_samples(load_samples(study.base.data), study.base)
    total = sum(len(p.instances) for p in build_plans(samples, study.base))
    with study_lock(study.out):  # a second sweep of the study is refused, its runs left as they are
        read_record(study.out)  # a damaged study.json is named before anything runs
        return asyncio.run(_run_all(study, prepared, samples, total, options))


async def _run_all(
    study: StudySpec,
    prepared: Sequence[Prepared],
    samples: Sequence[Sample],
    total: int,
    options: StudyOptions,
) -> StudyRecord:
    entries = [_entry(study, p.run) for p in prepared]
    state = _State(study, entries, study.out)
    state.save()
    rows = [(p.run.label, p.run.out, total, spec_prices(p.run.spec)) for p in prepared]
    progress = StudyProgress.of(rows, options.quiet)
    progress.start()
    watcher = asyncio.create_task(_watch(progress))
    try:
        async with asyncio.TaskGroup() as group:
            for item in prepared:
                group.create_task(_one(item, samples, options, state, progress))
    finally:
        watcher.cancel()
        progress.stop()
        record = state.save()
    return record


async def _watch(progress: StudyProgress) -> None:
    while True:
        await asyncio.sleep(REFRESH_S)
        progress.refresh()


def _entry(study: StudySpec, run: StudyRun) -> RunEntry:
    return RunEntry(model=run.model, perturbation=run.perturbation, dir=str(run.out.relative_to(study.out)))


async def _one(
    item: Prepared, samples: Sequence[Sample], options: StudyOptions, state: _State, progress: StudyProgress
) -> None:
    run, index = item.run, item.run.index
    clock = time.perf_counter()
    progress.tallies[index].status = "running"
    try:
        budget = run_budget(run.spec, run.out)
        # A baseline, local or replay model costs nothing: the budget then guards the judges alone.
        paid = budget if has_endpoint(run.spec.model.name) else None
        run_options = RunOptions(quiet=True, budget=paid, cache_path=options.cache_path)
        result = await execute_run(run.spec, run.out, run_options, samples=samples)
        if result.status == "finished":
            judging = replace(item.judging, budgets=judge_budgets(run.spec, budget, run.out))
            try:
                await score_after_run(run.out, run.spec.tasks, judging, options.warn)
            except JudgeStopped as exc:
                result = replace(result, status="stopped", stop_reason=str(exc))
        entry = _finished(state.entries[index], result)
    except BenchError as exc:
        entry = state.entries[index].model_copy(update={"status": "failed", "reason": str(exc)})
    entry = entry.model_copy(
        update={"elapsed_s": round(time.perf_counter() - clock, 3), "cost_usd": _cost(run)}
    )
    state.entries[index] = entry
    progress.tallies[index].status = entry.status
    state.save()


def _finished(entry: RunEntry, result: RunResult) -> RunEntry:
    counts = RunCounts.of(result.counts)
    if result.status != "finished":
        return entry.model_copy(
            update={"status": "partial", "reason": result.stop_reason or "not finished", "counts": counts}
        )
    if counts.done and counts.request_failures == counts.done:
        # A 5xx storm: the engine records each failed request as a miss and finishes; nothing was answered.
        return entry.model_copy(
            update={
                "status": "failed",
                "reason": "every request failed (see requests.jsonl)",
                "counts": counts,
            }
        )
    return entry.model_copy(update={"status": "finished", "reason": None, "counts": counts})


def _cost(run: StudyRun) -> float | None:
    prices = spec_prices(run.spec)
    if prices is None or not run.out.is_dir():
        return None
    return round(spent_so_far(read_requests(run.out), prices), 6)
