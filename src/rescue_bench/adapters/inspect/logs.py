"""``rescue-bench import inspect LOG... --out RUN``: inspect logs of our tasks as one run directory.

Each sample's score holds the ``predictions.jsonl`` lines of its batch (and the grader's judgment lines), so
the run directory is made of exactly what inspect scored; ``scores.json`` is aggregated as a judge pass does
(with bootstrap CIs), so ``report``, ``compare`` and the viewer read it like any run. Its ``run.json`` is of
the current format (the run spec of the logs' settings, as ``spec.record`` writes it).
"""

from __future__ import annotations

import stat
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from inspect_ai.log import EvalLog, EvalSample, read_eval_log
from pydantic import BaseModel, ConfigDict, ValidationError

from rescue_bench import __version__
from rescue_bench.adapters.inspect.scoring import GRADER_ROLE, SampleRecords, sample_records
from rescue_bench.adapters.inspect.tasks import sample_id
from rescue_bench.adapters.plan import Plan, TaskArgs, batch_records, plan, run_spec, task_args
from rescue_bench.adapters.rundata import ImportedRun, write_run
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.records import Instance, Json, Usage
from rescue_bench.rundir import JudgmentLine, PredictionLine, RequestLine
from rescue_bench.rundir.lines import ReplyText
from rescue_bench.rundir.manifest import FORMAT
from rescue_bench.spec.record import config_record
from rescue_bench.tasks import TASK_NAMES

PREFIX = "rescue_bench/"
MAX_LOG_BYTES: Final = 2**30
"""The most an inspect log may hold, unpacked (1 GiB): a paper-size log of one task is far smaller, and a
zip bomb is refused before it is read."""


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
    log: EvalLog, the_plan: Plan, scored: set[str], where: str
) -> list[tuple[str, list[PredictionLine]]]:
    """Failed records for the batches the log holds no score of (an errored or unfinished sample): counted as
    failed requests, never dropped."""
    ids = [str(i) for i in (log.eval.dataset.sample_ids or [])]
    if ids and all(i in scored for i in ids):
        return []
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
    log: EvalLog, task: str, where: str, the_plan: Plan | None = None
) -> tuple[list[RequestLine], list[PredictionLine], list[JudgmentLine]]:
    """The request lines, prediction lines (in batch order) and judgment lines of one task's log.

    A sample's prediction lines are made again from its completion by the task's own parser and scorer, as
    the run makes them: a log's score records are never taken as given (a log is a file anyone can write).
    Its judge verdicts are kept for the instances of its own batch only.
    """
    the_plan = the_plan or plan(_task_args(log, task, where))
    batches = {sample_id(index): batch for index, batch in enumerate(the_plan.batches)}
    requests: list[RequestLine] = []
    predictions: list[PredictionLine] = []
    judgments: list[JudgmentLine] = []
    scored: set[str] = set()
    for sample in log.samples or []:
        found = _score_records(sample, where)
        if found is None:
            continue
        key = str(sample.id)
        batch = batches.get(key)
        if batch is None or key in scored:
            what = "a second time" if key in scored else "but the task's plan has no such batch"
            raise DataError(f"{where}: sample {key!r} is scored {what}; was the log made from other data?")
        scored.add(key)
        records = [r.model_copy(update={"request_key": key}) for r in _rescored(the_plan, batch, sample)]
        requests.append(_request(task, sample, records))
        predictions.extend(records)
        ours = {inst.id for inst in batch}
        judgments.extend(j for j in found.judgments if j.instance_id in ours)
    for key, records in _unscored(log, the_plan, scored, where):
        predictions.extend(r.model_copy(update={"request_key": key}) for r in records)
    # Sample ids name the batches in run order (``batch-00001``...); a stable sort keeps each batch's order.
    predictions.sort(key=lambda r: str(r.request_key))
    return requests, predictions, judgments


def _rescored(the_plan: Plan, batch: Sequence[Instance], sample: EvalSample) -> list[PredictionLine]:
    """The prediction lines of ``batch`` made from the sample's completion, as our scorer makes them."""
    output = sample.output
    text = output.completion if output is not None and output.choices else None
    error = output.error if output is not None else None
    if sample.error is not None:
        error = error or sample.error.message
    truncated = output is not None and output.stop_reason == "max_tokens"
    return batch_records(the_plan.task, batch, text, error=error, truncated=truncated)


