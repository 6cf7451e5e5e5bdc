"""Typed views of the JSON columns that pages show: a row's speaker, target and times, a segment's draft
notes, a discard's reason. Templates read these attributes instead of looking keys up in stored dicts.

Every view ignores keys it does not show and reads a value of the wrong type as absent: a page must render
whatever a row holds (stored rows keep unknown keys and legacy values on purpose).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from rescue_bench.review.forms import names, shown


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def _number(value: Any) -> str:
    return shown(value) if isinstance(value, int | float) and not isinstance(value, bool) else ""


Text = Annotated[str | None, BeforeValidator(_text_or_none)]
Strings = Annotated[tuple[str, ...], BeforeValidator(_strings)]


class _View(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class RowHead(_View):
    """What the row lists and the row page show of a release-format row."""

    primary_speaker: Text = None
    target: Annotated[tuple[str, ...], BeforeValidator(names)] = ()
    start_time: Annotated[str, BeforeValidator(_number)] = ""
    end_time: Annotated[str, BeforeValidator(_number)] = ""


class DraftNotes(_View):
    """``Segment.draft_notes``: the draft's overall status and its segment-level rule violations."""

    status: Text = None
    segment_violations: Strings = ()


class EventDetail(_View):
    """``Event.detail`` of a discard (the other kinds carry keys no page shows)."""

    reason: Text = None
    note: Text = None


def row_head(data: Any) -> RowHead:
    return RowHead.model_validate(data if isinstance(data, dict) else {})


def draft_notes(data: Any) -> DraftNotes:
    return DraftNotes.model_validate(data if isinstance(data, dict) else {})


def event_detail(data: Any) -> EventDetail:
    return EventDetail.model_validate(data if isinstance(data, dict) else {})


def differing(reviews: Sequence[Any]) -> list[str]:
    """The fields on which some of ``reviews`` (objects with a ``data`` dict) differ, in the first one's
    order.

    >>> class R:
    ...     def __init__(self, data): self.data = data
    >>> differing([R({"a": 1, "b": 2}), R({"a": 1, "b": 3, "c": 0})])
    ['b', 'c']
    """
    keys: list[str] = []
    for review in reviews:
        keys += [k for k in review.data if k not in keys]
    return [k for k in keys if len({repr(r.data.get(k)) for r in reviews}) > 1]
