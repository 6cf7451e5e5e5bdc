"""``rescue-bench import inspect LOG... --out RUN``: inspect logs of our tasks as one run directory.

Each sample's score holds the ``predictions.jsonl`` lines of its batch (and the grader's judgment lines), so
the run directory is made of exactly what inspect scored; ``scores.json`` is aggregated as a judge pass does
(with bootstrap CIs), so ``report``, ``compare`` and the viewer read it like any run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, read_eval_log

from rescue_bench import __version__
from rescue_bench.adapters.inspect.tasks import sample_id
from rescue_bench.adapters.plan import TaskArgs, batch_records, plan
from rescue_bench.adapters.rundata import ImportedRun, Record, write_run
from rescue_bench.errors import DataError
from rescue_bench.tasks import TASK_NAMES

PREFIX = "rescue_bench/"


def task_of(log: EvalLog, where: str) -> str:
    """Our task name of a log (``rescue_bench/itp`` or ``itp``); :class:`DataError` for another task."""
    name = log.eval.task.removeprefix(PREFIX)
    if name not in TASK_NAMES:
        raise DataError(f"{where}: task {log.eval.task!r} is not a RESCUE-Bench task")
    return name


def _score_metadata(sample: EvalSample) -> dict[str, Any] | None:
    """Our scorer's metadata of a sample, or ``None`` when the sample was never scored (it errored)."""
    for score in (sample.scores or {}).values():
        if isinstance(score.metadata, dict) and "records" in score.metadata:
            return score.metadata
    return None


def _unscored(log: EvalLog, task: str, scored: set[str], where: str) -> list[tuple[str, list[Record]]]:
    """Failed records for the batches the log holds no score of (an errored or unfinished sample): counted as
    failed requests, never dropped. Planning them needs the task's data, as the run had."""
    ids = [str(i) for i in (log.eval.dataset.sample_ids or [])]
    if ids and all(i in scored for i in ids):
        return []
    the_plan = plan(TaskArgs(**{**_task_args(log, task), "task": task}))
    missing = []
    for index, batch in enumerate(the_plan.batches):
        if sample_id(index) not in scored:
            reason = f"inspect sample {sample_id(index)} has no score in {where}"
            missing.append((sample_id(index), batch_records(the_plan.task, batch, None, error=reason)))
    return missing


def _request(task: str, sample: EvalSample, records: Sequence[Record]) -> Record:
    output = sample.output
    usage = output.usage if output is not None else None
    return {
        "request_key": str(sample.id),
        "cache_key": None,
        "task": task,
        "instance_ids": [r["instance_id"] for r in records],
        "single": len(records) == 1,
        "attempts": 1,
        "latency": sample.total_time or 0.0,
        "usage": {
            "prompt_tokens": usage.input_tokens if usage else 0,
            "completion_tokens": usage.output_tokens if usage else 0,
            "reasoning_tokens": (usage.reasoning_tokens or 0) if usage else 0,
        },
        "error": sample.error.message if sample.error else None,
        "cached": False,
        "masked": 0,
        "refused": False,
        "reply": {
            "text": output.completion if output is not None else "",
            "reasoning": None,
            "finish_reason": output.stop_reason if output is not None else None,
        },
        "time": time.time(),
    }


def _counts(records: Sequence[Record], requests: int) -> dict[str, int]:
    problems = [str(r["problems"][0]) if r["problems"] else "" for r in records]
    valid = sum(bool(r["valid"]) for r in records)
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


def log_records(log: EvalLog, task: str, where: str) -> tuple[list[Record], list[Record], list[Record]]:
    """The request lines, prediction lines (in batch order) and judgment lines of one task's log."""
    requests: list[Record] = []
    predictions: list[Record] = []
    judgments: list[Record] = []
    scored: set[str] = set()
    for sample in log.samples or []:
        meta = _score_metadata(sample)
        if meta is None:
            continue
        scored.add(str(sample.id))
        records = [{**r, "request_key": str(sample.id)} for r in meta["records"]]
        requests.append(_request(task, sample, records))
        predictions.extend(records)
        judgments.extend(meta.get("judgments") or [])
    for key, records in _unscored(log, task, scored, where):
        predictions.extend({**r, "request_key": key} for r in records)
    # Sample ids name the batches in run order (``batch-00001``...); a stable sort keeps each batch's order.
    predictions.sort(key=lambda r: str(r["request_key"]))
    return requests, predictions, judgments


def import_logs(paths: Sequence[Path], out: Path) -> dict[str, Any]:
    """Write the run directory ``out`` from inspect logs of our tasks (one per task); its ``scores.json``."""
    logs = [(read_eval_log(str(p)), str(p)) for p in paths]
    models = {log.eval.model for log, _ in logs}
    if len(models) != 1:
        raise DataError(
            f"the logs are of {len(models)} models ({', '.join(sorted(models))}); import one model"
        )
    requests: list[Record] = []
    predictions: list[Record] = []
    judgments: list[Record] = []
    counts: dict[str, dict[str, int]] = {}
    configs: dict[str, Any] = {}
    judges: set[str] = set()
    for log, where in logs:
        task = task_of(log, where)
        asked, records, judged = log_records(log, task, where)
        requests += asked
        predictions += records
        judgments += judged
        counts[task] = _counts(records, len(asked))
        configs[task] = _task_args(log, task)
        judges.update(_graders(log))
    run = _manifest(models.pop(), configs, counts, sorted(judges), [where for _, where in logs])
    return write_run(out, ImportedRun(run, requests, predictions, judgments))


def _graders(log: EvalLog) -> list[str]:
    bound = (log.eval.model_roles or {}).get("grader")
    configs = bound if isinstance(bound, list) else [] if bound is None else [bound]
    return [str(config.model) for config in configs]


def _task_args(log: EvalLog, task: str) -> dict[str, Any]:
    """The run-spec settings the task was made with (kept in the task's metadata by our ``@task``)."""
    ours = (log.eval.metadata or {}).get("rescue_bench") or {}
    args = ours.get("task_args") if isinstance(ours, dict) else None
    return dict(args) if isinstance(args, dict) else {"task": task}


def _manifest(
    model: str, configs: dict[str, Any], counts: dict[str, Any], judges: list[str], sources: list[str]
) -> dict[str, Any]:
    first = next(iter(configs.values()))
    fields = {k: v for k, v in first.items() if k in TaskArgs.__dataclass_fields__ and k != "task"}
    args = TaskArgs(next(iter(configs)), **fields)
    config = args.config_record(model)
    config["tasks"] = list(configs)
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return {
        "format": 1,
        "status": "finished",
        "config": config,
        "options": {},
        "package_version": __version__,
        "model": {"name": model},
        "judges": judges,
        "counts": counts,
        "timings": {"created": now, "finished": now},
        "stop_reason": None,
        "imported_from": {"harness": "inspect_ai", "logs": sources, "task_args": configs},
    }