def read_log(path: Path) -> EvalLog:
    """An inspect log, or a one-line :class:`DataError`: a path that is not a regular file (a directory, a
    FIFO that would block), a file or archive over :data:`MAX_LOG_BYTES` (a zip bomb), or one inspect cannot
    read (truncated, not a zip, a bad header)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise DataError(f"{path}: {kind}; give inspect log files (.eval or .json)")
    size = info.st_size
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                size = sum(member.file_size for member in archive.infolist())
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise DataError(f"{path}: not a readable inspect log ({exc.__class__.__name__})") from None
    if size > MAX_LOG_BYTES:
        raise DataError(
            f"{path}: holds {size:,} bytes (unpacked), over the {MAX_LOG_BYTES:,} an inspect log of this "
            "benchmark needs; not read"
        )
    try:
        return read_eval_log(str(path))
    except Exception as exc:  # whatever inspect's reader raises on a damaged file, said in one line
        raise DataError(f"{path}: not a readable inspect log ({exc.__class__.__name__})") from None


def import_logs(paths: Sequence[Path], out: Path) -> dict[str, Any]:
    """Write the run directory ``out`` from inspect logs of our tasks (one per task); its ``scores.json``.

    Raises:
        DataError: a log given twice (by the same or another path), or two logs of one task, or of two models.
    """
    resolved = [path.resolve() for path in paths]
    for number, path in enumerate(paths):
        if resolved[number] in resolved[:number]:
            earlier = paths[resolved.index(resolved[number])]
            raise DataError(f"{path}: given twice (as {earlier}); import each log once")
    logs = [(read_log(p), str(p)) for p in paths]
    first: dict[str, str] = {}
    for log, where in logs:
        task = task_of(log, where)
        if first.setdefault(task, where) != where:
            raise DataError(
                f"{where}: a second log of task {task!r} (the first: {first[task]}); import one log per task"
            )
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
    subsets: dict[str, Subset] = {}
    for log, where in logs:
        task = task_of(log, where)
        args[task] = _task_args(log, task, where)
        the_plan = plan(args[task])
        asked, records, judged = log_records(log, task, where, the_plan)
        requests += asked
        predictions += records
        judgments += judged
        counts[task] = _counts(records, len(asked))
        subset = _subset(log)
        if subset is not None:  # the instances inspect never asked are planned, not done: the run is partial
            counts[task]["instances"] = sum(len(batch) for batch in the_plan.batches)
            subsets[task] = subset
        recorded[task] = _ours(log, where).task_args
        judges.update(_graders(log))
    model = {"name": models.pop(), **_generation(logs)}
    sources = {"harness": "inspect_ai", "logs": [where for _, where in logs], "task_args": recorded}
    run = _manifest(model, list(args.values()), counts, sorted(judges), sources)
    if subsets:
        shown = ", ".join(f"{task} {s.asked} of {s.samples}" for task, s in subsets.items())
        sources["subset"] = {task: s.to_json() for task, s in subsets.items()}
        run.update(status="incomplete", stop_reason=f"a subset: inspect asked {shown} samples (--limit)")
    return write_run(out, ImportedRun(run, requests, predictions, judgments))


@dataclass(frozen=True, slots=True)
class Subset:
    """Part of a task's inspect samples (request batches) was run (``--limit``, ``--sample-id``)."""

    asked: int
    samples: int
    limit: int | None

    def to_json(self) -> dict[str, Json]:
        return {"asked": self.asked, "samples": self.samples, "limit": self.limit}


def _subset(log: EvalLog) -> Subset | None:
    """What part of the task's samples inspect ran, when it ran only a part."""
    dataset = log.eval.dataset
    asked = len(dataset.sample_ids) if dataset.sample_ids is not None else dataset.samples
    if asked is None or dataset.samples is None or asked >= dataset.samples:
        return None
    limit = log.eval.config.limit
    return Subset(asked, dataset.samples, limit if isinstance(limit, int) else None)


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
