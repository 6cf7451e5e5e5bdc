"""Loading the tasks: the built-ins in paper order, then those of the ``rescue_bench.tasks`` entry points.

An outside package adds a task by declaring, in its ``pyproject.toml``::

    [project.entry-points."rescue_bench.tasks"]
    xtp = "xtp_plugin.xtp"

The value is a module that follows :class:`rescue_bench.tasks.base.Task` (constants, ``INFO`` and the four
functions); the entry point's name must be the task's ``NAME``.

The six built-ins are declared the same way in this project's ``pyproject.toml``, but they are also loaded
without it: an installation whose metadata predates the entry points (an editable install made before them)
still has every built-in, in the paper's order. A built-in listed in the group is not added twice; outside
tasks follow, sorted by name.
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
BUILTINS: tuple[tuple[str, str], ...] = tuple(
    (name, f"rescue_bench.tasks.{name}") for name in ("itp", "rpp", "stp", "ssp", "er", "vp")
)
"""(name, module) of the built-in tasks, in the paper's table order."""


def _load_module(name: str, value: str, where: str) -> Task:
    try:
        module = importlib.import_module(value)
    except ImportError as exc:  # a broken plugin must not hide behind a traceback
        raise ConfigError(f"task {where}: cannot import {value!r} ({exc})") from exc
    task = cast(Task, module)
    check_task(task, where)
    if name != task.NAME:
        raise ConfigError(f"task {where}: the module's NAME is {task.NAME!r}, not {name!r}")
    return task


def _outside(found: Iterable[EntryPoint]) -> dict[str, str]:
    """Entry points beyond the built-ins, by name; the same name with two modules is an error."""
    builtin = dict(BUILTINS)
    chosen: dict[str, str] = {}
    for point in found:
        where = f"entry point {point.name} = {point.value!r} (group {GROUP})"
        if ":" in point.value:
            raise ConfigError(f"task {where}: the value must be a module path, not an object reference")
        if point.name in builtin:
            if point.value != builtin[point.name]:
                raise ConfigError(f"task {where}: {point.name!r} is a built-in task ({builtin[point.name]})")
            continue
        if chosen.get(point.name, point.value) != point.value:
            raise ConfigError(
                f"task {where}: task {point.name!r} is also registered as {chosen[point.name]!r}"
            )
        chosen[point.name] = point.value
    return chosen


BROKEN: dict[str, str] = {}
"""Outside tasks that could not be loaded by the package's own registry, with the reason (asking for one of
them by name gives that reason)."""


def load_tasks(found: Iterable[EntryPoint] | None = None, *, strict: bool = True) -> dict[str, Task]:
    """Every task by name: the built-ins in paper order, then outside tasks sorted by name.

    ``found`` replaces the installed entry points of the group (for tests). With ``strict=False`` (the
    package's own registry) a broken outside task is left out with a warning and recorded in
    :data:`BROKEN`, so one bad plugin does not stop every command.

    Raises:
        ConfigError: (strict) an entry point cannot be imported, is not a task, names another task, or
            reuses a name.
    """
    points = entry_points(group=GROUP) if found is None else [p for p in found if p.group == GROUP]
    tasks = {name: _load_module(name, value, f"{name} (built-in {value})") for name, value in BUILTINS}
    try:
        outside = _outside(points)
    except ConfigError as exc:
        if strict:
            raise
        _skip("*", str(exc))
        return tasks
    for name, value in sorted(outside.items()):
        try:
            tasks[name] = _load_module(name, value, f"entry point {name} = {value!r} (group {GROUP})")
        except ConfigError as exc:
            if strict:
                raise
            _skip(name, str(exc))
    return tasks


def _skip(name: str, reason: str) -> None:
    BROKEN[name] = reason
    logging.getLogger(__name__).warning("warning: outside task left out: %s", reason)
