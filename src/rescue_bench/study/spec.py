"""The study spec: a run spec with a list of models (and of perturbations), and the runs it stands for.

A study file is a run spec (:class:`~rescue_bench.spec.RunSpec`) without ``model``, plus ``[[models]]``
tables (each a :class:`~rescue_bench.spec.ModelSpec`), ``perturb = [...]`` (each entry a comma list of
perturbations, ``""`` the unperturbed base; ``context-curve`` stands for ``context:0``, ``1``, ``3``, ``5``
and ``all``) and ``context_curve = true`` (the same curve). Each (model, perturbation) is one ordinary run
spec (:meth:`StudySpec.runs`), derived from the study's own fields, so a key added to the run spec is a key
of a study with no edit here.

Layout: ``<out>/<model>/`` holds the unperturbed run of each model, ``<out>/<model>/<perturbation>/`` a
perturbed one; ``<model>`` is the model name with unsafe characters replaced (two models of one name get a
short hash of their settings added), ``<perturbation>`` the comma list with ``:`` as ``-`` and ``,`` as ``+``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)

from rescue_bench.errors import ConfigError
from rescue_bench.spec import ModelSpec, RunSpec, named_entries, to_toml, validate_spec
from rescue_bench.spec.toml_text import FREE_TABLE, no_null
from rescue_bench.tasks.perturb import parse_perturbations

CONTEXT_CURVE: Final = ("context:0", "context:1", "context:3", "context:5", "context:all")
"""The history lengths of ``context-curve`` (N in {0, 1, 3, 5, all} earlier rows)."""
CURVE_NAME: Final = "context-curve"
STUDY_KEYS: Final = ("models", "perturb", "context_curve")
"""The keys a study has beyond (or instead of) the run spec's."""
DEFAULT_OUT: Final = Path("studies") / "study"
PLACEHOLDER: Final = "study/none"
"""The base run spec's model when the study names none (the ``models`` error is then the one reported)."""


@dataclass(frozen=True, slots=True)
class StudyRun:
    """One run of a study: which model and perturbation, its directory, and its ordinary run spec."""

    index: int
    model: str
    perturbation: str
    """The comma list (``""``: unperturbed)."""
    out: Path
    spec: RunSpec

    @property
    def label(self) -> str:
        """``provider/model`` or ``provider/model (perturbation)``: the leaderboard's row name."""
        return f"{self.model} ({self.perturbation})" if self.perturbation else self.model


