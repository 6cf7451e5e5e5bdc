"""Gold facts the relation-aware analyses group by, and the analyses a task can declare
(``TaskInfo.analyses``): see :mod:`rescue_bench.metrics.relational` and docs/relational.md.

The metrics layer cannot import the data layer, so samples are read through the structural
:class:`SampleLike` (``rescue_bench.data.schema.Sample`` fits it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from rescue_bench.records import Json
from rescue_bench.rundir import PredictionLine
from rescue_bench.taxonomy import GROUP_LABELS, THERAPIST, relation_labels

START = "start"
NONE = "(none)"
BANDS = ((0, 3, "low (0-3)"), (4, 6, "medium (4-6)"), (7, 10, "high (7-10)"))


class StrategyLike(Protocol):
    @property
    def target(self) -> Sequence[str]: ...


class RowLike(Protocol):
    @property
    def row_index(self) -> int: ...
    @property
    def target(self) -> Sequence[str]: ...
    @property
    def relation_cycle_state(self) -> str | None: ...
    @property
    def relation_pattern(self) -> str | None: ...
    @property
    def support_strategy(self) -> Sequence[StrategyLike]: ...


class SampleLike(Protocol):
    @property
    def sample_id(self) -> str: ...
    @property
    def scenario(self) -> str: ...
    @property
    def rows(self) -> Sequence[RowLike]: ...


def _clean(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def pattern_field(sample: SampleLike) -> str:
    """The row field of the sample's relation patterns: ``relation_cycle_state`` when any row has one, else
    ``relation_pattern`` (the RPP task's ``auto`` gold rule, which release samples need)."""
    has_cycle = any(_clean(row.relation_cycle_state) for row in sample.rows)
    return "relation_cycle_state" if has_cycle else "relation_pattern"


class IndexedSample:
    """A sample whose pattern sequences are worked out once: the analyses ask for one with every record, and
    working it out each time was most of the scoring time of a run (thousands of records, 40 rows each)."""

    __slots__ = ("_sequences", "sample")

    def __init__(self, sample: SampleLike) -> None:
        self.sample = sample
        self._sequences: dict[str | None, dict[int, str]] = {}

    @property
    def sample_id(self) -> str:
        return self.sample.sample_id

    @property
    def scenario(self) -> str:
        return self.sample.scenario

    @property
    def rows(self) -> Sequence[RowLike]:
        return self.sample.rows

    def sequence(self, field: str | None) -> dict[int, str]:
        if field not in self._sequences:
            self._sequences[field] = _sequence(self.sample, field)
        return self._sequences[field]


def pattern_sequence(sample: SampleLike, field: str | None = None) -> dict[int, str]:
    """Row index -> in-taxonomy gold pattern, for the labelled rows of the sample."""
    if isinstance(sample, IndexedSample):
        return sample.sequence(field)
    return _sequence(sample, field)


def _sequence(sample: SampleLike, field: str | None) -> dict[int, str]:
    name = field or pattern_field(sample)
    labels = set(relation_labels(sample.scenario))  # type: ignore[arg-type]
    out = {}
    for row in sample.rows:
        label = _clean(getattr(row, name, None))
        if label in labels:
            out[row.row_index] = label
    return out


def latest_before(sequence: Mapping[int, str], row: int) -> str | None:
    """The pattern of the latest labelled row at or before ``row``, or ``None``.

    >>> latest_before({2: "a", 5: "b"}, 4), latest_before({2: "a"}, 1)
    ('a', None)
    """
    earlier = [r for r in sequence if r <= row]
    return sequence[max(earlier)] if earlier else None


def target_type(sample: SampleLike, row_index: int) -> str:
    """``one person``, ``group`` or ``several people`` for the annotated move of a therapist row (its first
    strategy's target, else the row's target, as STP and SSP resolve it)."""
    row = sample.rows[row_index - 1]
    first = row.support_strategy[0].target if row.support_strategy else ()
    names = _names(first) or _names(row.target)
    if set(names) & set(GROUP_LABELS.values()):
        return "group"
    return "one person" if len(names) == 1 else "several people"


def _names(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n for n in (_clean(v) for v in values) if n and n != THERAPIST))


class _EmotionGold(BaseModel):
    """The part of an ER gold the bands read (``{"emotion", "intensity"}``)."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
    intensity: int | float | None = None


class _Viewpoint(BaseModel):
    """The part of a VP gold item the target count reads."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    target: str = ""


