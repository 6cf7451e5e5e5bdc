"""Typed records of the run directory's files (docs/design.md, "Run directory").

Each is a frozen pydantic model that forbids unknown keys: a misspelt field in a file is an error naming the
file, the line and the field, and a misspelt attribute in code fails mypy. ``to_json`` gives the same keys,
in the same order, as the documented format; ``from_json`` reads one object (a line, or a JSON file).
Fields a line may leave out have defaults.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rescue_bench.records import Json, ProblemKind, Usage, problem_kinds
from rescue_bench.rundir.files import RunDirError

Number = float | int | None
"""A metric value as stored: ``null`` when not measured (an unscored judge verdict)."""


class Line(BaseModel):
    """Base of the run-directory records."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def from_json(cls, obj: Mapping[str, Json], where: str = "") -> Self:
        """Read one record; ``where`` (``file:line``) prefixes the one-line error."""
        try:
            return cls.model_validate(obj)
        except ValidationError as exc:
            raise RunDirError(_first_error(exc, where or cls.__name__)) from None

    def to_json(self) -> dict[str, Json]:
        return self.model_dump(mode="json")


def _first_error(exc: ValidationError, where: str) -> str:
    errors = exc.errors()
    first = errors[0]
    field = ".".join(str(part) for part in first["loc"]) or "(record)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: field {field!r}: {first['msg']}{more}"


QUOTED_META: Final = frozenset({"utterance"})
"""Keys of a prediction line's ``meta`` that quote the conversation: every ``--redact`` leaves them out."""


class PredictionLine(Line):
    """One line of ``predictions.jsonl``: an instance, its parsed answer, and the task's scores."""

    instance_id: str
    task: str
    sample_id: str = ""
    scenario: str = ""
    row_index: int = 0
    gold: Json = None
    valid: bool = False
    prediction: Json = None
    problems: tuple[str, ...] = ()
    meta: dict[str, Json] | None = None
    scores: dict[str, Number] = Field(default_factory=dict)
    request_key: str | None = None
    single: bool = False
    repeat: int = Field(0, ge=0)
    """Which ask of the instance this is (``repeats``, CircularEval rotations); written only when > 0."""
    reason: str | None = None
    """The answer's own short ``reason`` (absent when the answer gave none)."""

    @property
    def key(self) -> str:
        """The line's identity in a run: its instance id, and its repeat when > 0 (:func:`line_key`)."""
        return line_key(self.instance_id, self.repeat)

    def shown_meta(self, redact: bool) -> dict[str, Json]:
        """The instance's ``meta`` to show: without what quotes the conversation when ``redact``
        (:data:`QUOTED_META`).

        >>> meta = {"utterance": "I miss you", "timestamp": "1:02"}
        >>> line = PredictionLine(instance_id="i", task="er", meta=meta)
        >>> line.shown_meta(True), len(line.shown_meta(False))
        ({'timestamp': '1:02'}, 2)
        """
        meta = dict(self.meta or {})
        return {k: v for k, v in meta.items() if k not in QUOTED_META} if redact else meta

    def meta_text(self, key: str) -> str | None:
        """A text of the instance's ``meta`` (ER/VP: ``timestamp``, ``utterance``), ``None`` when absent."""
        value = (self.meta or {}).get(key)
        return value if isinstance(value, str) else None

    def to_json(self) -> dict[str, Json]:
        return self.model_dump(
            mode="json", exclude=_left_out(repeat=self.repeat == 0, reason=self.reason is None)
        )

    @property
    def kinds(self) -> tuple[ProblemKind, ...]:
        return problem_kinds(self.problems)

    @property
    def answered(self) -> bool:
        """Whether the instance got an answer: not a request that failed (``request_failed: ...``), which is
        unfinished work and never part of a number (docs/reliability.md).

        >>> PredictionLine(instance_id="i", task="itp", problems=("request_failed: HTTP 503",)).answered
        False
        """
        return (
            self.valid
            or not self.problems
            or ProblemKind.of(self.problems[0]) is not ProblemKind.REQUEST_FAILED
        )

    @property
    def speaker(self) -> str | None:
        return self.meta_text("speaker")


class ReplyText(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = ""
    reasoning: str | None = None
    finish_reason: str | None = None
    model: str | None = None
    """The model the endpoint said answered, when it said."""
    system_fingerprint: str | None = None


class RequestLine(Line):
    """One line of ``requests.jsonl``: one request's outcome."""

    request_key: str = ""
    cache_key: str | None = None
    task: str = ""
    instance_ids: tuple[str, ...] = ()
    single: bool = False
    attempts: int = 1
    latency: float = 0.0
    usage: Usage = Usage()
    error: str | None = None
    cached: bool = False
    masked: bool = False
    refused: bool = False
    reply: ReplyText = ReplyText()
    response_format: str | None = None
    """How the answer was asked for (``json_schema``, ``json_object+schema``, ``json_object``, ``text``)."""
    time: float | None = None
    repeat: int = Field(0, ge=0)
    """The repeat its instances were asked for; written only when > 0."""

    def to_json(self) -> dict[str, Json]:
        return self.model_dump(mode="json", exclude=_left_out(repeat=self.repeat == 0))


class JudgmentLine(Line):
    """One line of ``judgments.jsonl``: one judge's verdict on one instance (or its BERTScore)."""

    instance_id: str
    task: str
    judge: str
    valid: bool
    scores: dict[str, Number] = Field(default_factory=dict)
    problems: tuple[str, ...] = ()
    raw: Json = None
    prediction_hash: str | None = None
    """Hash of the prediction this line scored; lines without it predate the field and count as current."""
    repeat: int = Field(0, ge=0)
    """The repeat of the prediction it scored (``repeats``); written only when > 0."""
    judge_repeat: int = Field(0, ge=0)
    """Which ask of the judge this is (``judge_repeats``); written only when > 0."""

    @property
    def key(self) -> str:
        """The :attr:`PredictionLine.key` of the prediction it scored."""
        return line_key(self.instance_id, self.repeat)

    def to_json(self) -> dict[str, Json]:
        return self.model_dump(
            mode="json", exclude=_left_out(repeat=self.repeat == 0, judge_repeat=self.judge_repeat == 0)
        )

    def raw_field(self, key: str) -> Json:
        """A key of ``raw`` (an object for verdicts and BERTScore lines), else ``None``."""
        return self.raw.get(key) if isinstance(self.raw, dict) else None


def line_key(instance_id: str, repeat: int = 0) -> str:
    """What identifies a prediction line in a run: the instance id for repeat 0 (every run before repeats),
    else the id and the repeat, so that each (instance, repeat) is recorded, resumed and compacted once.

    >>> line_key("s1::rpp::3"), line_key("s1::rpp::3", 2)
    ('s1::rpp::3', 's1::rpp::3#2')
    """
    return instance_id if repeat == 0 else f"{instance_id}#{repeat}"


def _left_out(**when: bool) -> set[str]:
    """The optional fields a line leaves out: ``repeat`` (and ``judge_repeat``) is written only when > 0, so
    a run without repeats has the same bytes as before repeats existed; ``reason`` only when the answer gave
    one.

    >>> sorted(_left_out(repeat=True, reason=False))
    ['repeat']
    """
    return {name for name, out in when.items() if out}


L = TypeVar("L", bound=Line)


def typed_lines(records: Iterable[tuple[int, dict[str, Json]]], kind: type[L], path: Path) -> list[L]:
    """Typed records of numbered JSONL lines, each error naming ``path:line``."""
    return [kind.from_json(record, f"{path}:{number}") for number, record in records]
