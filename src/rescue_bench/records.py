"""Records that cross module borders: instances, requests, replies, predictions and scores.

Data flows one way (see docs/architecture.md):
``Sample -> Instance -> Request -> Reply -> Prediction -> Score``.
Every record is frozen and JSON-serialisable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter

Json = Any
"""A JSON-serialisable value (dict, list, str, int, float, bool or None)."""

TaskKind = Literal["binary", "multiclass", "ranking", "generation"]
Mode = Literal["dialogue", "audio", "visual", "audiovisual", "video"]
"""What a transcript line carries besides the words (``tasks.context``); ``video`` attaches clips too."""
RowRecord = dict[str, Json]
"""``{"row_index": int, "line": str}``: a rendered row, shared by the instances of a sample: read-only."""


class ProblemKind(StrEnum):
    """What a problem string of a prediction or judgment is about: the text before its first ``:``.

    Problems are written as ``"<kind>: <detail>"`` (docs/design.md); the kind decides how the problem counts
    (a parse failure, an invalid label, a mere note).
    """

    REQUEST_FAILED = "request_failed"
    """No answer: the request failed for good (unfinished work, asked again by a re-run)."""
    REFUSED = "refused"
    """The endpoint's moderation refused the prompt: an answer that fails, scored as a miss."""
    PARSE_FAILURE = "parse_failure"
    MISSING = "missing"
    INVALID_LABEL = "invalid_label"
    NORMALIZED = "normalized"
    TRUNCATED = "truncated"
    VIDEO = "video"
    OUT_OF_RANGE = "out_of_range"
    REASKED = "reasked"
    AFTER_REASK = "after re-ask"
    PREDICTION_INVALID = "prediction_invalid"
    OTHER = "other"
    """Any problem whose text names no known kind."""

    @classmethod
    def of(cls, problem: str) -> ProblemKind:
        """The kind of one problem string.

        >>> ProblemKind.of("parse_failure: empty reply"), ProblemKind.of("video: no clip for row 3")
        (<ProblemKind.PARSE_FAILURE: 'parse_failure'>, <ProblemKind.VIDEO: 'video'>)
        >>> ProblemKind.of("something else")
        <ProblemKind.OTHER: 'other'>
        """
        head = problem.split(":", 1)[0].strip()
        try:
            return cls(head)
        except ValueError:
            return cls.OTHER

    @property
    def unreadable(self) -> bool:
        """Whether the answer could not be read at all (counted as a parse failure)."""
        return self in (
            ProblemKind.PARSE_FAILURE,
            ProblemKind.MISSING,
            ProblemKind.REQUEST_FAILED,
            ProblemKind.REFUSED,
        )


def problem_kinds(problems: tuple[str, ...] | list[str]) -> tuple[ProblemKind, ...]:
    """The kind of each problem, in order."""
    return tuple(ProblemKind.of(p) for p in problems)


@dataclass(frozen=True, slots=True)
class Shown:
    """What an instance's prompt shows, as ``build`` hands it to ``render`` (gold-free, never written to a
    file); each task fills the fields its prompt uses."""

    mode: Mode
    size: int
    """The context size the rows were cut with: -1 all earlier rows, 0 none, N the last N."""
    rows: tuple[RowRecord, ...] = ()
    """The earlier rows shown, the records themselves (shared with the sample's other instances)."""
    current: RowRecord | None = None
    """The row the item is about, when shown (ER, VP; RPP with its option)."""
    speaker: str | None = None
    """Who speaks at that row (ER, VP, RPP)."""
    participants: tuple[str, ...] = ()
    """The people line (RPP, STP, SSP, VP)."""
    target: str | None = None
    """Whom the next move addresses (SSP)."""
    target_emotion: str | None = None
    """The target's latest emotion in the rows shown, ``""`` for none, ``None`` when not asked (SSP)."""
    extra: dict[str, Json] = field(default_factory=dict)
    """Anything else a task's prompt shows (an outside task's own facts)."""


@dataclass(frozen=True, slots=True)
class Instance:
    """One test item of one task."""

    id: str
    """Stable id ``<sample_id>::<task>::<row>``; never shown to a model."""
    task: str
    sample_id: str
    scenario: Literal["couple", "family"]
    row_index: int
    """The row the item is about (ITP: the decision row; others: the target row)."""
    gold: Json
    """The gold answer in the task's own shape."""
    candidates: tuple[str, ...] = ()
    """The closed answer set shown to the model (labels or target names)."""
    context: Shown | None = None
    """Everything the prompt shows for this instance (rendered transcript records), already gold-free."""
    meta: dict[str, Json] = field(default_factory=dict)
    """Facts for reports (relative position, speaker, gold source...); never shown to a model."""

    def to_json(self) -> dict[str, Json]:
        return {
            "instance_id": self.id,
            "task": self.task,
            "sample_id": self.sample_id,
            "scenario": self.scenario,
            "row_index": self.row_index,
            "gold": self.gold,
            "candidates": list(self.candidates),
            "meta": self.meta,
        }


