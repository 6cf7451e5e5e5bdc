"""``rescue-bench import inspect LOG... --out RUN``: inspect logs of our tasks as one run directory.

Each sample's score holds the ``predictions.jsonl`` lines of its batch (and the grader's judgment lines), so
the run directory is made of exactly what inspect scored; ``scores.json`` is aggregated as a judge pass does
(with bootstrap CIs), so ``report``, ``compare`` and the viewer read it like any run. Its ``run.json`` is of
the current format (the run spec of the logs' settings, as ``engine.manifest`` writes it); the settings of a
log made before the task options were nested (flat ``rpp_gold_field``...) are read through the tasks'
``Options.V1_KEYS``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, read_eval_log
from pydantic import BaseModel, ConfigDict, ValidationError

from rescue_bench import __version__
from rescue_bench.adapters.inspect.scoring import GRADER_ROLE, SampleRecords, sample_records
from rescue_bench.adapters.inspect.tasks import sample_id
from rescue_bench.adapters.plan import TaskArgs, batch_records, plan, run_spec, task_args
from rescue_bench.adapters.rundata import ImportedRun, write_run
from rescue_bench.engine.manifest import FORMAT, config_record
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.records import Json, Usage
from rescue_bench.rundir import JudgmentLine, PredictionLine, RequestLine
from rescue_bench.rundir.lines import ReplyText
from rescue_bench.tasks import TASK_NAMES

PREFIX = "rescue_bench/"


def task_of(log: EvalLog, where: str) -> str:
    """Our task name of a log (``rescue_bench/itp`` or ``itp``); :class:`DataError` for another task."""
    name = log.eval.task.removeprefix(PREFIX)
    if name not in TASK_NAMES:
        raise DataError(f"{where}: task {log.eval.task!r} is not a RESCUE-Bench task")
    return name


def _score_records(sample: EvalSample, where: str) -> SampleRecords | None:
    """Our scorer's records of a sample, or ``None`` when the sample was never scored (it errored)."""
    for score in (sample.scores or {}).values():
        if isinstance(score.metadata, dict) and "records" in score.metadata:
            try:
                return sample_records(score)
            except ValidationError as exc:
                raise DataError(f"{where}: sample {sample.id}: {_first_error(exc)}") from None
    return None


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    return f"field {'.'.join(str(part) for part in first['loc'])!r}: {first['msg']}"


def _unscored(
    log: EvalLog, task: str, scored: set[str], where: str
) -> list[tuple[str, list[PredictionLine]]]:
    """Failed records for the batches the log holds no score of (an errored or unfinished sample): counted as
    failed requests, never dropped. Planning them needs the task's data, as the run had."""
    ids = [str(i) for i in (log.eval.dataset.sample_ids or [])]
    if ids and all(i in scored for i in ids):
        return []
    the_plan = plan(_task_args(log, task, where))
    missing = []
    for index, batch in enumerate(the_plan.batches):
        if sample_id(index) not in scored:
            reason = f"inspect sample {sample_id(index)} has no score in {where}"
            missing.append((sample_id(index), batch_records(the_plan.task, batch, None, error=reason)))
    return missing


def _request(task: str, sample: EvalSample, records: Sequence[PredictionLine]) -> RequestLine:
    output = sample.output
    usage = output.usage if output is not None else None
    return RequestLine(
        request_key=str(sample.id),
        cache_key=None,
        task=task,
        instance_ids=tuple(r.instance_id for r in records),
        single=len(records) == 1,
        attempts=1,
        latency=sample.total_time or 0.0,
        usage=Usage(
            prompt_tokens=usage.input_tokens if usage else 0,
            completion_tokens=usage.output_tokens if usage else 0,
            reasoning_tokens=(usage.reasoning_tokens or 0) if usage else 0,
        ),
        error=sample.error.message if sample.error else None,
        cached=False,
        masked=False,
        refused=False,
        reply=ReplyText(
            text=output.completion if output is not None else "",
            reasoning=None,
            finish_reason=output.stop_reason if output is not None else None,
        ),
        time=time.time(),
    )


def _counts(records: Sequence[PredictionLine], requests: int) -> dict[str, int]:
    problems = [r.problems[0] if r.problems else "" for r in records]
    valid = sum(r.valid for r in records)
    return {
        "instances": len(records),
        "done": len(records),
        "valid": valid,
        "invalid": len(records) - valid,
        "request_failures": sum(p.startswith("request_failed") for p in problems),
        "parse_failures": sum(p.startswith(("parse_failure", "missing", "request_failed")) for p in problems),
        "invalid_labels": sum(p.startswith("invalid_label") for p in problems),
        "requests": requests,
    }


