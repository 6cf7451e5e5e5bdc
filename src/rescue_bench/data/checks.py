"""Semantic checks of one loaded sample: the warnings every load of it reports.

:func:`check_sample` runs on every sample that :mod:`rescue_bench.data.load` reads, so loading anywhere in
the package reports the same problems. Structural errors (unreadable JSON, missing rows, bad times, row_index
gaps) are found by the loader itself; the checks here give *warnings*, because the sample can still be used:

* labels outside the scenario's taxonomy (relation patterns, strategies, utterance types);
* ``end_time`` before ``start_time``;
* evidence rows out of range (row 0 is a quirk of the release and is accepted silently);
* targets naming nobody in the sample;
* intensities that are not numbers or lie outside 0-10;
* suspected mojibake (UTF-8 text decoded as Latin-1 or cp1252).

:func:`reach_problems` gives the warnings about what a model will be sent (rows without a speaker, rows too
large to send unremarked); the loader reports them even to callers that do not validate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from rescue_bench.data.schema import Row, Sample
from rescue_bench.printable import has_hidden, printable
from rescue_bench.problems import Problem
from rescue_bench.taxonomy import NON_CLIENT_SPEAKERS, UTTERANCE_TYPES, relation_labels, strategy_labels

# UTF-8 read as Latin-1/cp1252: C1 controls (e.g. 'â' + two of them for a dash), 'Ã'/'Â' + a Latin-1 sign,
# cp1252's 'â€' prefix, and the replacement character left by a lossy decode.
_MOJIBAKE = re.compile("[âÃÂ]?[\u0080-\u009f]+|[ÃÂ][\u00a0-\u00bf]|â€.?|\ufffd")
# A character every match of _MOJIBAKE holds: one class, which the regex engine scans for quickly.
_MOJIBAKE_CORE = re.compile("[\u0080-\u009fâÃÂ\ufffd]")

_EVIDENCE_FIELDS = ("relation_cycle_evidence_rows", "relation_pattern_evidence_rows")
_RELATION_FIELDS = ("relation_cycle_state", "relation_pattern")
# Lists of objects whose ``target`` names people in the room.
_TARGETED_LISTS = ("support_strategy", "interaction_behavior", "background_dialogue")


def check_sample(
    sample: Sample, *, file: str | None, line: int | None, mojibake: bool = True
) -> list[Problem]:
    """Warnings for a structurally valid sample: labels, times, evidence rows, targets, intensities, mojibake.

    Args:
        sample: a sample built by the loader.
        file: the file it came from, for the problems' location.
        line: its line in a JSONL file, or ``None``.
        mojibake: whether to scan every field for mojibake; ``False`` when the sample's JSON text showed it
            holds none (:func:`may_hold_mojibake`).

    Returns:
        One warning per problem, each located by file, line, sample, row and JSON path.

    >>> from rescue_bench.data.schema import Row, Sample
    >>> row = Row(row_index=1, start_time=5.0, end_time=4.0, primary_speaker="Ann", utterance_type="shouting")
    >>> sample = Sample(sample_id="s", scenario="couple", participants=("Ann", "Bo"), rows=(row,))
    >>> [p.message for p in check_sample(sample, file="f.jsonl", line=1)]
    ["utterance_type 'shouting' is not an utterance type", 'end_time 4.0 is before start_time 5.0']
    """
    speakers = (row.speaker for row in sample.rows)
    known = frozenset((*sample.participants, *speakers, *NON_CLIENT_SPEAKERS)) - {""}
    context = _Context(sample, file, line, known)
    problems: list[Problem] = []
    for position, row in enumerate(sample.rows):
        problems.extend(_check_row(row, f"rows[{position}]", context, mojibake))
    problems.extend(hidden_name_problems(sample, file=file, line=line))
    return problems


def hidden_name_problems(sample: Sample, *, file: str | None, line: int | None) -> Iterator[Problem]:
    """A warning for each name (the sample id, a participant, a row's speaker or target) that holds a
    character shown escaped (:func:`~rescue_bench.printable.has_hidden`: zero-width, bidirectional,
    control): two such names can look the same, or a name can reorder what is printed after it.

    >>> from rescue_bench.data.schema import Row, Sample
    >>> row = Row(row_index=1, primary_speaker="An\u200bn")
    >>> sample = Sample(sample_id="s", scenario="couple", participants=("Ann",), rows=(row,))
    >>> [p.path for p in hidden_name_problems(sample, file="f.jsonl", line=1)]
    ['rows[0].primary_speaker']
    """
    names: list[tuple[str, str, int | None]] = [("sample_id", sample.sample_id, None)]
    names += [(f"participants[{i}]", name, None) for i, name in enumerate(sample.participants)]
    for i, row in enumerate(sample.rows):
        names.append((f"rows[{i}].primary_speaker", row.primary_speaker or "", row.row_index))
        names += [(f"rows[{i}].target[{j}]", name, row.row_index) for j, name in enumerate(row.target)]
    for path, name, row_index in names:
        if has_hidden(name):
            yield Problem(
                "warning",
                f"{path.rpartition('.')[2]} '{printable(name)}' holds invisible, control or "
                "direction-changing characters: it can look like another name",
                file=file,
                line=line,
                sample_id=sample.sample_id,
                row_index=row_index,
                path=path,
            )


def may_hold_mojibake(text: str) -> bool:
    """Whether some string of a sample whose JSON text is ``text`` may hold mojibake.

    Every pattern needs a non-ASCII character, and the text holds each such character of a decoded string as
    it is, beside its neighbours, unless a ``\\u`` escape writes it: a text with no escape and none of the
    characters every match holds has no match in any string. One found elsewhere (a key, a character that is
    no mojibake) only costs the scan of every field.

    >>> may_hold_mojibake('{"a": "café"}'), may_hold_mojibake('{"a": "Ã©"}')
    (False, True)
    >>> import json
    >>> may_hold_mojibake(json.dumps({"a": "Ã©"})), may_hold_mojibake(json.dumps({"a": "café"}))
    (True, True)
    """
    if "\\u" in text:
        return True
    return not text.isascii() and _MOJIBAKE_CORE.search(text) is not None


@dataclass(frozen=True, slots=True)
class _Context:
    sample: Sample
    file: str | None
    line: int | None
    known_names: frozenset[str]
    """Participants, speakers, ``Therapist``, ``Couple`` and ``Family``."""

    def warn(self, message: str, row: Row, path: str) -> Problem:
        return Problem(
            "warning",
            message,
            file=self.file,
            line=self.line,
            sample_id=self.sample.sample_id,
            row_index=row.row_index,
            path=path,
        )


def _check_row(row: Row, base: str, context: _Context, mojibake: bool) -> Iterator[Problem]:
    for message, path in (
        *_label_problems(row, context.sample.scenario),
        *_time_problems(row),
        *_evidence_problems(row, len(context.sample.rows)),
        *_target_problems(row, context.known_names),
        *_intensity_problems(row),
        *(_mojibake_problems(row) if mojibake else ()),
    ):
        yield context.warn(message, row, f"{base}.{path}")


def _label_problems(row: Row, scenario: Any) -> Iterator[tuple[str, str]]:
    relations = relation_labels(scenario)
    for name in _RELATION_FIELDS:
        label = (getattr(row, name) or "").strip()
        if label and label not in relations:
            yield f"{name} {label!r} is not a {scenario} relation pattern", name
    strategies = strategy_labels(scenario)
    for i, strategy in enumerate(row.support_strategy):
        label = (strategy.strategy_type or "").strip()
        if label and label not in strategies:
            yield (
                f"strategy_type {label!r} is not a {scenario} strategy",
                f"support_strategy[{i}].strategy_type",
            )
    utterance = (row.utterance_type or "").strip()
    if utterance and utterance not in UTTERANCE_TYPES:
        yield f"utterance_type {utterance!r} is not an utterance type", "utterance_type"


def _time_problems(row: Row) -> Iterator[tuple[str, str]]:
    if row.start_time is not None and row.end_time is not None and row.end_time < row.start_time:
        yield f"end_time {row.end_time} is before start_time {row.start_time}", "end_time"


def _evidence_problems(row: Row, row_count: int) -> Iterator[tuple[str, str]]:
    for name in _EVIDENCE_FIELDS:
        for i, value in enumerate(getattr(row, name)):
            # Row 0 appears in the official release and means "no specific row"; it is not worth a warning.
            if value < 0 or value > row_count:
                yield (
                    f"evidence row {value} is out of range (the sample has rows 1-{row_count})",
                    f"{name}[{i}]",
                )


def _target_problems(row: Row, known: frozenset[str]) -> Iterator[tuple[str, str]]:
    named: list[tuple[str, str]] = [(name, f"target[{i}]") for i, name in enumerate(row.target)]
    for field in _TARGETED_LISTS:
        for i, item in enumerate(getattr(row, field)):
            named.extend((name, f"{field}[{i}].target[{j}]") for j, name in enumerate(item.target))
    for i, viewpoint in enumerate(row.viewpoints_attitudes):
        if viewpoint.target is not None:
            named.append((viewpoint.target, f"viewpoints_attitudes[{i}].target"))
    for name, path in named:
        clean = name.strip()
        if clean and clean not in known:
            yield f"target {clean!r} names nobody in the sample", path


def _intensity_problems(row: Row) -> Iterator[tuple[str, str]]:
    for i, emotion in enumerate(row.internal_emotion):
        value = emotion.intensity
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        number = _as_number(value)
        if number is None:
            yield f"intensity {value!r} is not a number", f"internal_emotion[{i}].intensity"
        elif not 0 <= number <= 10:
            yield f"intensity {value!r} is outside 0-10", f"internal_emotion[{i}].intensity"


def _as_number(value: float | str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _mojibake_problems(row: Row) -> Iterator[tuple[str, str]]:
    for path, found in _mojibake_hits(row, ""):
        guess = _undo_mojibake(found)
        hint = f" (probably {guess!r})" if guess else ""
        yield f"suspected mojibake (text decoded with the wrong encoding): {found!r}{hint}", path


def _mojibake_hits(model: BaseModel, prefix: str) -> Iterator[tuple[str, str]]:
    """The first suspicious match in each string of the model's declared fields, with its JSON path.

    Extra keys are not scanned. This runs on every string of every row, so it reads ``__dict__`` directly.
    """
    search = _MOJIBAKE.search
    for name, value in model.__dict__.items():
        if isinstance(value, str):
            # Every pattern needs a non-ASCII character, and isascii() is far cheaper than the regex.
            if not value.isascii() and (found := search(value)):
                yield f"{prefix}{name}", found.group()
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _mojibake_hits(item, f"{prefix}{name}[{i}].")
                elif isinstance(item, str) and not item.isascii() and (found := search(item)):
                    yield f"{prefix}{name}[{i}]", found.group()


def _undo_mojibake(text: str) -> str | None:
    """The text as it was before a wrong decode, when that can be worked out.

    >>> _undo_mojibake("\u00e2\u0080\u0094"), _undo_mojibake("\u00c3\u00a9"), _undo_mojibake("\ufffd")
    ('—', 'é', None)
    """
    for codec in ("latin-1", "cp1252"):
        try:
            return text.encode(codec).decode("utf-8")
        except UnicodeError:
            continue
    return None


# -- what a model is sent -----------------------------------------------------------------------------------

DEFAULT_MAX_ROW_CHARS = 200_000
"""Text per row (all string fields together) above which a row is reported before it reaches a model."""


def reach_problems(
    sample: Sample,
    *,
    file: str | None,
    line: int | None,
    max_row_chars: int = DEFAULT_MAX_ROW_CHARS,
    size_hint: int | None = None,
) -> list[Problem]:
    """Warnings about what a model would be sent: rows without a speaker, rows with too much text.

    Args:
        sample: a sample built by the loader.
        file, line: its location, for the problems.
        max_row_chars: the most text a row may hold without a warning.
        size_hint: the sample's size in bytes as read, when known: a sample no larger than ``max_row_chars``
            cannot hold a row over it, so its rows are not measured.
    """
    context = _Context(sample, file, line, frozenset())
    problems = _speakerless(context)
    if size_hint is None or size_hint > max_row_chars:
        problems.extend(_oversized(context, max_row_chars))
    return problems


def _speakerless(context: _Context) -> list[Problem]:
    rows = context.sample.rows
    silent = [row.row_index for row in rows if not row.speaker]
    if not silent:
        return []
    shown = ", ".join(map(str, silent[:10])) + (", ..." if len(silent) > 10 else "")
    message = (
        f"{len(silent)} of {len(rows)} rows have no primary_speaker (rows {shown}): no task instance that "
        "needs the speaker is built from them"
    )
    sample_id = context.sample.sample_id
    return [Problem("warning", message, file=context.file, line=context.line, sample_id=sample_id)]


def _oversized(context: _Context, max_row_chars: int) -> Iterator[Problem]:
    for position, row in enumerate(context.sample.rows):
        sizes = dict(_text_sizes(row, ""))
        total = sum(sizes.values())
        if total > max_row_chars:
            largest = max(sizes, key=sizes.__getitem__)
            message = (
                f"row holds {total:,} characters of text (limit {max_row_chars:,}; {largest} alone "
                f"{sizes[largest]:,}): it is sent to the model whole"
            )
            yield context.warn(message, row, f"rows[{position}].{largest}")


def _text_sizes(model: BaseModel, prefix: str) -> Iterator[tuple[str, int]]:
    """(JSON path, characters) for each string of the model's declared fields, nested records included."""
    for name, value in model.__dict__.items():
        if isinstance(value, str):
            yield f"{prefix}{name}", len(value)
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _text_sizes(item, f"{prefix}{name}[{i}].")
                elif isinstance(item, str):
                    yield f"{prefix}{name}[{i}]", len(item)
