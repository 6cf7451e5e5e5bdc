"""The one place raw JSON is looked up: the sample-level keys, and the row fields pydantic converts.

:class:`RawSample` reads ``sample_id``, ``scenario``, ``participants``, ``source_file`` and ``rows`` once,
each checked for its JSON type. A value of the wrong type is never used as if it were right: it is dropped
(the loader falls back as it does for a missing key) and reported as a warning naming the field, so
``data validate --strict`` and ``load_samples(strict=True)`` refuse it.

:func:`coercion_problems` finds row values that pydantic's lax mode would quietly convert: ``"3"``, ``3.0`` or
``true`` as ``row_index``, a string or boolean as a time. The converted value is used, as before, with a
warning saying what was read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from rescue_bench.data.schema import Row

_NUMBER_FIELDS = ("start_time", "end_time")
_PLAIN_NUMBER = frozenset({int, float, type(None)})
_INT_ONLY = {int}
_INT_LIST_FIELDS = ("relation_cycle_evidence_rows", "relation_pattern_evidence_rows")


@dataclass(frozen=True, slots=True)
class RawSample:
    """The sample-level keys of one JSON object, each of its JSON type or ``None``."""

    sample_id: str | None
    scenario: Any
    """Passed on as given: an unknown or non-string scenario is reported where it is inferred."""
    participants: tuple[str, ...] | None
    source_file: str | None
    rows: Any
    """Passed on as given: a missing or non-list ``rows`` is an error of its own."""
    wrong_types: tuple[tuple[str, str], ...]
    """(field, message) for each key present with the wrong JSON type."""

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> RawSample:
        """Look up the sample-level keys of ``obj``.

        >>> raw = RawSample.of({"sample_id": 7, "participants": "Ann, Bo", "rows": []})
        >>> raw.sample_id, raw.participants, [field for field, _ in raw.wrong_types]
        (None, None, ['sample_id', 'participants'])
        """
        values = {name: obj.get(name) for name in ("sample_id", "scenario", "participants", "source_file")}
        wrong: list[tuple[str, str]] = []
        sample_id = _text(values["sample_id"], "sample_id", wrong)
        source_file = _text(values["source_file"], "source_file", wrong)
        return cls(
            sample_id=sample_id or None,
            scenario=values["scenario"],
            participants=_names(values["participants"], wrong),
            source_file=source_file,
            rows=obj.get("rows"),
            wrong_types=tuple(wrong),
        )


def _text(value: Any, name: str, wrong: list[tuple[str, str]]) -> str | None:
    if value is None or isinstance(value, str):
        return value
    wrong.append((name, f"{name} is {describe(value)}, not a string; it is ignored"))
    return None


def _names(value: Any, wrong: list[tuple[str, str]]) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    what = describe(value) if not isinstance(value, list) else "a list with non-string items"
    wrong.append(
        ("participants", f"participants is {what}, not a list of names; they are inferred from the rows")
    )
    return None


def coercion_problems(raw: Mapping[str, Any], row: Row) -> list[tuple[str, str]]:
    """(field, message) for each value of ``raw`` that pydantic read into ``row`` only after converting it.

    >>> raw = {"row_index": "3", "start_time": True}
    >>> for _, message in coercion_problems(raw, Row.model_validate(raw)):
    ...     print(message)
    row_index is a string ("3"), not an integer; read as 3
    start_time is a boolean (true), not a number; read as 1.0
    """
    # This runs on every row: one pass of exact type checks (not isinstance: bool is an int subclass, and it
    # is one of the conversions sought) settles the common case before any message is built.
    get = raw.get
    cycle, pattern = get("relation_cycle_evidence_rows"), get("relation_pattern_evidence_rows")
    if (
        type(get("row_index", 0)) is int
        and type(get("start_time")) in _PLAIN_NUMBER
        and type(get("end_time")) in _PLAIN_NUMBER
        and (not cycle or type(cycle) is not list or set(map(type, cycle)) == _INT_ONLY)
        and (not pattern or type(pattern) is not list or set(map(type, pattern)) == _INT_ONLY)
    ):
        return []
    return list(_coercions(raw, row))


def _coercions(raw: Mapping[str, Any], row: Row) -> Iterator[tuple[str, str]]:
    if type(raw.get("row_index", 0)) is not int:
        given = describe(raw["row_index"])
        yield "row_index", f"row_index is {given}, not an integer; read as {row.row_index}"
    for name in _NUMBER_FIELDS:
        value = raw.get(name)
        if value is not None and type(value) is not float and type(value) is not int:
            yield name, f"{name} is {describe(value)}, not a number; read as {getattr(row, name)}"
    for name in _INT_LIST_FIELDS:
        items = raw.get(name)
        if isinstance(items, list):
            read = getattr(row, name)
            for i, item in enumerate(items):
                if type(item) is not int:
                    message = f"{name} item is {describe(item)}, not an integer; read as {read[i]}"
                    yield f"{name}[{i}]", message


def row_position(raw: Mapping[str, Any], position: int) -> int:
    """The row's number for locating its problems: its ``row_index`` if an integer, else its position."""
    index = raw.get("row_index", position)
    return index if type(index) is int else position


def describe(value: Any) -> str:
    """A JSON value's type and a short form of it, for messages.

    >>> describe("3"), describe(3.0), describe(True), describe(7), describe([1])
    ('a string ("3")', 'a number with a decimal point (3.0)', 'a boolean (true)', 'a number (7)', 'a list')
    """
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, str):
        shown = value if len(value) <= 20 else value[:20] + "..."
        return f'a string ("{shown}")'
    if isinstance(value, float):
        return f"a number with a decimal point ({value})"
    if isinstance(value, int):
        return f"a number ({value})"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else "null"
