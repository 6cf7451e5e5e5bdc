"""What the ``tasks`` commands show: instance counts in the paper's Table 6 layout, and exportable requests.

>>> from rescue_bench.data.load import load_samples
>>> counts = instance_counts(load_samples("demo"), TaskConfig())
>>> sorted(counts) == sorted(TASK_NAMES), sorted(counts["itp"])
(True, ['all', 'couple', 'family'])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError
from rescue_bench.records import Instance, Json, Request
from rescue_bench.tasks import TASK_NAMES, TASKS, Task
from rescue_bench.tasks.base import TaskConfig

RULES: dict[str, str] = {
    "itp": "Balanced decision points after non-therapist rows (next turn therapist: yes)",
    "rpp": "Rows of any speaker with a non-empty, in-taxonomy relation-pattern label",
    "stp": "Therapist rows with a support strategy and a resolvable target",
    "ssp": "Therapist rows with an in-taxonomy strategy and a resolvable target",
    "er": "Client rows with a speaker-matched emotion (after 30%, <= 5 per sample)",
    "vp": "Client rows with the speaker's own viewpoint (<= 5 per sample)",
}
Counts = dict[str, dict[str, dict[str, int]]]
"""``{task: {"couple"|"family"|"all": {"instances": n, "samples": m}}}``."""


def instance_counts(samples: Sequence[Sample], cfg: TaskConfig) -> Counts:
    """Instances and contributing samples per task and scenario (``all`` pools both)."""
    out: Counts = {}
    for name in TASK_NAMES:
        scopes = {scope: {"instances": 0, "samples": 0} for scope in ("couple", "family", "all")}
        for sample in samples:
            count = len(TASKS[name].build(sample, cfg))
            if count:
                for scope in (sample.scenario, "all"):
                    scopes[scope]["instances"] += count
                    scopes[scope]["samples"] += 1
        out[name] = scopes
    return out


def request_json(request: Request) -> dict[str, Json]:
    """A request as plain JSON (what ``tasks show --json`` prints)."""
    return {
        "task": request.task,
        "instance_ids": list(request.instance_ids),
        "prompt_hash": request.prompt_hash,
        "max_tokens": request.max_tokens,
        "messages": list(request.messages),
        "response_schema": request.response_schema,
    }


def export_records(task: Task, samples: Sequence[Sample], cfg: TaskConfig) -> Iterator[dict[str, Json]]:
    """One record per instance: the instance fields plus the exact messages of its one-instance request."""
    for sample in samples:
        for inst in task.build(sample, cfg):
            request = task.render([inst], cfg)
            yield {
                **inst.to_json(),
                "mode": cfg.mode,
                "context_size": None if inst.context is None else inst.context.size,
                "prompt_hash": request.prompt_hash,
                "messages": list(request.messages),
                "response_schema": request.response_schema,
            }


def parse_row_ref(text: str) -> tuple[str, int]:
    """``SAMPLE:ROW`` (the sample id may itself hold colons) as ``(sample_id, row)``.

    >>> parse_row_ref("family_therapy/003/merged:12")
    ('family_therapy/003/merged', 12)
    """
    sample_id, sep, row = text.rpartition(":")
    if not sep or not sample_id or not row.strip().isdigit():
        raise ConfigError(f"--row {text!r} is not of the form SAMPLE:ROW (for example demo_couple/x_s01:12)")
    return sample_id, int(row)


def find_instance(
    task: Task, samples: Sequence[Sample], sample_id: str, row: int, cfg: TaskConfig
) -> Instance:
    """The ``task`` instance of ``sample_id`` at ``row``; else :class:`ConfigError` naming the valid rows."""
    sample = next((s for s in samples if s.sample_id == sample_id), None)
    if sample is None:
        known = ", ".join(s.sample_id for s in samples[:5]) + (", ..." if len(samples) > 5 else "")
        raise ConfigError(f"no sample {sample_id!r} in the source (samples: {known})")
    instances = task.build(sample, cfg)
    for inst in instances:
        if inst.row_index == row:
            return inst
    rows = ", ".join(str(i.row_index) for i in instances) or "none"
    raise ConfigError(
        f"sample {sample_id!r} has no {task.INFO.name} instance at row {row} (rows with one: {rows})"
    )
