"""Loading the tasks: every module of the ``rescue_bench.tasks`` entry points, the six built-ins included.

A package adds a task by declaring, in its ``pyproject.toml``::

    [project.entry-points."rescue_bench.tasks"]
    xtp = "xtp_plugin.xtp"

The value is a module that follows :class:`rescue_bench.tasks.base.Task` (``INFO`` and the four functions);
the entry point's name must be the task's ``INFO.name``. This project's ``pyproject.toml`` declares its six
tasks the same way. Tasks with a place in the paper's order (``TaskInfo.paper_position``) come first, in that
order; the others follow, sorted by name.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import cast

from rescue_bench.errors import ConfigError
from rescue_bench.tasks.base import Task, check_task

GROUP = "rescue_bench.tasks"


def _load_module(name: str, value: str, where: str) -> Task:
    try:
        module = importlib.import_module(value)
    except ImportError as exc:  # a broken plugin must not hide behind a traceback
        raise ConfigError(f"task {where}: cannot import {value!r} ({exc})") from exc
    task = cast(Task, module)
    check_task(task, where)
    if name != task.INFO.name:
        raise ConfigError(f"task {where}: the module's INFO.name is {task.INFO.name!r}, not {name!r}")
    return task


def _chosen(found: Iterable[EntryPoint], strict: bool) -> dict[str, str]:
    """Module path by task name. A value that is not a module path, or a name registered with two modules,
    is an error (strict), else that name is left out."""
    values: dict[str, set[str]] = {}
    for point in found:
        values.setdefault(point.name, set()).add(point.value)
    chosen: dict[str, str] = {}
    for name, modules in sorted(values.items()):
        where = f"entry point {name} = {sorted(modules)[0]!r} (group {GROUP})"
        problem = None
        if len(modules) > 1:
            problem = f"task {where}: task {name!r} is also registered as {sorted(modules)[1]!r}"
        elif any(":" in value for value in modules):
            problem = f"task {where}: the value must be a module path, not an object reference"
        if problem is None:
            chosen[name] = modules.pop()
        elif strict:
            raise ConfigError(problem)
        else:
            _skip(name, problem)
    return chosen


BROKEN: dict[str, str] = {}
"""Tasks that could not be loaded by the package's own registry, with the reason (asking for one of them by
name gives that reason)."""


def load_tasks(found: Iterable[EntryPoint] | None = None, *, strict: bool = True) -> dict[str, Task]:
    """Every task by name: those with a paper position in that order, then the others sorted by name.

    ``found`` replaces the installed entry points of the group (for tests). With ``strict=False`` (the
    package's own registry) a broken task is left out with a warning and recorded in :data:`BROKEN`, so one
    bad plugin does not stop every command.

    Raises:
        ConfigError: (strict) an entry point cannot be imported, is not a task, names another task, or
            reuses a name.
    """
    points = entry_points(group=GROUP) if found is None else [p for p in found if p.group == GROUP]
    tasks: dict[str, Task] = {}
    for name, value in _chosen(points, strict).items():
        try:
            tasks[name] = _load_module(name, value, f"entry point {name} = {value!r} (group {GROUP})")
        except ConfigError as exc:
            if strict:
                raise
            _skip(name, str(exc))
    return dict(sorted(tasks.items(), key=lambda item: _place(item[1])))


def _place(task: Task) -> tuple[bool, int, str]:
    position = task.INFO.paper_position
    return position is None, position or 0, task.INFO.name


def _skip(name: str, reason: str) -> None:
    BROKEN[name] = reason
    logging.getLogger(__name__).warning("warning: task left out: %s", reason)
