"""The flags of ``run``, ``estimate`` and ``batch export``, declared once, and the run spec they make.

Each flag is a row of :data:`FLAGS` (a :class:`~rescue_bench.cli.flags.Flag`): its names, where its value goes
in the :class:`~rescue_bench.spec.RunSpec`, and a help text taken from that field's description. The model's
generation settings add one flag per field of :class:`~rescue_bench.models.base.Generation`, and the tasks'
own options one per field of each task's ``Options`` model (``--<task>-<field>``, plus ``--<field>`` for a
field several tasks share), so a setting or a task added later gets its flags with no edit here.
:class:`SpecCommand` adds these flags to a command; ``score`` and ``annotate draft`` take the model,
generation and engine flags alone (:class:`EndpointCommand`, :class:`ModelCommand`), with ``run``'s defaults.

``--spec FILE.toml`` starts from a spec file (flags given beside it win); ``--print-spec`` prints the
effective spec as TOML and exits. What a spec takes beside the rows (a flag's value as a spec file gives it,
a ``--sample-ids`` file) is in :mod:`rescue_bench.cli.spec_input`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Final, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo

from rescue_bench.cli.flags import (
    DATA,
    ENGINE,
    GENERATION,
    JUDGING,
    MODEL,
    OUTPUT,
    TASK_OPTIONS,
    VIDEO,
    Flag,
    FlagValues,
    Path_,
    with_flags,
)
from rescue_bench.cli.spec_input import json_object, parse_sample_ids, plain_value, print_spec, put, written
from rescue_bench.models.base import Generation
from rescue_bench.spec import (
    EngineSpec,
    JudgeSpec,
    RunSpec,
    load_spec,
    options_model,
    validate_spec,
    validate_table,
)
from rescue_bench.tasks import TASKS

__all__ = [
    "FLAGS",
    "EndpointCommand",
    "ModelCommand",
    "ModelSettings",
    "OptionsCommand",
    "SpecCommand",
    "make_spec",
    "model_settings",
    "parse_sample_ids",
    "print_spec",
    "task_options",
]
ModelT = TypeVar("ModelT", bound=BaseModel)


def describe(path: Path_, model: type[BaseModel] = RunSpec) -> str:
    """The description of the spec field at ``path`` (the help text of its flag)."""
    field: FieldInfo | None = None
    for name in path:
        field = model.model_fields[name]
        nested = field.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            model = nested
    return (field.description or "") if field is not None else ""


def default_note(path: Path_) -> str:
    """`` (default: X)`` for a spec field with a plain default (a number or a word), else empty: the flags
    themselves default to "not given", so that a spec file's value stands."""
    model: type[BaseModel] = RunSpec
    for name in path[:-1]:
        nested = model.model_fields[name].annotation
        if not (isinstance(nested, type) and issubclass(nested, BaseModel)):
            return ""
        model = nested
    default = model.model_fields[path[-1]].default
    plain = isinstance(default, int | float | str) and not isinstance(default, bool)
    return f" (default: {default})" if plain else ""


def _spec_flag(decls: str, path: str, kind: type = str, **extra: Any) -> Flag:
    names = tuple(decls.split())
    dest = names[0].lstrip("-").split("/")[0].replace("-", "_")
    dotted = tuple(path.split("."))
    help_ = extra.pop("help", None) or describe(dotted)
    return Flag(
        names, dest, (dotted,) if path else (), kind, help_ + (default_note(dotted) if path else ""), **extra
    )


def setting_flags() -> tuple[Flag, ...]:
    """``--<setting>`` for every :class:`~rescue_bench.models.base.Generation` setting of the model: its name,
    type and help text come from the field, so a setting added there has its flag with no edit here."""
    return tuple(_setting_flag(name, field) for name, field in Generation.model_fields.items())


def _setting_flag(name: str, field: FieldInfo) -> Flag:
    path = ("model", name)
    decl, help_ = f"--{name.replace('_', '-')}", describe(path)
    kind, choices = _plain_type(field.annotation)
    if kind is bool:  # an on-only flag, turning the default over
        decl = decl if field.default is False else f"--no-{name.replace('_', '-')}"
        return Flag((decl,), name, (path,), bool, help_, value=not field.default, panel=GENERATION)
    if kind is dict:
        parse = functools.partial(json_object, decl)
        return Flag((decl,), name, (path,), str, help_, parse=parse, panel=GENERATION)
    if choices and " | " not in help_:
        help_ += f" ({' | '.join(choices)})"
    return Flag((decl,), name, (path,), kind, help_ + default_note(path), panel=GENERATION)


