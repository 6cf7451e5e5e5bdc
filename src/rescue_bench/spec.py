"""The run spec: everything that decides what a run asks, whom, and how (one typed, validated record).

A :class:`RunSpec` is built from command-line flags, from a ``--spec FILE.toml`` (flags given beside it win),
or in Python (``rescue_bench.run(RunSpec(model="baseline/random", tasks=["itp"]))``). Every value is checked
here, so nothing is written before the options are known to be valid; :func:`load_spec` and
:func:`validate_spec` turn pydantic's errors into one-line :class:`~rescue_bench.errors.ConfigError`\\ s that
name the field (and the file). ``run.json`` stores ``spec.model_dump(mode="json")``; it holds names of
environment variables, never a key.

The field descriptions are the help texts of the command-line flags (:mod:`rescue_bench.cli.run_flags`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import GenerationParams, ReasoningEffort, ResponseFormat
from rescue_bench.models.presets import reasoning_problem
from rescue_bench.tasks import TASKS
from rescue_bench.tasks.base import Task, TaskConfig, resolve_mode
from rescue_bench.tasks.perturb import parse_perturbations

VIDEO_BATCH_SIZE = 1
"""Instances per request in video mode when ``batch_size`` is not given, as in the reference scripts."""
TASKS_CONTEXT = "tasks"
"""Validation-context key of the tasks a spec may name (default: the registry, ``tasks.TASKS``)."""


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelSpec(_Spec):
    """The model under test and how it generates."""

    name: str = Field(description="provider/model, e.g. openai/gpt-4o, local/gemma-3-270m.")
    base_url: str | None = Field(None, description="Endpoint of an OpenAI-compatible server.")
    api_key_env: str | None = Field(None, description="Name of the variable that holds the API key.")
    temperature: float = Field(0.0, ge=0.0, description="Sampling temperature.")
    seed: int | None = Field(None, description="Sent to the model as its seed; seeds baselines.")
    response_format: ResponseFormat = Field("json_schema", description="How the answer's shape is asked for.")
    disable_thinking: bool = Field(False, description="Send the endpoint's switch to turn off thinking.")
    top_p: float | None = Field(None, gt=0.0, le=1.0, description="Nucleus sampling: top_p sent as is.")
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="Output cap of every task (default: each task's own cap, with headroom when reasoning).",
    )
    reasoning_effort: ReasoningEffort = Field(
        "none",
        description="none | minimal | low | medium | high | max: mapped to what the endpoint takes "
        "(docs/reasoning.md); none keeps the endpoint's default.",
    )
    extra_body: dict[str, JsonValue] = Field(
        default_factory=dict, description="Fields added to every request body as they are."
    )
    concurrency: int | None = Field(
        None, ge=1, description="Requests in flight for this model (default: engine.concurrency)."
    )

    @field_validator("name")
    @classmethod
    def _provider_model(cls, name: str) -> str:
        provider, sep, model = name.partition("/")
        if not sep or not provider or not model:
            raise ValueError(f"{name!r} is not of the form provider/model (e.g. openai/gpt-4o)")
        return name

    @model_validator(mode="after")
    def _reasoning(self) -> ModelSpec:
        problem = reasoning_problem(
            self.name.partition("/")[0],
            self.reasoning_effort,
            disable_thinking=self.disable_thinking,
            # top_p 1.0 is the service's default: no sampling setting to lose (the study example).
            sampled=self.temperature > 0 or (self.top_p is not None and self.top_p < 1.0),
        )
        if problem is not None:
            raise ValueError(f"reasoning_effort {self.reasoning_effort!r}: {problem}")
        return self

    def generation_params(self, max_tokens: int | None = None) -> GenerationParams:
        """How this model (or judge) generates; ``max_tokens`` is the cap of a request that names none."""
        return GenerationParams(
            temperature=self.temperature,
            seed=self.seed,
            response_format=self.response_format,
            disable_thinking=self.disable_thinking,
            extra=dict(self.extra_body),
            top_p=self.top_p,
            output_cap=self.max_tokens,
            reasoning_effort=self.reasoning_effort,
            **({} if max_tokens is None else {"max_tokens": max_tokens}),
        )


class JudgeSpec(ModelSpec):
    """One judge of the free-text tasks, asked after the run: the same keys as a model, its own settings."""

    name: str = Field(description="Judge model for ER/VP, asked after the run (repeatable).")
    base_url: str | None = Field(
        None,
        description="Endpoint of the judges (default: --base-url when a judge shares the model's provider or "
        "the model is a baseline; else the judge provider's own).",
    )
    api_key_env: str | None = Field(
        None, description="Variable holding the judges' key (default: as the endpoint)."
    )
    temperature: float = Field(0.0, ge=0.0, description="The judges' sampling temperature.")


class EngineSpec(_Spec):
    """How fast and how robustly the run goes; never what it asks."""

    concurrency: int = Field(16, ge=1, description="Requests in flight at most.")
    rpm: float | None = Field(None, gt=0, description="Requests per minute at most.")
    tpm: float | None = Field(None, gt=0, description="Tokens per minute at most.")
    timeout: float = Field(120.0, gt=0, description="Seconds per request attempt.")
    max_retries: int = Field(5, ge=0, description="Retries of 429/5xx/timeouts.")
    cache: bool = Field(True, description="Read and write the response cache.")
    retry_failed: bool = Field(False, description="Ask invalid instances again.")


class BudgetSpec(_Spec):
    """A spending limit and the prices it is counted with."""

    usd: float | None = Field(None, gt=0, description="Stop before spending more USD.")
    price_in: float | None = Field(None, ge=0, description="USD per million prompt tokens.")
    price_out: float | None = Field(None, ge=0, description="USD per million completion tokens.")
    prices: Path | None = Field(None, description="JSON file of prices (per model or one entry).")

    @model_validator(mode="after")
    def _one_source(self) -> BudgetSpec:
        if self.prices is not None and (self.price_in is not None or self.price_out is not None):
            raise ValueError("give either prices or price_in/price_out, not both")
        if (self.price_in is None) != (self.price_out is None):
            raise ValueError("price_in and price_out go together")
        return self


class VideoSpec(_Spec):
    """Clip settings of video mode (they change what the model is sent)."""

    clips: tuple[str, ...] = Field(
        (), description="Video mode: an annotate work directory or review assets (repeatable)."
    )
    form: Literal["video", "frames"] = Field(
        "video", description="Video mode: send clips as video, or as still frames."
    )
    frames: int = Field(4, ge=1, description="Video mode: frames per clip (frames form).")
    clip_url_base: str | None = Field(
        None, description="Video mode: URL the clips are served under (default: data URLs)."
    )
    fps: float | None = Field(None, gt=0, description="Video mode: 'fps' sent with each clip (DashScope).")


class RunSpec(_Spec):
    """Everything that decides what is asked and how: model, judges, tasks and their options, data, limits."""

    model: ModelSpec
    judges: tuple[JudgeSpec, ...] = ()
    bertscore: bool | None = Field(
        None, description="BERTScore ER/VP after the run (default: when the bertscore extra is installed)."
    )
    tasks: tuple[str, ...] = Field(tuple(TASKS), description="all, or a comma list of task names.")
    task_options: dict[str, dict[str, JsonValue]] = Field(
        default_factory=dict, description="Task name -> that task's options."
    )
    data: str = Field("demo", description="A release JSONL file, a directory, 'hf[:repo]' or 'demo'.")
    limit_samples: int | None = Field(None, ge=1, description="Only the first N selected samples.")
    sample_ids: tuple[str, ...] | None = Field(None, description="Only these samples (in data order).")
    mode: str = Field(
        "dialogue", description="dialogue (text), or video (ER/VP/SSP with row clips; needs clips)."
    )
    context_size: int | None = Field(None, ge=-1, description="-1 all prior rows, 0 none, N the last N.")
    batch_size: int | None = Field(
        None, ge=1, description="Instances per request (default: per task; 1 in video mode)."
    )
    engine: EngineSpec = EngineSpec()
    budget: BudgetSpec = BudgetSpec()
    video: VideoSpec = VideoSpec()
    perturb: tuple[str, ...] = Field(
        (),
        description="Perturbations of what the model is shown, a comma list: label-order[:K], name-swap, "
        "anonymize, shuffle-window, context:N, no-cues (docs/robustness.md). Instance ids stay those of the "
        "unperturbed run, so `compare BASE PERTURBED` pairs them.",
    )
    repeats: int = Field(
        1, ge=1, description="Ask every instance this many times (repeat i is its own cache entry)."
    )
    judge_repeats: int = Field(1, ge=1, description="Ask every judge this many times per reply.")
    batch: bool = Field(
        False, description="Send the run's requests through the endpoint's Batch API (files + batches)."
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
    def _options(self, info: ValidationInfo) -> RunSpec:
        known = known_tasks(info)
        for name, given in self.task_options.items():
            model = options_model(known[name]) if name in known else None
            if model is None:
                raise ValueError(f"task_options.{name}: no task {name!r} with options")
            try:
                model.model_validate(given)
            except ValidationError as exc:
                loc, message = _first_error(exc)
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

    def generation_params(self) -> GenerationParams:
        return self.model.generation_params()


def named_entries(value: object) -> object:
    """A list of model (or judge) tables in which a bare name stands for ``{"name": name}``.

    >>> named_entries(["a/b", {"name": "c/d", "temperature": 0.5}])
    [{'name': 'a/b'}, {'name': 'c/d', 'temperature': 0.5}]
    """
    if isinstance(value, list | tuple):
        return [{"name": v} if isinstance(v, str) else v for v in value]
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
            loc, message = _first_error(exc)
            raise _config_error(("task_options", name, *loc), message, where, labels) from None
    try:
        return RunSpec.model_validate(dict(data), context=context)
    except ValidationError as exc:
        raise _config_error(*_first_error(exc), where, labels) from None


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
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path} ({exc.__class__.__name__})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what}: {path}: not valid TOML ({exc})") from None


def _first_error(exc: ValidationError) -> tuple[tuple[int | str, ...], str]:
    """Where the first error is, and what it says (an unknown key reads ``unknown key``)."""
    error = exc.errors(include_url=False)[0]
    message = "unknown key" if error["type"] == "extra_forbidden" else str(error["msg"])
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return tuple(error["loc"]), message.removeprefix("Value error, ") + more


def to_toml(data: Mapping[str, Any]) -> str:
    """TOML of a spec dump: tables, arrays, strings, numbers and booleans; ``None`` values are left out.

    >>> print(to_toml({"tasks": ["itp"], "out": None, "model": {"name": "a/b", "temperature": 0.0}}), end="")
    tasks = ["itp"]
    <BLANKLINE>
    [model]
    name = "a/b"
    temperature = 0.0
    """
    return "".join(_toml_table(data, ()))


def _toml_table(data: Mapping[str, Any], path: tuple[str, ...]) -> list[str]:
    plain = [f"{_key(k)} = {_value(v)}\n" for k, v in data.items() if v is not None and not _is_table(v)]
    lines = ([f"\n[{'.'.join(_key(p) for p in path)}]\n"] if path else []) + plain
    if path and not plain and any(_is_table(v) for v in data.values()):
        lines = []  # a table holding only tables needs no header of its own
    for k, v in data.items():
        if isinstance(v, Mapping):
            lines += _toml_table(v, (*path, k))
        elif _is_table(v):
            for item in v:
                lines.append(f"\n[[{'.'.join(_key(p) for p in (*path, k))}]]\n")
                lines += [f"{_key(ik)} = {_value(iv)}\n" for ik, iv in item.items() if iv is not None]
    return lines


def _is_table(value: object) -> bool:
    """A mapping, or a non-empty array of mappings (an array of tables)."""
    if isinstance(value, Mapping):
        return True
    return isinstance(value, list | tuple) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _key(key: str) -> str:
    return key if key and all(c.isalnum() or c in "-_" for c in key) else _string(key)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value if v is not None) + "]"
    if isinstance(value, Mapping):  # inside an array of tables (a judge's extra_body): an inline table
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None) + "}"
    raise ConfigError(f"cannot write {type(value).__name__} as TOML")


def _string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c >= " " or c == "\t" else f"\\u{ord(c):04x}" for c in escaped)
    return f'"{escaped}"'
