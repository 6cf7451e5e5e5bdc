"""The six RESCUE-Bench tasks, registered in a plain dict, and helpers to build and batch their instances.

>>> sorted(TASKS)
['er', 'itp', 'rpp', 'ssp', 'stp', 'vp']
>>> get_task("itp").DEFAULT_BATCH_SIZE
4
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError
from rescue_bench.records import Instance
from rescue_bench.tasks import er, itp, rpp, ssp, stp, vp
from rescue_bench.tasks.base import Task, TaskConfig

TASKS: dict[str, Task] = {
    "itp": cast(Task, itp),
    "rpp": cast(Task, rpp),
    "stp": cast(Task, stp),
    "ssp": cast(Task, ssp),
    "er": cast(Task, er),
    "vp": cast(Task, vp),
}
TASK_NAMES: tuple[str, ...] = ("itp", "rpp", "stp", "ssp", "er", "vp")
"""In the paper's table order."""


def get_task(name: str) -> Task:
    """The task module called ``name`` (case-insensitive); :class:`ConfigError` for an unknown name."""
    task = TASKS.get(name.strip().lower())
    if task is None:
        raise ConfigError(f"unknown task {name!r}; choose one of {', '.join(TASK_NAMES)}")
    return task


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


def batch_size(task: Task, cfg: TaskConfig) -> int:
    """The configured batch size, or the task's default."""
    return task.DEFAULT_BATCH_SIZE if cfg.batch_size is None else cfg.batch_size


__all__ = [
    "TASKS",
    "TASK_NAMES",
    "Task",
    "TaskConfig",
    "batch_size",
    "build_instances",
    "get_task",
    "make_batches",
]
