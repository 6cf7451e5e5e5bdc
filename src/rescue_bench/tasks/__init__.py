"""The task registry (the six RESCUE-Bench tasks and any from the ``rescue_bench.tasks`` entry points), the
task lists derived from it, and helpers to build and batch instances.

Every list of tasks elsewhere (report columns, judged tasks, comparisons) comes from here, so a new task is
one module plus one entry point (:mod:`rescue_bench.tasks.registry`).

>>> TASK_NAMES[:6]
('itp', 'rpp', 'stp', 'ssp', 'er', 'vp')
>>> get_task("itp").INFO.default_batch_size
4
>>> judged_tasks()[:2], headline("stp")
(('er', 'vp'), ('recall_at_1', 'mrr', 'recall_at_2', 'recall_at_3'))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError
from rescue_bench.metrics.spec import MetricSpec
from rescue_bench.records import Instance, TaskKind
from rescue_bench.tasks.base import PaperColumn, Task, TaskConfig, TaskInfo
from rescue_bench.tasks.registry import BROKEN, load_tasks

TASKS: dict[str, Task] = load_tasks(strict=False)
"""Every task by name: the built-ins in the paper's table order, then outside tasks sorted by name."""
TASK_NAMES: tuple[str, ...] = tuple(TASKS)
"""In :data:`TASKS` order."""


def get_task(name: str) -> Task:
    """The task module called ``name`` (case-insensitive); :class:`ConfigError` for an unknown name."""
    task = TASKS.get(name.strip().lower())
    if task is None and name.strip().lower() in BROKEN:
        raise ConfigError(BROKEN[name.strip().lower()])
    if task is None:
        raise ConfigError(f"unknown task {name!r}; choose one of {', '.join(TASK_NAMES)}")
    return task


def task_info(name: str) -> TaskInfo:
    """The :class:`TaskInfo` of the task called ``name``; :class:`ConfigError` for an unknown name."""
    return get_task(name).INFO


def task_infos() -> tuple[TaskInfo, ...]:
    """Every task's :class:`TaskInfo`, in :data:`TASKS` order."""
    return tuple(task.INFO for task in TASKS.values())


def judged_tasks() -> tuple[str, ...]:
    """Tasks an LLM judge scores after the run (ER, VP)."""
    return tuple(info.name for info in task_infos() if info.judged)


def percent_tasks() -> tuple[str, ...]:
    """Tasks whose metrics are shown as percentages."""
    return tuple(info.name for info in task_infos() if info.percent)


def mcnemar_tasks() -> tuple[str, ...]:
    """Tasks with top-1 correctness, which ``compare`` tests with McNemar's test."""
    return tuple(info.name for info in task_infos() if info.mcnemar)


def video_tasks() -> tuple[str, ...]:
    """Tasks whose requests take per-turn clips in video mode."""
    return tuple(info.name for info in task_infos() if info.video)


def tasks_of_kind(kind: TaskKind) -> tuple[str, ...]:
    """Tasks of one kind (binary, multiclass, ranking or generation)."""
    return tuple(info.name for info in task_infos() if info.kind == kind)


def headline(name: str) -> tuple[str, ...]:
    """The headline metrics of a task (each with a CI in ``scores.json``)."""
    return task_info(name).headline


def paper_metrics(name: str) -> tuple[str, ...]:
    """The metrics of a task's paper columns."""
    return tuple(column.metric for column in task_info(name).paper_columns)


def paper_columns() -> tuple[tuple[str, PaperColumn], ...]:
    """(task, column) of the results table (paper Table 5), in task order then the task's column order."""
    return tuple((info.name, column) for info in task_infos() for column in info.paper_columns)


def metric_specs() -> dict[str, MetricSpec]:
    """Each task's :class:`MetricSpec`, for :mod:`rescue_bench.metrics` (which cannot import the tasks)."""
    return {info.name: info.metrics for info in task_infos()}


def build_instances(task: Task, samples: Iterable[Sample], cfg: TaskConfig) -> list[Instance]:
    """All instances of ``task`` over ``samples``, in sample order."""
    return [inst for sample in samples for inst in task.build(sample, cfg)]


def make_batches(instances: Sequence[Instance], size: int) -> list[list[Instance]]:
    """Consecutive batches of at most ``size`` instances that never cross a sample boundary.

    >>> from rescue_bench.records import Instance
    >>> items = [Instance(f"{s}::itp::{r}", "itp", s, "couple", r, "no") for s, r in
    ...          [("a", 1), ("a", 2), ("a", 3), ("b", 1)]]
    >>> [[i.id for i in b] for b in make_batches(items, 2)]
    [['a::itp::1', 'a::itp::2'], ['a::itp::3'], ['b::itp::1']]
    """
    if size < 1:
        raise ConfigError(f"batch size must be at least 1 (got {size})")
    batches: list[list[Instance]] = []
    for inst in instances:
        if batches and batches[-1][0].sample_id == inst.sample_id and len(batches[-1]) < size:
            batches[-1].append(inst)
        else:
            batches.append([inst])
    return batches


__all__ = [
    "TASKS",
    "TASK_NAMES",
    "PaperColumn",
    "Task",
    "TaskConfig",
    "TaskInfo",
    "build_instances",
    "get_task",
    "headline",
    "judged_tasks",
    "make_batches",
    "mcnemar_tasks",
    "metric_specs",
    "paper_columns",
    "paper_metrics",
    "percent_tasks",
    "task_info",
    "task_infos",
    "tasks_of_kind",
    "video_tasks",
]
