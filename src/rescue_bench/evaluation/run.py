"""The one run operation: ``rescue_bench.run``, ``rescue-bench run`` and every run of ``sweep`` use it.

:func:`prepare` checks everything that can be checked before anything is written (tasks, video settings,
judges and their keys, the budget and its prices); :func:`execute` then locks the run directory for the whole
operation, runs the engine's session (:func:`rescue_bench.engine.run.execute_run`), and when every instance
has an answer the judge pass (LLM judges, BERTScore), and writes the run's final status to ``run.json``. The
same
spec gives the same run directory whichever door it came through, and the same errors.

Statuses (:mod:`rescue_bench.rundir.status`): a judge pass whose verdicts got no answer leaves the run
``incomplete`` like the engine's instances do; the budget stopping the judges leaves it ``stopped``. A plain
re-run asks whatever is missing.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from rescue_bench.batch.asker import BatchApi
from rescue_bench.batch.plan import BatchOptions
from rescue_bench.data.schema import Sample
from rescue_bench.engine.asking import LIVE, Asker
from rescue_bench.engine.ending import Ending, counted_status, degraded_reason, summarise
from rescue_bench.engine.plans import check_tasks
from rescue_bench.engine.run import RunOptions, execute_run
from rescue_bench.errors import ProviderError
from rescue_bench.evaluation.setup import (
    judge_budgets,
    judge_settings,
    run_budget,
    with_judges,
)
from rescue_bench.judge.after_run import JudgeSettings, score_after_run, score_run
from rescue_bench.judge.runner import JudgeRunResult, JudgeStopped
from rescue_bench.models.registry import is_billed
from rescue_bench.pricing import Budget
from rescue_bench.records import Json
from rescue_bench.redaction import credential_keys
from rescue_bench.rundir import SCORES_FILE, Counts, Manifest, RunStore, Scores, read_json_object, run_lock
from rescue_bench.rundir.status import (
    DEGRADED_SHARE,
    RunStatus,
    check_scorable,
    engine_unfinished,
    is_final,
    judge_degraded,
)
from rescue_bench.spec import RunSpec, default_out
from rescue_bench.video.mode import check_video_config, make_hook

__all__ = [
    "Prepared",
    "RunOutcome",
    "SessionOptions",
    "execute",
    "judge_again",
    "prepare",
    "run",
    "with_out",
]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A run spec checked and ready: judges' endpoints resolved, its directory named, its judge pass set."""

    spec: RunSpec
    judging: JudgeSettings
    asker: Asker | None = None
    """How the run's requests are answered; ``None``: the spec's way (live, or the Batch API with
    ``--batch``)."""

    @property
    def out(self) -> Path:
        assert self.spec.out is not None  # prepare() names it
        return self.spec.out


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """How a session shows itself and where it keeps its cache; nothing here changes what is asked."""

    quiet: bool = True
    cache_path: Path | None = None
    batch: BatchOptions = BatchOptions()  # noqa: RUF009 - frozen, so one shared default is safe
    """With ``spec.batch``: how the Batch API is polled (``--batch-poll``)."""
    warn: Callable[[str], None] = lambda _: None
    note: Callable[[str], None] = lambda _: None
    """What the run is doing that needs no attention (the judge pass starting), unlike ``warn``."""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run operation ended: the directory, the status and why, the counts, and ``scores.json`` typed."""

    out: Path
    status: RunStatus
    scores: Scores | None
    """``scores.json`` when the status is final (``finished`` or ``degraded``), else ``None``."""
    counts: dict[str, Counts]
    """``run.json``'s per-task counts (instances, valid, invalid, request_failures, tokens...)."""
    reason: str | None = None
    """Why the run is not finished (budget, no answer), else ``None``."""
    ending: Ending | None = None
    """The engine's reasons: instances without an answer per task, the main reason answers failed."""
    judged: JudgeRunResult | None = None
    """What the judge pass did, when there was one."""

    @property
    def unanswered(self) -> dict[str, Counter[str]]:
        """Task -> reason -> instances (or, under ``<task> judge``, verdicts) that got no answer."""
        out = dict(self.ending.unanswered) if self.ending is not None else {}
        if self.judged is not None:
            for name, tally in self.judged.tallies.items():
                if tally.unanswered:
                    out[f"judge {name}"] = Counter(tally.unanswered_reasons)
        return out


