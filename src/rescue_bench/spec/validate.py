"""A run spec from a table (a spec file, flags, ``run.json``), with one-line errors naming the field."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rescue_bench.errors import ConfigError
from rescue_bench.spec.run import TASKS_CONTEXT, RunSpec, first_error, options_model
from rescue_bench.tasks import TASKS
from rescue_bench.tasks.base import Task

ModelT = TypeVar("ModelT", bound=BaseModel)


def validate_spec(
    data: Mapping[str, Any],
    *,
    where: str = "",
    labels: Mapping[tuple[str, ...], str] | None = None,
    tasks: Mapping[str, Task] | None = None,
    flags: Mapping[tuple[str, ...], str] | None = None,
) -> RunSpec:
    """A :class:`RunSpec` of ``data``, or a one-line :class:`ConfigError` naming the field.

    ``labels`` name the fields that command-line flags set (``("engine", "concurrency")`` ->
    ``--concurrency``): an error in one of them names the flag; any other names ``where`` (the spec file)
    and the field. ``flags`` name the flag of every field a flag can set: a field the user did not give at
    all (a required one, or the other half of a pair) is named by its flag on a command line without a file.
    """
    names = Names(data, where, labels or {}, flags or {})
    context = None if tasks is None else {TASKS_CONTEXT: tasks}
    known = TASKS if tasks is None else tasks
    given = data.get("task_options")
    # Checked first, on their own, so that an error names the option itself (the spec's check names none).
    for name, values in given.items() if isinstance(given, Mapping) else ():
        model = options_model(known[name]) if name in known else None
        try:
            if model is not None:
                model.model_validate(values)
        except ValidationError as exc:
            loc, message = first_error(exc)
            raise names.error(("task_options", name, *loc), message) from None
    try:
        return RunSpec.model_validate(dict(data), context=context)
    except ValidationError as exc:
        raise names.error(*first_error(exc)) from None


def validate_table(
    model: type[ModelT],
    data: Mapping[str, Any],
    *,
    at: tuple[str, ...] = (),
    labels: Mapping[tuple[str, ...], str] | None = None,
    flags: Mapping[tuple[str, ...], str] | None = None,
) -> ModelT:
    """One table of a spec (``model``, ``engine``) given apart, found at ``at``; errors as in
    :func:`validate_spec`."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        loc, message = first_error(exc)
        nested: dict[str, Any] = dict(data)
        for key in reversed(at):
            nested = {key: nested}
        raise Names(nested, "", labels or {}, flags or {}).error((*at, *loc), message) from None


KEY = re.compile(r"`([a-z_]+)`")
"""A key of the failing table as a check names it (``price_in``), to be named as the user wrote it."""


@dataclass(frozen=True, slots=True)
class Names:
    """How the user wrote each field: the flag that set it, else its key in the spec file."""

    data: Mapping[str, Any]
    where: str
    """The spec file (``--spec FILE``), or empty on a command line without one."""
    labels: Mapping[tuple[str, ...], str]
    """Field -> the flag that set it."""
    flags: Mapping[tuple[str, ...], str]
    """Field -> the flag that can set it (every flag)."""

    def error(self, loc: tuple[int | str, ...], message: str) -> ConfigError:
        """The one-line error of ``message`` at ``loc``, naming the flag or the key the user wrote."""
        path = tuple(str(p) for p in loc)
        for size in range(len(path), 0, -1):
            label = self.labels.get(path[:size])
            if label is not None:
                return ConfigError(f"{label}: {self._keys(path[:size], message, by_flag=True)}")
        missing = message.startswith("Field required")
        if missing and path in self.flags:
            if not self.where:
                return ConfigError(f"{self.flags[path]} is required")
            message = f"missing (give it in the file, or {self.flags[path]})"
        # A check of a whole table names its keys in backquotes (`price_in`): the flags when given so.
        if any(self._by_flag((*path, key)) for key in KEY.findall(message)):
            return ConfigError(self._keys(path, message, by_flag=True))
        field = ".".join(path)
        return ConfigError(": ".join(part for part in (self.where, field, self._keys(path, message)) if part))

    def _by_flag(self, path: tuple[str, ...]) -> bool:
        """Whether the user gives this field on the command line: a flag set it, or a flag set a field of its
        table and neither a flag nor the spec file gave this one."""
        if path in self.labels:
            return True
        table = path[:-1]
        given_by_flag = any(p[:-1] == table for p in self.labels)
        return given_by_flag and path in self.flags and _lookup(self.data, path) is None

    def _keys(self, table: tuple[str, ...], message: str, *, by_flag: bool = False) -> str:
        """``message`` with each `key` of ``table`` named: by its flag when the user gives it so, else by its
        key (in full when the message names no table before it)."""

        def name(match: re.Match[str]) -> str:
            path = (*table, match.group(1))
            if by_flag and self._by_flag(path):
                return self.labels.get(path) or self.flags[path]
            if by_flag and (path in self.flags or _lookup(self.data, path) is not None):
                return ".".join(path)
            return match.group(1)

        return KEY.sub(name, message)


def _lookup(data: Mapping[str, Any], path: tuple[str, ...]) -> object:
    found: object = data
    for key in path:
        found = found.get(key) if isinstance(found, Mapping) else None
    return found


def load_spec(path: Path, what: str = "--spec") -> dict[str, Any]:
    """The raw table of a spec file (validated later, after the flags given beside it are applied); ``what``
    names the file in an error (the flag, or ``study file``)."""
    try:
        # A byte-order mark (some Windows editors write one) is not part of the TOML: read past it.
        text = path.read_bytes().decode("utf-8-sig")
        return tomllib.loads(text)
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path} ({exc.__class__.__name__})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what}: {path}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what}: {path}: not valid TOML ({exc})") from None
