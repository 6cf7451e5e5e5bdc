"""Drafted rows and answers as a model writes them: the fields the rules and the answer reader use, by name.

The values stay untyped (``Any``, exactly the JSON given) on purpose: a rule checks each type itself, to say
exactly what is wrong; unknown keys are ignored here (another rule reports them).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class RowFields(BaseModel):
    """The fields of a drafted row that the rules read, each the JSON value the model wrote (``None`` when
    absent). They stay untyped on purpose: a rule checks the type itself, to say exactly what is wrong."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    row_index: Any = None
    start_time: Any = None
    end_time: Any = None
    primary_speaker: Any = None
    dialogue_cleaned: Any = None
    target: Any = None
    utterance_type: Any = None
    support_strategy: Any = None


class MoveFields(BaseModel):
    """One ``support_strategy`` entry as the model wrote it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    provider: Any = None
    target: Any = None
    strategy_type: Any = None
    strategy_content: Any = None


HOLDER_KEYS = ("initiator", "source", "speaker")
"""The key naming whose cue, stance or line an entry is, by entry kind (the first one present counts)."""


class Answer(BaseModel):
    """A model's answer: an object with a ``rows`` list (its other keys are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    rows: list[Any]
