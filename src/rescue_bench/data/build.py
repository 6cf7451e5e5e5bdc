"""One raw sample object to a :class:`Sample`: rows validated by the schema, every problem located.

The sample-level keys are read through :class:`rescue_bench.data.raw.RawSample`, the rows through the
:class:`Row` model; a value pydantic converts on the way (``"3"`` for a ``row_index``) is reported.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from rescue_bench.data.raw import RawSample, coercion_problems, row_position
from rescue_bench.data.schema import Row, Sample
from rescue_bench.problems import Problem
from rescue_bench.taxonomy import NON_CLIENT_SPEAKERS, Scenario

Built = tuple[Sample | None, list[Problem]]
"""A sample (``None`` when it has errors) and the problems found building it."""


def build_sample(obj: dict[str, Any], *, fallback_id: str, file: str | None, line: int | None) -> Built:
    """Validate one raw sample object; return the sample (or ``None``) and the problems found."""
    return build_raw(RawSample.of(obj), fallback_id=fallback_id, file=file, line=line)


def build_raw(raw: RawSample, *, fallback_id: str, file: str | None, line: int | None) -> Built:
    """:func:`build_sample` for keys already looked up; ``fallback_id`` names a sample without a string id."""
    sample_id = raw.sample_id or fallback_id
    where: dict[str, Any] = {"file": file, "line": line, "sample_id": sample_id}
    if not isinstance(raw.rows, list):
        what = "missing" if raw.rows is None else f"a {kind(raw.rows)}, not a list"
        return None, [Problem("error", f"'rows' is {what}", path="rows", **where)]
    if not raw.rows:
        return None, [Problem("error", "'rows' is empty", path="rows", **where)]
    rows, problems = _build_rows(raw.rows, where)
    if any(p.severity == "error" for p in problems):
        return None, problems
    problems += [Problem("warning", message, path=name, **where) for name, message in raw.wrong_types]
    scenario, scenario_problems = _scenario(raw.scenario, sample_id, rows, where)
    problems += scenario_problems
    problems += _participant_problems(raw.participants, where)
    sample = Sample(
        sample_id=sample_id,
        scenario=scenario,
        participants=_participants(raw.participants, rows),
        rows=tuple(rows),
        source_file=raw.source_file,
        origin=f"{file}:{line}" if line else (file or sample_id),
    )
    return sample, problems


def _build_rows(rows_raw: list[Any], where: dict[str, Any]) -> tuple[list[Row], list[Problem]]:
    rows: list[Row] = []
    problems: list[Problem] = []
    for position, raw in enumerate(rows_raw, start=1):
        path = f"rows[{position - 1}]"
        if not isinstance(raw, dict):
            problems.append(
                Problem(
                    "error", f"row is a {kind(raw)}, not an object", path=path, row_index=position, **where
                )
            )
            continue
        try:
            row = Row.model_validate(raw if "row_index" in raw else {**raw, "row_index": position})
        except ValidationError as exc:
            problems.extend(_validation_problems(exc, path, row_position(raw, position), where))
            continue
        rows.append(row)
        for name, message in coercion_problems(raw, row):
            problems.append(
                Problem("warning", message, path=f"{path}.{name}", row_index=row.row_index, **where)
            )
    if any(p.severity == "error" for p in problems):
        return rows, problems
    problems += _row_index_problems(rows, where)
    for row in rows:
        for name in ("start_time", "end_time"):
            value = getattr(row, name)
            if value is not None and value < 0:
                problems.append(
                    Problem(
                        "error",
                        f"{name} is negative ({value})",
                        row_index=row.row_index,
                        path=f"rows[{rows.index(row)}].{name}",
                        **where,
                    )
                )
    return rows, problems


def _validation_problems(
    exc: ValidationError, path: str, row_index: int, where: dict[str, Any]
) -> list[Problem]:
    out = []
    for err in exc.errors():
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        got = kind(err["input"])
        out.append(
            Problem(
                "error",
                f"{err['msg'].lower()} (got {got})",
                path=f"{path}{loc}",
                row_index=row_index,
                **where,
            )
        )
    return out


def _row_index_problems(rows: list[Row], where: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for position, row in enumerate(rows, start=1):
        if row.row_index != position:
            seen_before = any(r.row_index == row.row_index for r in rows[: position - 1])
            kind = "duplicate" if seen_before else "out of sequence"
            problems.append(
                Problem(
                    "error",
                    f"row_index {row.row_index} is {kind} (expected {position})",
                    row_index=row.row_index,
                    path=f"rows[{position - 1}].row_index",
                    **where,
                )
            )
            break
    return problems


def _scenario(
    value: Any, sample_id: str, rows: list[Row], where: dict[str, Any]
) -> tuple[Scenario, list[Problem]]:
    if value in ("couple", "family"):
        return value, []
    inferred = infer_scenario(sample_id, rows)
    if value in (None, ""):
        return inferred, []
    return inferred, [
        Problem("warning", f"unknown scenario {value!r}; inferred {inferred!r}", path="scenario", **where)
    ]


def infer_scenario(sample_id: str, rows: Iterable[Row]) -> Scenario:
    """``family`` for ids under ``family_therapy/`` or when anyone speaks to or as ``Family``; else couple.

    >>> infer_scenario("family_therapy/004/merged", []), infer_scenario("ann_and_bo/001", [])
    ('family', 'couple')
    """
    lowered = sample_id.lower()
    if lowered.startswith("family_therapy/") or "/family_therapy/" in lowered:
        return "family"
    for row in rows:
        names = [row.speaker, *row.targets, *(t for s in row.support_strategy for t in s.target)]
        if "Family" in (n.strip() for n in names if isinstance(n, str)):
            return "family"
    return "couple"


def infer_participants(rows: Iterable[Row]) -> tuple[str, ...]:
    """On-screen people in order of first appearance (speaker, then row targets, then strategy targets)."""
    seen: dict[str, None] = {}
    for row in rows:
        for name in (row.speaker, *row.targets, *(t for s in row.support_strategy for t in s.target)):
            clean = name.strip() if isinstance(name, str) else ""
            if clean and clean not in NON_CLIENT_SPEAKERS:
                seen.setdefault(clean, None)
    return tuple(seen)


_LABELS = {label.casefold(): label for label in sorted(NON_CLIENT_SPEAKERS)}


def _participant_problems(value: tuple[str, ...] | None, where: dict[str, Any]) -> list[Problem]:
    """A warning for each participant named like a label that is not a person (``Therapist``, ``Couple``,
    ``Family``): the exact label is left out of the participants, another spelling of it is kept, and either
    way an answer naming it cannot be told from the label.

    >>> [p.path for p in _participant_problems(("Ann", "Therapist", "couple "), {})]
    ['participants[1]', 'participants[2]']
    """
    problems = []
    for position, name in enumerate(value or ()):
        label = _LABELS.get(name.strip().casefold()) if isinstance(name, str) else None
        if label is None:
            continue
        if name.strip() == label:
            message = (
                f"participant {name!r} is a label, not a person ({', '.join(_LABELS.values())}): left out"
            )
        else:
            message = (
                f"participant {name!r} is named like the label {label!r}: an answer naming it cannot be told "
                "from the label; rename it"
            )
        problems.append(Problem("warning", message, path=f"participants[{position}]", **where))
    return problems


def _participants(value: tuple[str, ...] | None, rows: list[Row]) -> tuple[str, ...]:
    if value:
        given = tuple(v.strip() for v in value if v.strip() and v.strip() not in NON_CLIENT_SPEAKERS)
        if given:
            return given
    return infer_participants(rows)


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return (
            "number" if not (isinstance(value, float) and not math.isfinite(value)) else "non-finite number"
        )
    names: dict[type, str] = {str: "string", list: "list", dict: "object"}
    return names.get(type(value), type(value).__name__)
