"""What a run of one task asks and how a reply becomes prediction records, without the engine.

The adapters (inspect_ai, lm-eval) plan their requests here so that they send the very prompts
``rescue-bench run`` sends: the same samples (``--data``, ``--limit-samples``), the same instances
(``build``), the same batches (``make_batches``) and the same rendered messages (``render``). A reply is
parsed and scored by the task itself and turned into a ``predictions.jsonl`` line (docs/design.md), so the
corpus metrics come from :mod:`rescue_bench.metrics.aggregate` over the same records as a run's
``scores.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue, StrictStr, TypeAdapter, ValidationError

from rescue_bench.data.load import load_samples
from rescue_bench.engine.outcomes import prediction_record as engine_record
from rescue_bench.engine.outcomes import reply_predictions
from rescue_bench.engine.plans import PLAIN, default_batch_size
from rescue_bench.errors import ConfigError
from rescue_bench.metrics.aggregate import point_values, scope_labels, scope_records
from rescue_bench.metrics.bootstrap import cluster_bootstrap_ses
from rescue_bench.metrics.plan import metric_plan
from rescue_bench.records import Instance, Json, Prediction, Reply, Request
from rescue_bench.rundir import PredictionLine
from rescue_bench.spec import RunSpec, options_model, validate_spec
from rescue_bench.tasks import TASKS, get_task, make_batches
from rescue_bench.tasks.base import Task, TaskConfig

PLANNING_MODEL = "baseline/random"
"""The model of the spec an adapter plans with: planning never asks it, and a spec needs one."""


@dataclass(frozen=True, slots=True)
class TaskArgs:
    """The run-spec settings an adapter task takes (inspect ``-T``, lm-eval ``metadata``): the settings every
    task has, and ``options``, the task's own (the fields of its ``INFO.options`` model)."""

    task: str
    data: str = "demo"
    mode: str = "dialogue"
    context_size: int | None = None
    batch_size: int | None = None
    limit_samples: int | None = None
    options: Mapping[str, JsonValue] = field(default_factory=dict, hash=False)

    def spec(self) -> RunSpec:
        """The validated run spec of these settings (video mode refused: it needs the engine's clips)."""
        spec = run_spec([self])
        if spec.is_video:
            raise ConfigError("video mode needs the engine's clip attachment; use `rescue-bench run`")
        return spec

    def task_config(self) -> TaskConfig:
        """The :class:`TaskConfig` ``rescue-bench run`` builds from the same flags."""
        return self.spec().task_config()

    def common(self) -> dict[str, Json]:
        """The settings every task has (those one run shares among its tasks)."""
        return {name: getattr(self, name) for name in COMMON}

    def to_json(self) -> dict[str, Json]:
        """The settings as a JSON object (read back by :func:`task_args`)."""
        return {"task": self.task, **self.common(), "options": dict(self.options)}


COMMON = tuple(f.name for f in fields(TaskArgs) if f.name not in ("task", "options"))
"""The settings of :class:`TaskArgs` that every task has."""


def run_spec(
    args: Sequence[TaskArgs], model: str | Mapping[str, Json] = PLANNING_MODEL, judges: Sequence[str] = ()
) -> RunSpec:
    """The run spec of tasks planned with ``args`` (one run: their common settings must agree)."""
    first = args[0]
    for other in args[1:]:
        differ = [k for k, v in other.common().items() if first.common()[k] != v]
        if differ:
            raise ConfigError(
                f"tasks {first.task} and {other.task} differ in {differ[0]} "
                f"({first.common()[differ[0]]!r}, {other.common()[differ[0]]!r}); one run has one"
            )
    data = {
        **first.common(),
        "model": model,
        "judges": list(judges),
        "tasks": [a.task for a in args],
        "task_options": {a.task: dict(a.options) for a in args if a.options},
    }
    labels: dict[tuple[str, ...], str] = {
        ("task_options", a.task, key): f"{a.task} option {key}" for a in args for key in a.options
    }
    return validate_spec(data, labels=labels)