def _plain_type(annotation: Any) -> tuple[type, tuple[str, ...]]:
    """The flag's type of a field's annotation (``None`` and constraints left out), and a literal's choices.

    >>> _plain_type(int | None), _plain_type(Literal["a", "b"]), _plain_type(dict[str, int])
    ((<class 'int'>, ()), (<class 'str'>, ('a', 'b')), (<class 'dict'>, ()))
    """
    while get_origin(annotation) in (Annotated, Union, UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) is Literal:
        return str, tuple(str(a) for a in get_args(annotation))
    kind = get_origin(annotation) or annotation
    return (kind, ()) if isinstance(kind, type) else (str, ())


MODEL_FLAGS: Final = (
    _spec_flag("--model -m", "model.name", panel=MODEL),
    _spec_flag("--base-url", "model.base_url", panel=MODEL),
    _spec_flag("--api-key-env", "model.api_key_env", panel=MODEL),
)
ENGINE_FLAGS: Final = (
    _spec_flag("--concurrency", "engine.concurrency", int, panel=ENGINE),
    _spec_flag("--fixed-concurrency", "engine.fixed_concurrency", bool, value=True, panel=ENGINE),
    _spec_flag("--rpm", "engine.rpm", float, panel=ENGINE),
    _spec_flag("--tpm", "engine.tpm", float, panel=ENGINE),
    _spec_flag("--timeout", "engine.timeout", float, panel=ENGINE),
    _spec_flag("--max-retries", "engine.max_retries", int, panel=ENGINE),
    _spec_flag(
        "--no-cache",
        "engine.cache",
        bool,
        value=False,
        help="Neither read nor write the response cache.",
        panel=ENGINE,
    ),
)
"""How fast and how robustly requests go: the flags every command that asks a model takes."""

FLAGS: Final = (
    *MODEL_FLAGS,
    *setting_flags(),
    _spec_flag("--repeats", "repeats", int, panel=GENERATION),
    _spec_flag("--tasks", "tasks", help="all, or a comma list of " + ",".join(TASKS) + ".", panel=DATA),
    _spec_flag("--data", "data", panel=DATA),
    _spec_flag("--limit-samples", "limit_samples", int, panel=DATA),
    _spec_flag("--sample-ids", "", Path, help="JSON list, {'sample_ids': [...]}, or lines.", panel=DATA),
    _spec_flag("--mode", "mode", panel=DATA),
    _spec_flag("--context-size", "context_size", int, panel=DATA),
    _spec_flag("--batch-size", "batch_size", int, panel=DATA),
    _spec_flag("--perturb", "perturb", panel=DATA),
    _spec_flag("--judge", "", multiple=True, help=describe(("name",), JudgeSpec), panel=JUDGING),
    _spec_flag("--judge-base-url", "", help=describe(("base_url",), JudgeSpec), panel=JUDGING),
    _spec_flag("--judge-api-key-env", "", help=describe(("api_key_env",), JudgeSpec), panel=JUDGING),
    _spec_flag("--judge-repeats", "judge_repeats", int, panel=JUDGING),
    _spec_flag("--judge-concurrency", "engine.judge_concurrency", int, panel=JUDGING),
    _spec_flag("--judge-rpm", "engine.judge_rpm", float, panel=JUDGING),
    _spec_flag("--judge-tpm", "engine.judge_tpm", float, panel=JUDGING),
    _spec_flag("--bertscore/--no-bertscore", "bertscore", bool, panel=JUDGING),
    _spec_flag("--bertscore-model", "bertscore_model", panel=JUDGING),
    *ENGINE_FLAGS,
    _spec_flag("--retry-failed", "engine.retry_failed", bool, value=True, panel=ENGINE),
    _spec_flag("--degraded-share", "degraded_share", float, panel=ENGINE),
    _spec_flag("--batch", "batch", bool, value=True, panel=ENGINE),
    _spec_flag("--budget", "budget.usd", float, panel=ENGINE),
    _spec_flag("--price-in", "budget.price_in", float, panel=ENGINE),
    _spec_flag("--price-out", "budget.price_out", float, panel=ENGINE),
    _spec_flag("--prices", "budget.prices", Path, panel=ENGINE),
    _spec_flag("--clips", "video.clips", Path, multiple=True, panel=VIDEO),
    _spec_flag(
        "--video-form", "video.form", help=describe(("video", "form")) + " (video or frames)", panel=VIDEO
    ),
    _spec_flag("--video-frames", "video.frames", int, panel=VIDEO),
    _spec_flag("--clip-url-base", "video.clip_url_base", panel=VIDEO),
    _spec_flag("--video-fps", "video.fps", float, panel=VIDEO),
)


