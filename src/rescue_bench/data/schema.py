"""Typed, frozen records for RESCUE-Bench data.

A :class:`Sample` is one conversation, a :class:`Row` one turn.

The records accept the official release as it is:

* a key may be absent, ``null`` or ``""``; nothing is invented and :meth:`Row.to_release` writes back
  only what was read;
* visual cues may be lists of ``{person, description}`` or plain strings;
* ``target`` may be a list or a single string; evidence-row lists may contain row 0;
* relation patterns come as ``relation_cycle_state`` and/or ``relation_pattern`` (with reasons and
  evidence rows);
* unknown keys are kept (``extra="allow"``) so an export loses nothing.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rescue_bench.taxonomy import NON_CLIENT_SPEAKERS, THERAPIST, Scenario

_FROZEN = ConfigDict(frozen=True, extra="allow", populate_by_name=True)


def _as_names(value: Any) -> Any:
    """``None`` -> ``()``, ``"Alan"`` -> ``("Alan",)``; lists pass through for element validation."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    return value


def _none_to_empty(value: Any) -> Any:
    return () if value is None else value


class Cue(BaseModel):
    """A visual cue: who shows it and what it looks like. A plain-string cue has no ``person``."""

    model_config = _FROZEN
    person: str | None = None
    description: str | None = None


class BackgroundLine(BaseModel):
    """Speech overlapping the main turn."""

    model_config = _FROZEN
    speaker: str | None = None
    target: tuple[str, ...] = ()
    content: str | None = None

    _names = field_validator("target", mode="before")(_as_names)


class Interaction(BaseModel):
    """A directed nonverbal behaviour (gaze, touch, gesture) from one person to others."""

    model_config = _FROZEN
    initiator: str | None = None
    target: tuple[str, ...] = ()
    description: str | None = None

    _names = field_validator("target", mode="before")(_as_names)


class Emotion(BaseModel):
    """An inferred internal emotion of one person, with intensity 0-10."""

    model_config = _FROZEN
    person: str | None = None
    emotion_description: str | None = None
    intensity: float | str | None = None

    @property
    def intensity_value(self) -> int | None:
        """The intensity as an integer 0-10 (rounded half to even, as the reference code), or ``None``."""
        return parse_intensity(self.intensity)


class Viewpoint(BaseModel):
    """A directed viewpoint: what ``source`` thinks of ``target``, and with which attitude."""

    model_config = _FROZEN
    source: str | None = None
    target: str | None = None
    viewpoint: str | None = None
    attitude: str | None = None


class Strategy(BaseModel):
    """A therapist's support move: which strategy, aimed at whom."""

    model_config = _FROZEN
    provider: str | None = None
    target: tuple[str, ...] = ()
    strategy_type: str | None = None
    strategy_content: str | None = None

    _names = field_validator("target", mode="before")(_as_names)


class Row(BaseModel):
    """One annotated turn, with the six annotation dimensions of the benchmark."""

    model_config = _FROZEN

    row_index: int
    """1-based position in the sample."""
    # timing and entity
    start_time: float | None = None
    end_time: float | None = None
    primary_speaker: str | None = None
    target: tuple[str, ...] = ()
    # verbal content
    dialogue_cleaned: str | None = None
    utterance_type: str | None = None
    background_dialogue: tuple[BackgroundLine, ...] = ()
    # individual cues
    tone_of_voice: str | None = None
    body_posture: tuple[Cue, ...] = ()
    facial_expressions: tuple[Cue, ...] = ()
    self_directed_behavior: tuple[Cue, ...] = ()
    internal_emotion: tuple[Emotion, ...] = ()
    # relational stance
    interaction_behavior: tuple[Interaction, ...] = ()
    viewpoints_attitudes: tuple[Viewpoint, ...] = ()
    # therapist strategy
    support_strategy: tuple[Strategy, ...] = ()
    # relation pattern (two fields in the release; see tasks.rpp for which one is gold)
    relation_cycle_state: str | None = None
    relation_cycle_reason: str | None = None
    relation_cycle_evidence_rows: tuple[int, ...] = ()
    relation_pattern: str | None = None
    relation_pattern_reason: str | None = None
    relation_pattern_evidence_rows: tuple[int, ...] = ()

    _names = field_validator("target", mode="before")(_as_names)
    _lists = field_validator(
        "background_dialogue",
        "internal_emotion",
        "interaction_behavior",
        "viewpoints_attitudes",
        "support_strategy",
        "relation_cycle_evidence_rows",
        "relation_pattern_evidence_rows",
        mode="before",
    )(_none_to_empty)

    @field_validator("body_posture", "facial_expressions", "self_directed_behavior", mode="before")
    @classmethod
    def _cues(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, str):
            return ({"description": value},) if value.strip() else ()
        if isinstance(value, list | tuple):
            return tuple({"description": v} if isinstance(v, str) else v for v in value)
        return value

    @field_validator("start_time", "end_time")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("time must be a finite number")
        return value

    # -- convenience ---------------------------------------------------------------------------------------
    @property
    def speaker(self) -> str:
        return (self.primary_speaker or "").strip()

    @property
    def is_therapist(self) -> bool:
        return self.speaker == THERAPIST

    @property
    def is_client(self) -> bool:
        """Spoken by a participant (not the therapist, not a group speaker)."""
        return bool(self.speaker) and self.speaker not in NON_CLIENT_SPEAKERS

    @property
    def text(self) -> str:
        return (self.dialogue_cleaned or "").strip()

    @property
    def targets(self) -> tuple[str, ...]:
        """Cleaned, non-empty row targets."""
        return tuple(t.strip() for t in self.target if isinstance(t, str) and t.strip())

    def to_release(self) -> dict[str, Any]:
        """The row as a release-format dict, with exactly the keys that were read (or set)."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)


class Sample(BaseModel):
    """One conversation: its rows and who takes part."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sample_id: str
    scenario: Scenario
    participants: tuple[str, ...]
    """On-screen participants in order of first appearance; never ``Therapist``, ``Couple`` or ``Family``."""
    rows: tuple[Row, ...]
    source_file: str | None = None
    """The release's ``source_file`` field, when present."""
    origin: str | None = Field(default=None, exclude=True)
    """Where this sample was read from (``file:line``); not part of the data."""

    @property
    def group_label(self) -> Literal["Couple", "Family"]:
        return "Family" if self.scenario == "family" else "Couple"

    @property
    def duration_sec(self) -> float:
        """Last row's end time minus first row's start time (0 when unknown)."""
        if not self.rows:
            return 0.0
        start = self.rows[0].start_time or 0.0
        end = self.rows[-1].end_time or 0.0
        return max(0.0, end - start)

    def row(self, row_index: int) -> Row:
        return self.rows[row_index - 1]

    def to_release(self) -> dict[str, Any]:
        """The sample as one release-format JSONL object."""
        out: dict[str, Any] = {
            "sample_id": self.sample_id,
            "scenario": self.scenario,
            "participants": list(self.participants),
        }
        if self.source_file is not None:
            out["source_file"] = self.source_file
        out["rows"] = [row.to_release() for row in self.rows]
        return out


def parse_intensity(value: object) -> int | None:
    """An intensity as an int in 0..10, or ``None`` when it is missing, not a number or out of range.

    >>> parse_intensity("7"), parse_intensity(6.5), parse_intensity(11), parse_intensity("high")
    (7, 6, None, None)
    """
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    rounded = round(number)
    return rounded if 0 <= rounded <= 10 else None
