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
from rescue_bench.adapters.plan import TaskArgs
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


def _score_metadata(sample: EvalSample, where: str) -> dict[str, Any]:
    scores = sample.scores or {}
    for score in scores.values():
        if isinstance(score.metadata, dict) and "records" in score.metadata:
            return score.metadata
    raise DataError(f"{where}: sample {sample.id} has no RESCUE-Bench score (was it scored?)")


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
        mine: list[Record] = []
        for sample in log.samples or []:
            meta = _score_metadata(sample, where)
            records = [{**r, "request_key": str(sample.id)} for r in meta["records"]]
            requests.append(_request(task, sample, records))
            mine.extend(records)
            judgments.extend(meta.get("judgments") or [])
        predictions.extend(mine)
        counts[task] = _counts(mine, len(log.samples or []))
        configs[task] = _task_args(log, task)
        judges.update(_graders(log))
    model = models.pop()
    run = _manifest(model, configs, counts, sorted(judges), [where for _, where in logs])
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
