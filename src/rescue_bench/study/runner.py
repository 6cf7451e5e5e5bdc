"""Run a study: every (model, perturbation) through the engine and the judge pass, at the same time.

Each run is what ``rescue-bench run`` makes of its spec: the one run operation
(:func:`rescue_bench.evaluation.run.execute`: plan, check the directory, ask, record, score, judge), so every
run directory is an ordinary one, with the same statuses. The runs share one event loop and nothing else:
each has its own engine, hence its own in-flight limit (the model's ``concurrency``, else
``engine.concurrency``), rate limits and budget. A run that fails (the endpoint refuses: bad key, unknown
model; a configuration its directory refuses) stops alone, its reason recorded in ``study.json``; the others
go on. Time and cost in ``study.json`` add up over the study's sessions. Re-running resumes every run:
finished instances are never asked again, so a finished run sends nothing and a model added to the study is
the only one asked.

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
from rescue_bench.engine.plans import build_plans, select_samples
from rescue_bench.errors import BenchError
from rescue_bench.evaluation import run as evaluation
from rescue_bench.evaluation.setup import spec_prices
from rescue_bench.pricing import spent_so_far
from rescue_bench.rundir import load_judging, read_requests
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
    """One run, checked and ready: the study's entry and the run operation's prepared spec."""

    run: StudyRun
    prepared: evaluation.Prepared


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


def once_each(options: StudyOptions) -> StudyOptions:
    """``options`` whose warnings are said once each: the runs of a study share their machine and settings, so
    a warning about those (BERTScore left out, say) would otherwise come once per model.

    >>> said: list[str] = []
    >>> warn = once_each(StudyOptions(warn=said.append)).warn
    >>> for message in ("a", "b", "a"):
    ...     warn(message)
    >>> said
    ['a', 'b']
    """
    seen: set[str] = set()
    say = options.warn

    def warn(message: str) -> None:
        if message not in seen:
            seen.add(message)
            say(message)

    return replace(options, warn=warn)


def prepare(study: StudySpec) -> list[Prepared]:
    """Check every run before anything is written; a :class:`ConfigError` names what is wrong."""
    prepared = []
    for run in study.runs():
        # The run operation's checks, model included: an unknown provider or a baseline asked to batch stops
        # the study before any run.
        ready = evaluation.prepare(run.spec.model_copy(update={"out": run.out}))
        prepared.append(
            Prepared(StudyRun(run.index, run.model, run.perturbation, run.out, ready.spec), ready)
        )
    return prepared


def run_study(study: StudySpec, options: StudyOptions | None = None) -> StudyRecord:
    """Run (or resume) every run of ``study``; the final ``study.json``. Failed runs are in its entries."""
    options = once_each(options or StudyOptions())
    prepared = prepare(study)
    samples = select_samples(load_samples(study.base.data), study.base)
    total = sum(len(p.instances) for p in build_plans(samples, study.base))
    with study_lock(study.out):  # a second sweep of the study is refused, its runs left as they are
        earlier = read_record(study.out)  # a damaged study.json is named before anything runs
        return asyncio.run(_run_all(study, prepared, samples, total, options, earlier))


async def _run_all(
    study: StudySpec,
    prepared: Sequence[Prepared],
    samples: Sequence[Sample],
    total: int,
    options: StudyOptions,
    earlier: StudyRecord | None = None,
) -> StudyRecord:
    before = {entry.dir: entry for entry in (earlier.runs if earlier is not None else ())}
    entries = [_entry(study, p.run, before) for p in prepared]
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


def _entry(study: StudySpec, run: StudyRun, before: dict[str, RunEntry]) -> RunEntry:
    """The run's entry at the start of a session: pending, with the time earlier sessions spent."""
    where = str(run.out.relative_to(study.out))
    earlier = before.get(where)
    elapsed = earlier.elapsed_s if earlier is not None else None
    return RunEntry(model=run.model, perturbation=run.perturbation, dir=where, elapsed_s=elapsed)


async def _one(
    item: Prepared, samples: Sequence[Sample], options: StudyOptions, state: _State, progress: StudyProgress
) -> None:
    run, index = item.run, item.run.index
    clock = time.perf_counter()
    progress.tallies[index].status = "running"
    before = state.entries[index]
    try:
        session = evaluation.SessionOptions(quiet=True, cache_path=options.cache_path, warn=options.warn)
        outcome = await evaluation.execute(item.prepared, session, samples=samples)
        counts = RunCounts.of(outcome.counts)
        entry = before.model_copy(
            update={"status": outcome.status, "reason": outcome.reason, "counts": counts}
        )
    except BenchError as exc:
        entry = before.model_copy(update={"status": "failed", "reason": str(exc)})
    # Time and cost add up over the study's sessions (the requests and judge files hold every session's).
    elapsed = (before.elapsed_s or 0.0) + time.perf_counter() - clock
    entry = entry.model_copy(update={"elapsed_s": round(elapsed, 3), "cost_usd": _cost(run)})
    state.entries[index] = entry
    progress.tallies[index].status = entry.status
    state.save()


def _cost(run: StudyRun) -> float | None:
    """What the run spent: its model's requests, and its judges' tokens over every pass, at their prices."""
    prices = spec_prices(run.spec)
    if prices is None or not run.out.is_dir():
        return None
    spent = spent_so_far(read_requests(run.out), prices)
    for name, tally in load_judging(run.out).counts.items():
        judge_prices = spec_prices(run.spec, name)
        if judge_prices is not None:
            spent += judge_prices.cost(tally.usage.prompt_tokens, tally.usage.completion_tokens)
    return round(spent, 6)