def with_out(spec: RunSpec) -> RunSpec:
    """The spec with its run directory (``runs/<model>_<data>...`` when none is given)."""
    return spec if spec.out is not None else spec.model_copy(update={"out": default_out(spec)})


def prepare(spec: RunSpec, asker: Asker | None = None) -> Prepared:
    """Check ``spec`` before anything is written; a :class:`~rescue_bench.errors.ConfigError` says what is
    wrong.

    Resolves the judges' endpoints, builds each judge's provider (a missing key stops here), checks the
    tasks, video settings, the budget and its prices, and whether BERTScore can run when asked for.
    """
    spec = with_judges(with_out(spec))
    assert spec.out is not None
    # An unknown provider, a missing key, a baseline asked to batch: the provider is dropped unused (building
    # one opens no connection and loads no model), so a study stops before any of its models is asked.
    way = asker or asker_of(spec)
    way.check(spec, way.model(spec))
    check_tasks(spec)
    check_video_config(spec)
    run_budget(spec, spec.out)  # a budget without prices is named now
    return Prepared(spec, judge_settings(spec, None, spec.out), asker)


def asker_of(spec: RunSpec, batch: BatchOptions | None = None) -> Asker:
    """How the session asks the spec's requests: through the provider's Batch API when the spec asks for
    ``--batch`` (refused by :meth:`BatchApi.check` for a provider that declares none), else live."""
    return BatchApi(batch or BatchOptions()) if spec.batch else LIVE


async def execute(
    prepared: Prepared, options: SessionOptions | None = None, *, samples: Sequence[Sample] | None = None
) -> RunOutcome:
    """Run (or resume) a prepared spec: the engine's session, then the judge pass, then the final status.

    Raises:
        ConfigError: the directory holds a run of another configuration, or is in use.
        ProviderError: the endpoint refused in a way no request can avoid (the run is left resumable).
    """
    options = options or SessionOptions()
    spec, out = prepared.spec, prepared.out
    for key in credential_keys(spec.generation().extra_body):  # sent, and written to no file
        options.warn(
            f"extra_body key {key!r} looks like a credential: its value is sent, and written as "
            "[redacted] in run.json, reports and exports; prefer --api-key-env"
        )
    budget = run_budget(spec, out)
    # A model whose provider declares no bill (baseline, local, replay) leaves the budget to the judges.
    paid = budget if is_billed(spec.model.name) else None
    # The lock spans the engine's session, the judge pass and the final status (re-entrant: the judge pass
    # takes it again); the store handed to the engine writes under it.
    store = RunStore(out)
    with run_lock(out, create=True):
        asker, hook = prepared.asker or asker_of(spec, options.batch), make_hook(spec)
        run_options = RunOptions(options.quiet, paid, options.cache_path, asker=asker, hook=hook, store=store)
        result = await execute_run(spec, out, run_options, samples=samples)
        judged: JudgeRunResult | None = None
        status = result.status
        reason = result.stop_reason or (degraded_reason(result.ending) if result.ending else None)
        if is_final(status):
            try:
                judged, ended = await _judge(prepared, budget, options)
            except ProviderError as exc:
                # The judge's endpoint refused (a bad key): its columns are unfinished, never a finished run.
                _set_status(store, "incomplete", f"judge pass: {exc}")
                raise
            if ended is not None:
                status, reason = ended
                _set_status(store, status, reason)
        return RunOutcome(out, status, _scores(out, status), result.counts, reason, result.ending, judged)


async def _judge(
    prepared: Prepared, budget: Budget | None, options: SessionOptions
) -> tuple[JudgeRunResult | None, tuple[RunStatus, str] | None]:
    """The judge pass of a run whose every instance has an answer; the status and reason it leaves the run
    in when they are not the engine's (a budget stop, verdicts without an answer)."""
    spec, out = prepared.spec, prepared.out
    judging = replace(prepared.judging, budgets=judge_budgets(spec, budget, out))
    if judging.judges and not options.quiet:
        options.note(f"judging ER/VP with {', '.join(j.name for j in judging.judges)}")
    try:
        judged = await score_after_run(out, spec.tasks, judging, options.warn, quiet=options.quiet)
    except JudgeStopped as exc:
        return None, ("stopped", str(exc))
    if judged is not None and judged.status == "incomplete":
        return judged, ("incomplete", _judge_reason(judged))
    if judged is not None and (why := judge_degraded(_verdicts(judged), spec.degraded_share)):
        return judged, ("degraded", why)
    return judged, None


