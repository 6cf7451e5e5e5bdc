"""Reading a format-1 ``run.json``: flat task options in ``config``, no ``spec``.

Format 1 wrote each task option as a flat ``config`` key; each task's ``Options`` names the keys it took over
in its ``V1_KEYS`` class variable (flat key -> option field), so this reader names no task.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rescue_bench.errors import ConfigError
from rescue_bench.records import Json
from rescue_bench.spec import RunSpec, options_model, validate_spec
from rescue_bench.tasks.base import Task


class ConfigV1(BaseModel):
    """The ``config`` of a format-1 ``run.json``: flat, task options included."""

    # Extra keys are the flat task options; only those some task's ``V1_KEYS`` names pass
    # (:func:`spec_from_v1`).
    model_config = ConfigDict(frozen=True, extra="allow")
    model: str
    tasks: list[str]
    mode: str = "dialogue"
    context_size: int | None = None
    batch_size: int | None = None
    judges: list[str] = []
    limit_samples: int | None = None
    sample_ids: str | None = None
    """A hash of the ids; the ids themselves are under ``selection``."""
    seed: int | None = None
    temperature: float = 0.0
    response_format: str = "json_schema"
    disable_thinking: bool = False
    video: dict[str, Json] | None = None


class SelectionV1(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    data: str
    sample_ids: list[str] | None = None


def v1_keys(task: Task) -> Mapping[str, str]:
    """The format-1 flat ``config`` keys a task's options took over (flat key -> option field)."""
    model = options_model(task)
    keys = getattr(model, "V1_KEYS", None) if model is not None else None
    return keys if isinstance(keys, Mapping) else {}


def v1_options(flat: Mapping[str, Json], chosen: list[str], tasks: Mapping[str, Task]) -> dict[str, Json]:
    """The nested task options of a format-1 config's flat keys, for the run's tasks."""
    options: dict[str, Json] = {}
    for name in chosen:
        if name not in tasks:
            continue
        fields = {field: flat[key] for key, field in v1_keys(tasks[name]).items() if key in flat}
        if fields:
            options[name] = dict(fields)
    return options


def spec_from_v1(manifest: Mapping[str, Json], tasks: Mapping[str, Task]) -> RunSpec:
    """The spec of a format-1 ``run.json``: its flat ``config`` and its ``selection``."""
    try:
        cfg = ConfigV1.model_validate(manifest.get("config"))
        selection = SelectionV1.model_validate(manifest.get("selection"))
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in problem["loc"])
        raise ConfigError(f"run.json (format 1): {where}: {problem['msg']}") from None
    known = {key for task in tasks.values() for key in v1_keys(task)}
    unknown = sorted(set(cfg.model_extra or {}) - known)
    if unknown:
        raise ConfigError(f"run.json (format 1): config.{unknown[0]}: Extra inputs are not permitted")
    flat = cfg.model_dump()
    model = {
        k: flat[k]
        for k in ("name", "seed", "temperature", "response_format", "disable_thinking")
        if k in flat
    }
    data: dict[str, Any] = {
        **{k: flat[k] for k in ("tasks", "mode", "context_size", "batch_size", "limit_samples", "judges")},
        "model": {**model, "name": cfg.model},
        "data": selection.data,
        "sample_ids": selection.sample_ids,
        "task_options": v1_options(flat, cfg.tasks, tasks),
        "video": {k: v for k, v in (cfg.video or {}).items() if v is not None},
    }
    return validate_spec(data, where="run.json (format 1)", tasks=tasks)
