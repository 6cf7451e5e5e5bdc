"""Reading the work directory's JSON files into typed records, with one-line errors naming file and field.

The records are frozen dataclasses validated by pydantic: unknown keys are ignored (the design says readers
ignore them), numbers and strings are taken as JSON gives them (``"3"`` is not a number, ``true`` is not
``1``), and the first problem becomes ``FILE: rows[2].start_time: Input should be a valid number``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator, Strict, TypeAdapter, ValidationError

from rescue_bench.errors import DataError

T = TypeVar("T")

StrictInt = Annotated[int, Strict()]
StrictFloat = Annotated[float, Strict()]
StrictStr = Annotated[str, Strict()]


def _or_none(kind: type | tuple[type, ...]) -> BeforeValidator:
    """Values of another type (or blank text) read as ``None``: for the optional keys written by older
    versions or by hand, where a wrong value means "not given" rather than a broken file."""

    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, kind):
            return None
        return None if isinstance(value, str) and not value.strip() else value

    return BeforeValidator(check)


OptionalText = Annotated[str | None, _or_none(str)]
OptionalInt = Annotated[int | None, _or_none(int)]
OptionalNumber = Annotated[float | None, _or_none((int, float))]
Text = Annotated[str, BeforeValidator(lambda v: "" if v is None else v), Strict()]
"""A string; ``null`` reads as ``""``."""


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None


def validate(adapter: TypeAdapter[T], obj: Any, path: Path) -> T:
    """``obj`` as the record of ``adapter``; :class:`DataError` naming ``path`` and the first bad field."""
    try:
        return adapter.validate_python(obj)
    except ValidationError as exc:
        raise DataError(f"{path}: {first_error(exc)}") from None


def first_error(exc: ValidationError) -> str:
    """``rows[0].index: Input should be a valid integer`` (and how many more problems there are)."""
    errors = exc.errors()
    first = errors[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where or 'the file'}: {first['msg']}{more}"