def log_records(
    log: EvalLog, task: str, where: str
) -> tuple[list[RequestLine], list[PredictionLine], list[JudgmentLine]]:
    """The request lines, prediction lines (in batch order) and judgment lines of one task's log."""
    requests: list[RequestLine] = []
    predictions: list[PredictionLine] = []
    judgments: list[JudgmentLine] = []
    scored: set[str] = set()
    for sample in log.samples or []:
        found = _score_records(sample, where)
        if found is None:
            continue
        scored.add(str(sample.id))
        records = [r.model_copy(update={"request_key": str(sample.id)}) for r in found.predictions]
        requests.append(_request(task, sample, records))
        predictions.extend(records)
        judgments.extend(found.judgments)
    for key, records in _unscored(log, task, scored, where):
        predictions.extend(r.model_copy(update={"request_key": key}) for r in records)
    # Sample ids name the batches in run order (``batch-00001``...); a stable sort keeps each batch's order.
    predictions.sort(key=lambda r: str(r.request_key))
    return requests, predictions, judgments


def import_logs(paths: Sequence[Path], out: Path) -> dict[str, Any]:
    """Write the run directory ``out`` from inspect logs of our tasks (one per task); its ``scores.json``."""
    logs = [(read_eval_log(str(p)), str(p)) for p in paths]
    models = {log.eval.model for log, _ in logs}
    if len(models) != 1:
        raise DataError(
            f"the logs are of {len(models)} models ({', '.join(sorted(models))}); import one model"
        )
    requests: list[RequestLine] = []
    predictions: list[PredictionLine] = []
    judgments: list[JudgmentLine] = []
    counts: dict[str, dict[str, int]] = {}
    args: dict[str, TaskArgs] = {}
    recorded: dict[str, Json] = {}
    judges: set[str] = set()
    for log, where in logs:
        task = task_of(log, where)
        asked, records, judged = log_records(log, task, where)
        requests += asked
        predictions += records
        judgments += judged
        counts[task] = _counts(records, len(asked))
        args[task] = _task_args(log, task, where)
        recorded[task] = _ours(log, where).task_args
        judges.update(_graders(log))
    model = {"name": models.pop(), **_generation(logs)}
    sources = {"harness": "inspect_ai", "logs": [where for _, where in logs], "task_args": recorded}
    run = _manifest(model, list(args.values()), counts, sorted(judges), sources)
    return write_run(out, ImportedRun(run, requests, predictions, judgments))


def _graders(log: EvalLog) -> list[str]:
    bound = [config for role, config in (log.eval.model_roles or {}).items() if role == GRADER_ROLE]
    configs = [c for given in bound for c in (given if isinstance(given, list) else [given])]
    return [str(config.model) for config in configs]


class _OurMetadata(BaseModel):
    """What our ``@task`` keeps in an inspect task's metadata under ``rescue_bench``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_args: dict[str, Json] | None = None
    temperature: float = 0.0
    seed: int | None = None


class _LogMetadata(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)  # inspect and other packages add their own keys

    rescue_bench: _OurMetadata = _OurMetadata()


def _ours(log: EvalLog, where: str) -> _OurMetadata:
    try:
        return _LogMetadata.model_validate(log.eval.metadata or {}).rescue_bench
    except ValidationError as exc:
        raise DataError(f"{where}: task metadata: {_first_error(exc)}") from None


def _task_args(log: EvalLog, task: str, where: str) -> TaskArgs:
    """The run-spec settings the task was made with (kept in the task's metadata by our inspect task)."""
    recorded = _ours(log, where).task_args
    try:
        return task_args(recorded or {}, task)
    except ConfigError as exc:
        raise DataError(f"{where}: the task's settings: {exc}") from None


def _generation(logs: Sequence[tuple[EvalLog, str]]) -> dict[str, Json]:
    """The candidate's temperature and seed (as our inspect task was given them); one run's logs agree."""
    given = {(_ours(log, where).temperature, _ours(log, where).seed) for log, where in logs}
    if len(given) != 1:
        raise DataError(f"the logs were made with {len(given)} temperature/seed settings; import one run")
    temperature, seed = given.pop()
    return {"temperature": temperature, "seed": seed}


def _manifest(
    model: dict[str, Json],
    args: Sequence[TaskArgs],
    counts: dict[str, Any],
    judges: list[str],
    sources: dict[str, Json],
) -> dict[str, Any]:
    """``run.json`` (the current format) of an imported run: the spec of the logs' settings."""
    try:
        spec = run_spec(args, model, judges)
    except ConfigError as exc:
        raise DataError(f"the logs' settings: {exc}") from None
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return {
        "format": FORMAT,
        "status": "finished",
        "config": config_record(spec),
        "spec": spec.model_dump(mode="json"),
        "options": {},
        "package_version": __version__,
        "selection": {"data": spec.data, "sample_ids": None},
        "model": {"name": model["name"]},
        "judges": judges,
        "counts": counts,
        "timings": {"created": now, "finished": now},
        "stop_reason": None,
        "imported_from": sources,
    }