class ContentPart(BaseModel):
    """One part of a message's content list: a text part (``{"type": "text", "text": ...}``) or a media part
    (``image_url``, ``video_url``...). Only its type and text are read; the part is sent as written."""

    model_config = ConfigDict(frozen=True)

    type: str
    text: str | None = None


_PARTS: TypeAdapter[list[ContentPart]] = TypeAdapter(list[ContentPart])


class ChatMessage(BaseModel):
    """One chat message of a request: its role and its content (a string, or a list of content parts)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str
    content: Json = None

    def parts(self) -> list[ContentPart] | None:
        """The content's parts, typed, when it is a list (``None`` otherwise); ``ValueError`` naming the part
        for one that is not an object with a string ``type`` (and a string ``text``, if any).

        >>> chat_message({"role": "user", "content": [{"type": "text", "text": "Hi"}]}).parts()
        [ContentPart(type='text', text='Hi')]
        >>> chat_message({"role": "user", "content": "Hi"}).parts() is None
        True
        """
        return _PARTS.validate_python(self.content) if isinstance(self.content, list) else None


def chat_message(message: Mapping[str, Json]) -> ChatMessage:
    """A request's message, typed (``ValueError`` for one without a role or with unknown keys)."""
    return ChatMessage.model_validate(message)


@dataclass(frozen=True, slots=True)
class Request:
    """A rendered model request for a batch of instances of one task."""

    task: str
    messages: tuple[dict[str, Json], ...]
    """Chat messages (``role`` + ``content``); content may be a string or a list of content parts."""
    response_schema: dict[str, Json]
    """JSON schema of the expected answer."""
    instance_ids: tuple[str, ...]
    """Instance ids in batch order; the prompt refers to them only as ``c1``, ``c2``, ..."""
    max_tokens: int = 1024
    prompt_hash: str = ""
    """Hash of the task's prompt template (not of the filled prompt)."""

    @property
    def opaque_ids(self) -> tuple[str, ...]:
        return tuple(f"c{i}" for i in range(1, len(self.instance_ids) + 1))

    def content_key(self) -> str:
        """sha256 of the messages and schema: equal for identical prompts."""
        blob = json.dumps(
            [self.messages, self.response_schema, self.max_tokens],
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of a reply; also the ``usage`` of a request line and of a judge's counts, as recorded."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # a misspelt key in a run file is an error
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass(frozen=True, slots=True)
class Reply:
    """What a provider returned for one request (or why it did not)."""

    text: str = ""
    reasoning: str | None = None
    """Reasoning output, kept apart from the answer."""
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    error: str | None = None
    """Set when the request failed for good; ``text`` is then empty."""
    finish_reason: str | None = None
    cached: bool = False
    attempts: int = 1
    predictions: tuple[Prediction, ...] | None = None
    """Answers already in the task's shape (the baselines): recorded as they are, ``text`` is not parsed."""
    model: str | None = None
    """The model the endpoint says answered (its reply's ``model``), when it says."""
    system_fingerprint: str | None = None
    """The backend configuration the endpoint says answered (``system_fingerprint``), when it says."""
    response_format: str | None = None
    """How the answer was asked for (``json_schema``, ``json_object+schema``, ``json_object``, ``text``);
    ``None`` for a provider without response formats."""

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def failure(cls, error: str, *, latency: float = 0.0, attempts: int = 1) -> Reply:
        return cls(error=error, latency=latency, attempts=attempts)


@dataclass(frozen=True, slots=True)
class Prediction:
    """A parsed answer for one instance; ``valid=False`` means it scores as a miss and is counted."""

    instance_id: str
    value: Json
    valid: bool
    problems: tuple[str, ...] = ()
    """Why the prediction is invalid or what was repaired (``parse_failure: ...``, ``invalid_label: ...``,
    ``normalized: 'Track' -> 'track'``)."""
    reason: str | None = None
    """The answer's own short ``reason`` field, kept for the judges (the reference judge sees it)."""

    @classmethod
    def failed(cls, instance_id: str, reason: str) -> Prediction:
        return cls(instance_id, None, False, (reason,))

    @property
    def kinds(self) -> tuple[ProblemKind, ...]:
        return problem_kinds(self.problems)

    @property
    def parse_failure(self) -> bool:
        return any(kind.unreadable for kind in self.kinds)

    @property
    def invalid_label(self) -> bool:
        return ProblemKind.INVALID_LABEL in self.kinds

    def to_json(self) -> dict[str, Json]:
        return {
            "instance_id": self.instance_id,
            "valid": self.valid,
            "prediction": self.value,
            "problems": list(self.problems),
        }


@dataclass(frozen=True, slots=True)
class Score:
    """Per-instance metric values (e.g. ``correct``, ``recall_at_1``, ``mrr``, ``s_int``)."""

    instance_id: str
    metrics: dict[str, float]
