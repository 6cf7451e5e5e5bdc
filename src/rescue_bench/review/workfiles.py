"""The annotation work directory's files as the review app reads them: frozen typed records.

The format is in ``docs/design.md``; readers ignore unknown keys. The review app is more forgiving than the
annotation layer: a manifest may leave ``scenario`` and ``participants`` to ``workdir.json``, its rows need
not be numbered 1, 2, 3, ..., and optional values of the wrong type (a ``duration_sec`` of ``"4.5"``) count as
absent. What the rows need to be benchmark rows is checked afterwards by the package's sample builder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError

from rescue_bench.errors import DataError
from rescue_bench.review.media import MediaNotFound, check_relative

M = TypeVar("M", bound=BaseModel)


def _or_none(kind: type | tuple[type, ...]) -> BeforeValidator:
    return BeforeValidator(lambda v: v if isinstance(v, kind) and not isinstance(v, bool) else None)


def _non_empty(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("must be a non-empty string")
    return value


def _media_path(value: str | None) -> str | None:
    if value is not None:
        try:
            check_relative(value)
        except MediaNotFound:
            raise ValueError(f"{value!r} is not a media file path inside the work directory") from None
    return value


Number = Annotated[float | None, _or_none((int, float))]
LooseText = Annotated[str | None, _or_none(str)]
Id = Annotated[str | None, Strict(), AfterValidator(_non_empty)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class WorkInfo(_Record):
    """``workdir.json``: the defaults of every segment."""

    scenario: Any = None
    participants: Any = None
    video: LooseText = None


class MediaRow(_Record):
    """One manifest row: the subtitle's timing, speaker and words, and the row's clip."""

    index: Annotated[int, Strict(), Field(ge=1)]
    start_time: Any = None
    end_time: Any = None
    speaker: Any = None
    text: LooseText = None
    clip_path: Annotated[str | None, Strict(), AfterValidator(_media_path)] = None
    duration_sec: Number = None


class SegmentFile(_Record):
    """``segments/<segment_id>/manifest.json``."""

    segment_id: Id = None
    sample_id: Id = None
    scenario: Any = None
    participants: Any = None
    start_time: Number = None
    end_time: Number = None
    rows: list[MediaRow]


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


class DraftFile(_Record):
    """``segments/<segment_id>/draft.json``: model-drafted rows and what is still wrong with them."""

    rows: list[Any]
    model: LooseText = None
    status: LooseText = None
    violations: Annotated[dict[str, Any], BeforeValidator(lambda v: v if isinstance(v, dict) else {})] = (
        Field(default_factory=dict)
    )
    segment_violations: Annotated[list[str], BeforeValidator(_strings)] = Field(default_factory=list)


def read_record(path: Path, model: type[M], shape: str) -> M:
    """``path`` as ``model``; :class:`DataError` naming the file and the first bad field.

    ``shape`` says what the file must be at the top (``an object with a 'rows' list``).
    """
    try:
        obj = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise DataError(f"{path}: expected {shape}")
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise DataError(f"{path}: {_first_error(exc, shape)}") from None


def _first_error(exc: ValidationError, shape: str) -> str:
    first = exc.errors()[0]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
    if first["loc"] == ("rows",):
        return f"expected {shape}"
    message = first["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message