def _verdicts(judged: JudgeRunResult) -> list[tuple[str, int, int]]:
    """(judge, valid, unscored) of a pass, for the judges' degraded rule (:func:`judge_degraded`)."""
    return [(name, tally.valid, tally.unscored) for name, tally in judged.tallies.items()]


def _judge_reason(judged: JudgeRunResult) -> str:
    reasons: Counter[str] = Counter()
    for tally in judged.tallies.values():
        reasons.update(tally.unanswered_reasons)
    return f"{judged.unanswered()} judge verdicts got no answer ({summarise(reasons, 1)})"


def _set_status(store: RunStore, status: RunStatus, reason: str | None) -> None:
    """``run.json`` with the operation's final status (the judge pass can leave a run unfinished)."""
    before = _manifest(store)
    if before is not None:
        store.write_manifest(before.with_status(status, reason).to_json())


def _scores(out: Path, status: RunStatus) -> Scores | None:
    path = out / SCORES_FILE
    found = read_json_object(path) if is_final(status) else None
    return None if found is None else Scores.of(found, str(path))


async def judge_again(
    run_dir: Path, judging: JudgeSettings, warn: Callable[[str], None], *, quiet: bool = True
) -> JudgeRunResult:
    """``rescue-bench score``: judge a run directory's existing predictions, under the run's lock, and set its
    status as a run's judge pass does (judge verdicts without an answer leave it ``incomplete``).

    Raises:
        ConfigError: the directory is in use, a judge is not a chat model, or there is nothing to judge.
    """
    store = RunStore(run_dir)
    with run_lock(run_dir):
        check_scorable(run_dir, _manifest(store))  # unanswered work never becomes scores (exit 4)
        judged = await score_run(run_dir, judging, warn, quiet=quiet)
        manifest = _manifest(store)
        if manifest is not None:
            _after_judging(store, manifest, judged)
        return judged


def _manifest(store: RunStore) -> Manifest | None:
    found = store.manifest()
    return None if found is None else Manifest.from_json(found, str(store.run_file))


def _after_judging(store: RunStore, before: Manifest, judged: JudgeRunResult) -> None:
    """``run.json``'s status after a ``score`` pass: a run whose every instance has an answer is finished
    (or degraded) by its counts, unless judge verdicts got no answer."""
    if engine_unfinished(before.status, before.counts):
        return  # the engine's own work is unfinished: that status stands
    status, reason = counted_status(before.counts, _degraded_share(before.spec)), None
    if status == "finished" and (why := judge_degraded(_verdicts(judged), _degraded_share(before.spec))):
        status, reason = "degraded", why
    if judged.status == "incomplete":
        status, reason = "incomplete", _judge_reason(judged)
    if status != before.status:
        _set_status(store, status, reason)


def _degraded_share(spec: dict[str, Json] | None) -> float:
    """The run's ``degraded_share`` as recorded (the default for a spec this version cannot read)."""
    try:
        return RunSpec.model_validate(spec).degraded_share if spec else DEGRADED_SHARE
    except ValidationError:
        return DEGRADED_SHARE


def run(spec: RunSpec, out: str | Path | None = None, *, quiet: bool = True) -> RunOutcome:
    """Run (or resume) ``spec`` into ``out`` (else ``spec.out``, else ``runs/<model>_<data>...``): the same
    checks, engine, judge pass and statuses as ``rescue-bench run --spec``.

    >>> outcome = run(RunSpec(model="baseline/random", tasks=["itp"]), out="runs/x")  # doctest: +SKIP
    >>> outcome.counts["itp"].valid, outcome.scores.entry("itp").metric("f1")  # doctest: +SKIP
    """
    if out is not None:
        spec = spec.model_copy(update={"out": Path(out)})
    prepared = prepare(spec)
    return asyncio.run(execute(prepared, SessionOptions(quiet=quiet)))
