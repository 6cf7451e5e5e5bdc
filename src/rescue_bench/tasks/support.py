"""Therapist support moves, shared by STP (whom) and SSP (which strategy).

A support move is a therapist row whose first ``support_strategy`` entry has a non-empty ``strategy_type``.
Its target comes from that entry's ``target``, or, when that is empty, from the row's ``target`` (protocol
sections 4-5, paper App. C). One person gives that person's name; several give the group label (``Couple`` /
``Family``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from rescue_bench.data.schema import Row, Sample
from rescue_bench.tasks.context import clean
from rescue_bench.taxonomy import THERAPIST, Scenario, group_label


@dataclass(frozen=True, slots=True)
class SupportMove:
    """The gold of one therapist row."""

    row_index: int
    strategy: str
    target: str
    """A participant's name or the group label."""
    target_source: Literal["support_strategy", "row_target_fallback"]


def canonical_target(names: Iterable[object]) -> tuple[str, ...]:
    """Cleaned names without empties, the therapist and repeats, in order.

    >>> canonical_target([" Ana ", "", "Therapist", "Ben", "Ana"])
    ('Ana', 'Ben')
    """
    seen: dict[str, None] = {}
    for name in names:
        text = clean(name)
        if text and text != THERAPIST:
            seen.setdefault(text, None)
    return tuple(seen)


def target_label(names: Sequence[str], scenario: Scenario) -> str:
    """One name gives the name; two or more give the group label.

    >>> target_label(("Ana",), "couple"), target_label(("Ana", "Ben"), "family")
    ('Ana', 'Family')
    """
    return names[0] if len(names) == 1 else group_label(scenario)


def candidate_targets(sample: Sample) -> tuple[str, ...]:
    """The closed target set of a sample: its participants, then the group label, without repeats."""
    return tuple(dict.fromkeys((*sample.participants, group_label(sample.scenario))))


def support_move(row: Row, scenario: Scenario) -> SupportMove | None:
    """The support move of a therapist row, or ``None`` when it has no strategy or no resolvable target."""
    if not row.is_therapist or not row.support_strategy:
        return None
    first = row.support_strategy[0]
    strategy = clean(first.strategy_type)
    if not strategy:
        return None
    names = canonical_target(first.target)
    source: Literal["support_strategy", "row_target_fallback"] = "support_strategy"
    if not names:
        names, source = canonical_target(row.target), "row_target_fallback"
    if not names:
        return None
    return SupportMove(row.row_index, strategy, target_label(names, scenario), source)


def support_moves(sample: Sample) -> list[SupportMove]:
    """Support moves of a sample whose target is in the sample's closed target set."""
    allowed = set(candidate_targets(sample))
    moves = (support_move(row, sample.scenario) for row in sample.rows)
    return [m for m in moves if m is not None and m.target in allowed]


def target_emotion(sample: Sample, row_index: int, target: str, size: int) -> str:
    """The target's latest internal emotion in the window before ``row_index`` (SSP option), or ``""``.

    Scans back from the row before ``row_index`` over the same window the prompt shows. For the group label,
    any participant's emotion matches. A person left empty in the data is the row's speaker.
    """
    if size == 0:
        return ""
    start = 1 if size < 0 else max(1, row_index - size)
    group = target == group_label(sample.scenario)
    for index in range(row_index - 1, start - 1, -1):
        row = sample.row(index)
        found = []
        for emotion in row.internal_emotion:
            person = clean(emotion.person) or row.speaker
            text = clean(emotion.emotion_description)
            if text and (person in sample.participants if group else person == target):
                level = emotion.intensity_value
                found.append(f"{person}: {text}" + (f" (intensity {level}/10)" if level is not None else ""))
        if found:
            return f"row {index}: " + "; ".join(found)
    return ""