class _PatternMeta(BaseModel):
    """RPP's ``meta["gold_field"]``: the row field its gold came from."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    gold_field: str | None = None


def intensity_band(gold: Json) -> str | None:
    """The band of an ER gold intensity.

    >>> intensity_band({"intensity": 7}), intensity_band({"intensity": 2}), intensity_band({})
    ('high (7-10)', 'low (0-3)', None)
    """
    if not isinstance(gold, dict):
        return None
    try:
        level = _EmotionGold.model_validate(gold).intensity
    except ValidationError:
        return None
    if level is None:
        return None
    return next((name for lo, hi, name in BANDS if lo <= level <= hi), None)


def target_count(gold: Json) -> str | None:
    """``1``, ``2`` or ``3+`` distinct gold targets of a VP instance.

    >>> target_count([{"target": "A"}, {"target": "B"}, {"target": "A"}]), target_count("x")
    ('2', None)
    """
    if not isinstance(gold, list):
        return None
    items = [_Viewpoint.model_validate(g) for g in gold if isinstance(g, dict)]
    n = len({_clean(item.target) for item in items} - {""})
    return None if n == 0 else str(n) if n < 3 else "3+"


Grouper = Callable[[PredictionLine, SampleLike | None], str | None]


@dataclass(frozen=True, slots=True)
class AnalysisSpec:
    """One kind of analysis a task can declare in ``TaskInfo.analyses``: a gold fact to group by."""

    key: str
    """Suffix of the analysis key (``<task>_<key>`` in ``scores.json``)."""
    title: str
    """Title after the task's name (``RPP accuracy by ...``)."""
    grouper: Grouper
    per_scenario: bool
    """Groups are per scenario (their labels are a scenario's patterns), else pooled as ``all``."""


def _previous_pattern(record: PredictionLine, sample: SampleLike) -> str | None:
    field = _PatternMeta.model_validate(record.meta or {}).gold_field
    sequence = pattern_sequence(sample, field)
    return latest_before(sequence, record.row_index - 1)


def by_transition(record: PredictionLine, sample: SampleLike | None) -> str | None:
    """``previous -> current`` gold pattern of an RPP record (``start -> current`` for the first)."""
    if sample is None:
        return None
    return f"{_previous_pattern(record, sample) or START} -> {record.gold}"


def by_segment(record: PredictionLine, sample: SampleLike | None) -> str | None:
    """``stable`` (the previous labelled row had the same pattern), ``changing`` or ``start``."""
    if sample is None:
        return None
    previous = _previous_pattern(record, sample)
    return START if previous is None else "stable" if previous == record.gold else "changing"


def pattern_in_force(offset: int) -> Grouper:
    """The gold pattern in force at the decision row, ``offset`` rows before the record's row (0: ITP's
    decision row, which the model sees; 1: the last row before STP's and SSP's unseen therapist turn);
    ``(none)`` before the first labelled row."""

    def group(record: PredictionLine, sample: SampleLike | None) -> str | None:
        if sample is None:
            return None
        return latest_before(pattern_sequence(sample), record.row_index - offset) or NONE

    return group


def by_target_type(record: PredictionLine, sample: SampleLike | None) -> str | None:
    if sample is None or not 1 <= record.row_index <= len(sample.rows):
        return None
    return target_type(sample, record.row_index)


def _by_band(record: PredictionLine, sample: SampleLike | None) -> str | None:
    return intensity_band(record.gold)


def _by_targets(record: PredictionLine, sample: SampleLike | None) -> str | None:
    return target_count(record.gold)


TRANSITION = AnalysisSpec(
    "transition", "accuracy by gold transition (previous -> current)", by_transition, True
)
SEGMENT = AnalysisSpec("segment", "accuracy in stable and changing segments", by_segment, True)
TARGET_TYPE = AnalysisSpec("target_type", "by target type", by_target_type, False)
PATTERN_AT_ROW = AnalysisSpec("pattern", "by the relation pattern in force", pattern_in_force(0), True)
PATTERN_BEFORE_ROW = AnalysisSpec("pattern", "by the relation pattern in force", pattern_in_force(1), True)
INTENSITY_BAND = AnalysisSpec("intensity", "by gold intensity band", _by_band, False)
TARGET_COUNT = AnalysisSpec("targets", "by number of gold targets", _by_targets, False)
SAMPLE_FREE = frozenset({"intensity", "targets"})
"""Analyses that read only the records' gold, so a report can recompute them without the samples (with
judge scores folded in after a judge pass)."""