def task_args(given: Mapping[str, object], task: str | None = None, *, lenient: bool = False) -> TaskArgs:
    """The :class:`TaskArgs` of ``task`` (else of ``given["task"]``) from settings given as a flat object.

    Besides the common settings, a task's options may be given as ``options`` (the task's own), as
    ``task_options`` (task name -> options, as in a run spec; other tasks' are ignored), or flat by field
    name (``gold_field``, lm-eval's ``--metadata``). Another task's flat options are ignored; any other key
    is a :class:`ConfigError` unless ``lenient`` (lm-eval passes its own metadata along).

    >>> task_args({"task": "rpp", "gold_field": "relation_pattern", "checkpoints_per_sample": 5}).options
    {'gold_field': 'relation_pattern'}
    """
    try:
        settings = GivenSettings.model_validate(dict(given))
    except ValidationError as exc:
        raise _settings_error(exc, given, task) from None
    chosen = settings.task if task is None else task
    if chosen is None:
        raise ConfigError(f"settings without a task name: {sorted(given)}")
    name = get_task(chosen).INFO.name
    if settings.task is not None and settings.task != name:
        raise ConfigError(f"settings of task {settings.task!r} given for task {name!r}")
    model = options_model(get_task(name))
    own = set(model.model_fields) if model is not None else set()
    unknown = set(given) - {"task", "options", "task_options", *COMMON, *_option_names()}
    if unknown and not lenient:
        raise ConfigError(
            f"unknown setting {sorted(unknown)[0]!r} of task {name}; "
            f"known: {', '.join(COMMON)}, options, task_options, and the tasks' options"
        )
    nested = (settings.task_options or {}).get(name)
    options: dict[str, JsonValue] = {
        **{key: _json(value) for key, value in given.items() if key in own},
        **_mapping(nested, f"task_options.{name}"),
        **_mapping(settings.options, "options"),
    }
    common = {key: given[key] for key in COMMON if key in given}
    try:
        return _ARGS.validate_python({**common, "task": name, "options": options})
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"])
        raise ConfigError(f"task {name}: {where}: {error['msg']}") from None


class GivenSettings(BaseModel):
    """The keys of settings given as a flat object that name the task and nest its options (the others, the
    common settings and options by field name, are read by name)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    task: StrictStr | None = None
    options: dict[Any, Any] | None = None
    """The task's own options."""
    task_options: dict[Any, Any] | None = None
    """Task name -> its options, as in a run spec (other tasks' are ignored)."""


def _settings_error(exc: ValidationError, given: Mapping[str, object], task: str | None) -> ConfigError:
    """The one-line error of :class:`GivenSettings` refusing ``given``: a task name that is not a string, or
    options that are not an object."""
    error = exc.errors(include_url=False)[0]
    key = str(error["loc"][0])
    if key == "task":
        if task is None:
            return ConfigError(f"settings without a task name: {sorted(given)}")
        return ConfigError(f"settings of task {given['task']!r} given for task {get_task(task).INFO.name!r}")
    return ConfigError(f"{key}: expected an object of options, not {type(error['input']).__name__}")


_ARGS = TypeAdapter(TaskArgs)
"""Checks the types of given settings (``limit_samples="3"`` is 3); the run spec checks their values."""


def _option_names() -> set[str]:
    """The option fields of every task (a flat one of another task is not a typo)."""
    models = [options_model(task) for task in TASKS.values()]
    return {key for model in models if model is not None for key in model.model_fields}


def _mapping(value: object, where: str) -> dict[str, JsonValue]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected an object of options, not {type(value).__name__}")
    return {str(key): _json(item) for key, item in value.items()}


def _json(value: object) -> JsonValue:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_json(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _json(item) for key, item in value.items()}
    raise ConfigError(f"setting value {value!r} is not JSON")