class StudySpec(BaseModel):
    """Many models over one data set, task list and settings (``base``), each maybe under perturbations."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    models: tuple[ModelSpec, ...] = Field(min_length=1, description="The models of the study.")
    perturb: tuple[str, ...] = Field(("",), description="Perturbation variants ('' = unperturbed).")
    context_curve: StrictBool = Field(False, description="Add the context:0,1,3,5,all variants.")
    base: RunSpec
    """Every other key, as a run spec (its model is the first model; ``perturb`` empty)."""

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, data: object) -> object:
        """A flat study table (a run spec's keys with ``models``) becomes ``models`` + ``base``."""
        if not isinstance(data, Mapping) or "base" in data:
            return data
        if "model" in data:
            raise ValueError("model: a study lists its models as [[models]] tables (or --model, repeated)")
        rest = {k: v for k, v in data.items() if k not in STUDY_KEYS}
        ours = {k: data[k] for k in STUDY_KEYS if k in data}
        # The base is checked with the placeholder model (the models are checked on their own); it gets the
        # first of them once they are (:meth:`_first_model`).
        return {**ours, "base": {**rest, "model": PLACEHOLDER}}

    @model_validator(mode="wrap")
    @classmethod
    def _first_model(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        study = handler(data)
        return study.model_copy(update={"base": study.base.model_copy(update={"model": study.models[0]})})

    @field_validator("models", mode="before")
    @classmethod
    def _model_names(cls, value: object) -> object:
        return named_entries(value, "models")

    @field_validator("perturb", mode="before")
    @classmethod
    def _variants(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple):
            return value
        out: list[str] = []
        for entry in (str(v) for v in value):
            for variant in CONTEXT_CURVE if entry.strip() == CURVE_NAME else (entry,):
                out.append(_canonical(variant))
        if len(set(out)) != len(out):
            raise ValueError("a perturbation variant is listed twice")
        return out

    @field_validator("base")
    @classmethod
    def _unperturbed(cls, base: RunSpec) -> RunSpec:
        if base.perturb:
            raise ValueError("internal: the base spec of a study is unperturbed")
        return base

    def variants(self) -> tuple[str, ...]:
        """The perturbation variants, in order, the context curve added when asked for."""
        curve = CONTEXT_CURVE if self.context_curve else ()
        return tuple(dict.fromkeys((*self.perturb, *(_canonical(c) for c in curve))))

    @property
    def out(self) -> Path:
        return self.base.out or DEFAULT_OUT

    def runs(self) -> list[StudyRun]:
        """Every (model, variant) as an ordinary run spec, in model then variant order."""
        slugs = model_slugs(self.models)
        runs: list[StudyRun] = []
        for model, slug in zip(self.models, slugs, strict=True):
            for variant in self.variants():
                where = self.out / slug / perturb_slug(variant) if variant else self.out / slug
                spec = self.base.model_copy(
                    update={"model": model, "perturb": _perturbations(variant), "out": where}
                )
                runs.append(StudyRun(len(runs), model.name, variant, where, spec))
        return runs

    def to_table(self) -> dict[str, Any]:
        """The flat study table (what a study file holds), as JSON values."""
        base = self.base.model_dump(mode="json", exclude={"model", "perturb"})
        models = [m.model_dump(mode="json") for m in self.models]
        return {**base, "perturb": list(self.perturb), "context_curve": self.context_curve, "models": models}

    def to_toml(self) -> str:
        """The study file: the run spec's keys, then ``[[judges]]`` and ``[[models]]`` tables."""
        table = self.to_table()
        arrays = {key: table.pop(key) for key in ("judges", "models")}
        lines = [to_toml(table)]
        for name, items in arrays.items():
            for number, item in enumerate(items):
                if FREE_TABLE in item:
                    no_null(item[FREE_TABLE], (name, str(number), FREE_TABLE))
                lines.append(f"\n[[{name}]]\n")
                lines += [f"{key} = {_inline(value)}\n" for key, value in item.items() if value is not None]
        return "".join(lines)


def _inline(value: object) -> str:
    """A TOML value, tables inline (``extra_body = { a = 1 }``); scalars as the run spec writes them."""
    if isinstance(value, Mapping):
        inner = ", ".join(f"{json.dumps(str(k))} = {_inline(v)}" for k, v in value.items() if v is not None)
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    return to_toml({"v": value}).partition(" = ")[2].rstrip("\n")


def _canonical(variant: str) -> str:
    """A variant as the run spec writes it (``"name-swap, context:5"`` -> ``"name-swap,context:5"``)."""
    try:
        return ",".join(str(p) for p in parse_perturbations(variant))
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def _perturbations(variant: str) -> tuple[str, ...]:
    return tuple(str(p) for p in parse_perturbations(variant))


def slug(text: str) -> str:
    """A directory name: letters, digits, ``.``, ``_``, ``-`` and ``+``; anything else becomes ``-``.

    >>> slug("openai/gpt-4o-mini"), perturb_slug("context:0,name-swap")
    ('openai-gpt-4o-mini', 'context-0+name-swap')
    """
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip("-") or "x"


def perturb_slug(variant: str) -> str:
    return slug(variant.replace(",", "+"))


def model_slugs(models: tuple[ModelSpec, ...]) -> list[str]:
    """Each model's directory name; models that share a name get a hash of their settings added."""
    names = [slug(m.name) for m in models]
    out = []
    for name, model in zip(names, models, strict=True):
        if names.count(name) > 1:
            digest = hashlib.sha256(json.dumps(model.model_dump(mode="json"), sort_keys=True).encode())
            name = f"{name}_{digest.hexdigest()[:8]}"
        out.append(name)
    if len(set(out)) != len(out):
        raise ConfigError("models: the same model is listed twice with the same settings")
    return out


def validate_study(data: Mapping[str, Any], *, where: str = "") -> StudySpec:
    """A :class:`StudySpec` of a flat study table, or a one-line :class:`ConfigError` naming the key (and
    the file), in :func:`rescue_bench.spec.validate_spec`'s words."""
    rest = {k: v for k, v in data.items() if k not in STUDY_KEYS and k != "model"}
    if "model" not in data:
        # The run spec's own check first, so that its errors name the key as in a run spec file (the models'
        # errors come next, as models.<i>.<key>).
        validate_spec({**rest, "model": PLACEHOLDER}, where=where)
    try:
        study = StudySpec.model_validate(dict(data))
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        loc = tuple(str(p) for p in error["loc"])
        loc = loc[1:] if loc[:1] == ("base",) else loc
        message = "unknown key" if error["type"] == "extra_forbidden" else str(error["msg"])
        message = message.removeprefix("Value error, ")
        # ``models`` is checked first: absent or empty, it is the first error (a bad model comes before).
        if error["loc"] == ("models",) and error["type"] in ("missing", "too_short"):
            loc, message = ("models",), "a study needs at least one [[models]] table (or --model)"
        raise ConfigError(": ".join(p for p in (where, ".".join(loc), message) if p)) from None
    model_slugs(study.models)
    return study