class OptionExtra(BaseModel):
    """What a task's option field declares for its flags (its ``json_schema_extra``): more names, such as
    ``--rpp-current-turn``."""

    model_config = ConfigDict(frozen=True)

    flags: tuple[str, ...] = ()


def task_option_flags() -> tuple[Flag, ...]:
    """``--<task>-<field>`` for every field of every task's ``Options``; ``--<field>`` when tasks share it."""
    owners: dict[str, list[tuple[str, FieldInfo]]] = {}
    flags: list[Flag] = []
    for task, module in TASKS.items():
        model = options_model(module)
        for name, field in (model.model_fields if model else {}).items():
            owners.setdefault(name, []).append((task, field))
            extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
            decls = (f"--{task}-{name.replace('_', '-')}", *OptionExtra.model_validate(extra).flags)
            flags.append(_option_flag(decls, f"{task}_{name}", ((task, name),), field))
    for name, shared in owners.items():
        if len(shared) > 1:
            paths = tuple((task, name) for task, _ in shared)
            tasks = "/".join(task.upper() for task, _ in shared)
            help_ = (
                f"{tasks}: " + shared[0][1].description.partition(": ")[2] if shared[0][1].description else ""
            )
            flags.append(_option_flag((f"--{name.replace('_', '-')}",), name, paths, shared[0][1], help_))
    return tuple(flags)


def _option_flag(
    decls: Sequence[str], dest: str, owners: tuple[Path_, ...], field: FieldInfo, help_: str | None = None
) -> Flag:
    kind = field.annotation if field.annotation in (bool, int, float) else str
    assert isinstance(kind, type)
    paths = tuple(("task_options", *owner) for owner in owners)
    choices = getattr(field.annotation, "__args__", None)
    text = help_ or field.description or ""
    if kind is str and choices:
        text += f" ({' | '.join(str(c) for c in choices)})"
    value = True if kind is bool else None
    return Flag(tuple(decls), dest, paths, kind, text, value=value, panel=TASK_OPTIONS)


@functools.cache
def all_flags() -> tuple[Flag, ...]:
    return (*FLAGS, *task_option_flags())


SPEC_FLAGS: Final = (
    Flag(
        ("--spec",),
        "spec",
        (),
        Path,
        "A TOML run spec to start from; flags given beside it override it.",
        panel=OUTPUT,
    ),
    Flag(
        ("--print-spec",),
        "print_spec",
        (),
        bool,
        "Print the effective run spec as TOML (the run directory included) and exit.",
        panel=OUTPUT,
    ),
)
"""``--spec FILE.toml`` and ``--print-spec``: read by :func:`make_spec` and :attr:`FlagValues.print_spec`."""


@functools.cache
def run_flags() -> tuple[Flag, ...]:
    """Every run flag, with ``--spec`` and ``--print-spec``."""
    return (*all_flags(), *SPEC_FLAGS)


@functools.cache
def endpoint_flags() -> tuple[Flag, ...]:
    """``run``'s endpoint, generation and engine flags but ``--model`` (the command names its models)."""
    return (*MODEL_FLAGS[1:], *setting_flags(), *ENGINE_FLAGS)


@functools.cache
def model_flags() -> tuple[Flag, ...]:
    """``run``'s model, generation and engine flags."""
    return (*MODEL_FLAGS, *setting_flags(), *ENGINE_FLAGS)


SpecCommand = with_flags(run_flags)
"""A command that also takes every run flag (``run``, ``estimate``, ``batch export``)."""
OptionsCommand = with_flags(task_option_flags)
"""A command that takes the tasks' own option flags (as ``run`` names them); read them with
:func:`task_options`."""
EndpointCommand = with_flags(endpoint_flags)
"""A command that asks models it names itself (``score``'s judges) with ``run``'s endpoint, generation and
engine flags, their defaults included; read them with :func:`model_settings`."""
ModelCommand = with_flags(model_flags)
"""A command that asks one model (``annotate draft``) with ``run``'s model, generation and engine flags,
their defaults included; read them with :func:`model_settings`."""


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """The model table (name, endpoint, generation settings) and the engine settings flags give."""

    model: dict[str, Any]
    """Only what was given: a ``[model]`` table of a spec."""
    engine: EngineSpec
    labels: dict[Path_, str]
    """Spec field -> the flag that set it, for errors (:func:`rescue_bench.spec.validate_table`)."""

    def validate(self, table: type[ModelT], *, name_flag: str = "--model", **fields: object) -> ModelT:
        """The model table, ``fields`` replacing its keys, as ``table`` (a ``ModelSpec`` or ``JudgeSpec``); a
        one-line :class:`ConfigError` naming the flag (``name_flag`` for the name) if it is not valid."""
        labels = {**self.labels, ("model", "name"): name_flag}
        names = {**flag_names(), ("model", "name"): name_flag, ("model",): name_flag}
        return validate_table(table, {**self.model, **fields}, at=("model",), labels=labels, flags=names)