@dataclass(frozen=True, slots=True)
class Plan:
    """One task's batches and their rendered requests, in run order."""

    args: TaskArgs
    task: Task
    cfg: TaskConfig
    batches: tuple[tuple[Instance, ...], ...]
    requests: tuple[Request, ...]


def plan(args: TaskArgs) -> Plan:
    """Load the samples and build, batch and render the task as ``rescue-bench run`` does (API models)."""
    task = get_task(args.task)
    spec = args.spec()
    cfg = spec.task_config()
    samples = load_samples(spec.data)
    if spec.limit_samples is not None:
        samples = samples[: spec.limit_samples]
    instances = [inst for sample in samples for inst in task.build(sample, cfg)]
    size = default_batch_size(task, cfg, PLAIN)
    batches = tuple(tuple(b) for b in make_batches(instances, size))
    requests = tuple(task.render(b, cfg) for b in batches)
    return Plan(args, task, cfg, batches, requests)


def predictions_of(
    task: Task,
    batch: Sequence[Instance],
    text: str | None,
    *,
    error: str | None = None,
    truncated: bool = False,
) -> list[Prediction]:
    """One prediction per instance of ``batch``, by the engine's rules (:func:`reply_predictions`) for the
    reply an adapter got: its text, or the error of a failed request, and whether it was cut off."""
    if error is not None or text is None:
        reply = Reply.failure(error or "no reply")
    else:
        reply = Reply(text=text, finish_reason="length" if truncated else "stop")
    return reply_predictions(task, batch, reply)


def prediction_record(task: Task, inst: Instance, pred: Prediction, *, single: bool) -> PredictionLine:
    """One ``predictions.jsonl`` line (docs/design.md), as the engine records it, with no request key."""
    return PredictionLine.from_json(engine_record(task, inst, pred, None, single))


def batch_records(
    task: Task,
    batch: Sequence[Instance],
    text: str | None,
    *,
    error: str | None = None,
    truncated: bool = False,
) -> list[PredictionLine]:
    """The prediction lines of one batch's reply."""
    preds = predictions_of(task, batch, text, error=error, truncated=truncated)
    return [
        prediction_record(task, inst, pred, single=len(batch) == 1)
        for inst, pred in zip(batch, preds, strict=True)
    ]


def corpus_errors(task: Task, records: Sequence[PredictionLine]) -> dict[str, float | None]:
    """Standard errors of :func:`corpus_values` (``<scope>_<metric>``), from the cluster bootstrap over
    conversations that gives ``scores.json`` its CIs; ``None`` where none can be computed (one conversation,
    or a judged metric, which the adapters leave to the run)."""
    spec = task.INFO.metrics
    out: dict[str, float | None] = {}
    for scope, members in scope_records(list(records)).items():
        if spec.kind == "generation":
            out.update({f"{scope}_{name}": None for name in spec.headline})
            continue
        labels = scope_labels(members, None) if spec.kind == "multiclass" else ()
        the_plan = metric_plan(spec, labels)
        errors = cluster_bootstrap_ses(
            the_plan.matrix(members),
            [r.sample_id for r in members],
            the_plan.from_sums,
            strata=[r.scenario for r in members],
        )
        out.update({f"{scope}_{name}": errors.get(name) for name in spec.headline})
    return out


def corpus_values(task: Task, records: Sequence[PredictionLine]) -> dict[str, float | None]:
    """Headline metrics per scope (``<scope>_<metric>``) of ``records``: ``scores.json``'s point values."""
    spec = task.INFO.metrics
    out: dict[str, float | None] = {}
    for scope, members in scope_records(list(records)).items():
        labels = scope_labels(members, None) if spec.kind == "multiclass" else ()
        for name, value in point_values(spec, members, labels).items():
            out[f"{scope}_{name}"] = None if value is None else float(value)
    return out
