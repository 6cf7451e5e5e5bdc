"""A run spec from a table (a spec file, flags, ``run.json``), with one-line errors naming the field."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
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
) -> RunSpec:
    """A :class:`RunSpec` of ``data``, or a one-line :class:`ConfigError` naming the field.

    ``labels`` name the fields that command-line flags set (``("engine", "concurrency")`` ->
    ``--concurrency``): an error in one of them names the flag; any other names ``where`` (the spec file)
    and the field.
    """
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
            raise _config_error(("task_options", name, *loc), message, where, labels) from None
    try:
        return RunSpec.model_validate(dict(data), context=context)
    except ValidationError as exc:
        raise _config_error(*first_error(exc), where, labels) from None


def validate_table(
    model: type[ModelT],
    data: Mapping[str, Any],
    *,
    at: tuple[str, ...] = (),
    labels: Mapping[tuple[str, ...], str] | None = None,
) -> ModelT:
    """One table of a spec (``model``, ``engine``) given apart, found at ``at``; errors as in
    :func:`validate_spec`."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        loc, message = first_error(exc)
        raise _config_error((*at, *loc), message, "", labels) from None


def _config_error(
    loc: tuple[int | str, ...], message: str, where: str, labels: Mapping[tuple[str, ...], str] | None
) -> ConfigError:
    for size in range(len(loc), 0, -1):
        label = (labels or {}).get(tuple(str(p) for p in loc[:size]))
        if label is not None:
            return ConfigError(f"{label}: {message}")
    field = ".".join(str(p) for p in loc)
    return ConfigError(": ".join(part for part in (where, field, message) if part))


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