def model_settings(flags: FlagValues) -> ModelSettings:
    """What the model, generation and engine flags of an :class:`EndpointCommand` or :class:`ModelCommand`
    give, with ``run``'s defaults for the rest (a bad engine value is a one-line error naming its flag)."""
    # Every one of these flags sets a field of the ``model`` or the ``engine`` table.
    tables: dict[str, dict[str, Any]] = {"model": {}, "engine": {}}
    labels: dict[Path_, str] = {}
    for flag in (*MODEL_FLAGS, *setting_flags(), *ENGINE_FLAGS):
        value = flags.given(flag.dest)
        if value is not None:
            for dotted in flag.paths:
                put(tables, dotted, plain_value(flag, value))
                labels[dotted] = written(flag, value)
    engine = validate_table(EngineSpec, tables["engine"], at=("engine",), labels=labels, flags=flag_names())
    return ModelSettings(tables["model"], engine, labels)


def task_options(flags: FlagValues) -> dict[str, dict[str, object]]:
    """Task name -> the option values given on the command line (``RunSpec.task_options``' shape)."""
    given: dict[str, dict[str, object]] = {}
    for flag in task_option_flags():
        value = flags.given(flag.dest)
        if value is None:
            continue
        for _, task, name in flag.paths:
            given.setdefault(task, {})[name] = plain_value(flag, value)
    return given


def make_spec(flags: FlagValues, *, out: Path | None = None) -> RunSpec:
    """The run spec of ``--spec`` (if given) with the flags given beside it applied; checked in full."""
    path = flags.given("spec")
    data: dict[str, Any] = load_spec(Path(str(path))) if path is not None else {}
    where: dict[Path_, str] = {}
    for flag in all_flags():
        value = flags.given(flag.dest)
        if value is None or not flag.paths:
            continue
        for dotted in flag.paths:
            put(data, dotted, plain_value(flag, value))
            where[dotted] = written(flag, value)
    names = flags.given("judge")
    if isinstance(names, list | tuple):
        data["judges"] = [{"name": n} for n in names]
        where[("judges",)] = "--judge"
    ids = flags.given("sample_ids")
    if ids is not None:
        data["sample_ids"] = list(parse_sample_ids(Path(str(ids))))
        where[("sample_ids",)] = "--sample-ids"
    if out is not None:
        data["out"] = str(out)
    where_ = f"--spec {path}" if path is not None else ""
    spec = validate_spec(data, where=where_, labels=where, flags=flag_names())
    return _judge_endpoints(spec, flags)


@functools.cache
def flag_names() -> dict[Path_, str]:
    """Spec field -> the flag that sets it, for errors about a field the user did not give
    (:func:`rescue_bench.spec.validate_spec`); ``model`` itself is ``--model``'s."""
    names = {path: flag.decls[0].split("/")[0] for flag in all_flags() for path in flag.paths}
    return {**names, ("model",): "--model"}


def _judge_endpoints(spec: RunSpec, flags: FlagValues) -> RunSpec:
    """``--judge-base-url`` / ``--judge-api-key-env`` are the default endpoint of the judges.

    A spec file's ``[[judges]]`` give each judge every key of a model (endpoint, key variable, generation
    settings, concurrency); the two flags fill in only the endpoint of a judge that names none. No check of
    the spec reads a judge's endpoint, so filling it in after the check leaves the spec as valid as it was.
    """
    base_url, key_env = flags.given("judge_base_url"), flags.given("judge_api_key_env")
    if (base_url is None and key_env is None) or not spec.judges:
        return spec  # as validated: a study reads the fields a command line set (``exclude_unset``)
    judges = []
    for judge in spec.judges:
        update: dict[str, str] = {}
        if base_url is not None and judge.base_url is None:
            update["base_url"] = str(base_url)
        if key_env is not None and judge.api_key_env is None:
            update["api_key_env"] = str(key_env)
        judges.append(judge.model_copy(update=update))
    return spec.model_copy(update={"judges": tuple(judges)})
