"""Agreement between independent reviews, per annotation dimension.

Only rows of segments still in the work (not discarded) with at least two active reviews count; the raters
are the reviewers. Each dimension forms its own units (each rule is in :data:`DIMENSIONS` and the docs):

* ``intensity`` (ordinal): one unit per row and person; a rater's value is the intensity of the first
  emotion they give that person (none: missing for that rater).
* ``utterance_type``, ``relation_pattern`` (nominal): one unit per row on which at least one rater gave a
  label; a rater who gave none counts as the label ``(none)``.
* ``strategy`` (nominal): one unit per row and provider named by a rater; the value is that rater's first
  strategy type for the provider, ``(none)`` when they give the provider none.
* ``emotion`` (set, as binary units): one unit per row and candidate; 1 when the rater gives an emotion for
  them. The emotion's wording is free text, compared by meaning (the judge), not by label.
* ``target`` (set, as binary units): one unit per row and candidate (the participants, Therapist and the
  group label); 1 when the rater's targets hold the candidate, else 0.
* ``viewpoint`` (set, as binary units): one unit per row and ordered (source, target) pair of candidates; 1
  when the rater gives a viewpoint from that source about that target.

Krippendorff's alpha comes from the ``krippendorff`` package, Cohen's kappa from scikit-learn (linear
weights for the ordinal dimension), for each pair of raters with at least two units in common.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import Annotated, Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from rescue_bench.data.schema import Emotion, Strategy, Viewpoint
from rescue_bench.review.db import Review, RowRecord, Segment, User
from rescue_bench.review.forms import relation_keys
from rescue_bench.taxonomy import GROUP_LABELS, THERAPIST

Level = Literal["ordinal", "nominal"]
NONE = "(none)"
Value = int | str
UnitValues = dict[tuple[Any, ...], Value]
"""unit -> value, for one rater."""


Entry = TypeVar("Entry", bound=BaseModel)


def _label(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(t for t in value if isinstance(t, str)) if isinstance(value, list) else ()


def _well_formed(model: type[Entry]) -> Callable[[Any], tuple[Entry, ...]]:
    def entries(value: Any) -> tuple[Entry, ...]:
        out = []
        for item in value if isinstance(value, list) else []:
            try:
                out.append(model.model_validate(item))
            except ValidationError:
                continue
        return tuple(out)

    return entries


Label = Annotated[str | None, BeforeValidator(_label)]


class RatedRow(BaseModel):
    """One rater's annotation of one row, as agreement reads it: the release's fields and entries
    (:mod:`rescue_bench.data.schema`), read once from the stored review.

    A review may hold a partial annotation, and agreement counts what is there: a list field that is not a
    list reads as empty, an entry the release schema refuses is left out, a target that is not text is left
    out, and a label that is not text (or is blank) reads as none (stripped otherwise).
    """

    model_config = ConfigDict(frozen=True)  # the row's other fields are not compared

    utterance_type: Label = None
    relation_cycle_state: Label = None
    relation_pattern: Label = None
    target: Annotated[tuple[str, ...], BeforeValidator(_texts)] = ()
    internal_emotion: Annotated[tuple[Emotion, ...], BeforeValidator(_well_formed(Emotion))] = ()
    support_strategy: Annotated[tuple[Strategy, ...], BeforeValidator(_well_formed(Strategy))] = ()
    viewpoints_attitudes: Annotated[tuple[Viewpoint, ...], BeforeValidator(_well_formed(Viewpoint))] = ()

    @property
    def relation(self) -> str | None:
        """The relation label, from the field the row keeps it in (as the editor,
        :func:`~rescue_bench.review.forms.relation_keys`)."""
        key = relation_keys(self.model_fields_set)[0]
        return self.relation_pattern if key == "relation_pattern" else self.relation_cycle_state


@dataclass(frozen=True, slots=True)
class Dimension:
    name: str
    level: Level
    rule: str
    values: Callable[[RatedRow, list[str]], UnitValues]
    """(rater's annotation, candidates) -> this rater's value per unit (the row is added to the unit key)."""
    fill: Value | None = None
    """The value of a rater who reviewed the row but gave nothing for a unit another rater gave (``None``:
    missing)."""


def _first_by(
    entries: Iterable[Entry], key: Callable[[Entry], str | None], value: Callable[[Entry], Value | None]
) -> UnitValues:
    """Per ``key`` (an entry's person), the value of its first entry that has one."""
    out: UnitValues = {}
    for entry in entries:
        name = key(entry)
        if name is not None and (name,) not in out:
            found = value(entry)
            if found is not None:
                out[(name,)] = found
    return out


def _intensity(rated: RatedRow, _c: list[str]) -> UnitValues:
    return _first_by(rated.internal_emotion, lambda e: e.person, lambda e: e.intensity_value)


def _emotion(rated: RatedRow, candidates: list[str]) -> UnitValues:
    named = {e.person for e in rated.internal_emotion}
    return {(c,): int(c in named) for c in candidates}


def _label_of(label: Callable[[RatedRow], str | None]) -> Callable[[RatedRow, list[str]], UnitValues]:
    def values(rated: RatedRow, _c: list[str]) -> UnitValues:
        value = label(rated)
        return {(): value} if value is not None else {}

    return values


def _strategy(rated: RatedRow, _c: list[str]) -> UnitValues:
    return _first_by(rated.support_strategy, lambda s: s.provider, lambda s: s.strategy_type or None)


def _targets(rated: RatedRow, candidates: list[str]) -> UnitValues:
    named = set(rated.target)
    return {(c,): int(c in named) for c in candidates}


def _viewpoints(rated: RatedRow, candidates: list[str]) -> UnitValues:
    pairs = {(v.source, v.target) for v in rated.viewpoints_attitudes}
    return {(s, t): int((s, t) in pairs) for s in candidates for t in candidates if s != t}


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("intensity", "ordinal", "row x person; the first emotion given for the person", _intensity),
    Dimension(
        "utterance_type",
        "nominal",
        "row; rows where a rater gave one",
        _label_of(lambda r: r.utterance_type),
        NONE,
    ),
    Dimension(
        "relation_pattern",
        "nominal",
        "row; rows where a rater gave one",
        _label_of(lambda r: r.relation),
        NONE,
    ),
    Dimension(
        "strategy", "nominal", "row x provider; the first strategy type of the provider", _strategy, NONE
    ),
    Dimension(
        "emotion", "nominal", "row x candidate, 1 if an emotion is given for them (binary units)", _emotion
    ),
    Dimension("target", "nominal", "row x candidate, 1 if among the row's targets (binary units)", _targets),
    Dimension(
        "viewpoint",
        "nominal",
        "row x (source, target) candidate pair, 1 if a viewpoint is given",
        _viewpoints,
    ),
)


@dataclass(frozen=True, slots=True)
class PairKappa:
    raters: tuple[str, str]
    units: int
    kappa: float | None


@dataclass(frozen=True, slots=True)
class DimensionAgreement:
    dimension: str
    level: Level
    rule: str
    units: int
    """Units rated by at least two raters (the ones alpha uses)."""
    raters: int
    alpha: float | None
    pairs: tuple[PairKappa, ...]
    matrix: tuple[tuple[float, ...], ...]
    """raters x units as given to ``krippendorff.alpha`` (NaN: missing; nominal labels as codes)."""
    rater_names: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "level": self.level,
            "units": self.units,
            "raters": self.raters,
            "rater_names": list(self.rater_names),
            "alpha": self.alpha,
            "unit_rule": self.rule,
            "pairwise_cohen_kappa": [
                {"raters": list(p.raters), "units": p.units, "kappa": p.kappa} for p in self.pairs
            ],
        }


def reviews_by_row(session: Session) -> dict[int, tuple[list[str], dict[str, RatedRow]]]:
    """row id -> (candidates, rater name -> annotation), for rows of active segments with two or more
    reviews."""
    several = (
        select(Review.row_id).where(Review.active.is_(True)).group_by(Review.row_id).having(func.count() >= 2)
    )
    stmt = (
        select(Review.row_id, Review.data, User.name, Segment.participants, Segment.scenario)
        .join(User, Review.user_id == User.id)
        .join(RowRecord, Review.row_id == RowRecord.id)
        .join(Segment, RowRecord.segment_pk == Segment.id)
        .where(Review.active.is_(True), Segment.discarded.is_(False), Review.row_id.in_(several))
        .order_by(Review.row_id)
    )
    out: dict[int, tuple[list[str], dict[str, RatedRow]]] = {}
    for row_id, data, name, participants, scenario in session.execute(stmt):
        group = GROUP_LABELS.get(scenario, "Couple")
        entry = out.setdefault(row_id, ([*participants, THERAPIST, group], {}))
        entry[1][name] = RatedRow.model_validate(data)
    return out


def unit_table(
    dimension: Dimension, rows: dict[int, tuple[list[str], dict[str, RatedRow]]]
) -> dict[str, dict[tuple[Any, ...], Value]]:
    """rater -> unit -> value for one dimension (units are ``(row id, *key)``)."""
    table: dict[str, dict[tuple[Any, ...], Value]] = defaultdict(dict)
    for row_id, (candidates, by_rater) in rows.items():
        given = {rater: dimension.values(rated, candidates) for rater, rated in by_rater.items()}
        keys = {key for values in given.values() for key in values}
        for rater, values in given.items():
            for key in keys:
                value = values.get(key, dimension.fill)
                if value is not None:
                    table[rater][(row_id, *key)] = value
    return table


def _alpha(matrix: np.ndarray[Any, Any], level: Level) -> float | None:
    import krippendorff

    present = ~np.isnan(matrix)
    if matrix.shape[0] < 2 or matrix.shape[1] == 0 or np.unique(matrix[present]).size < 2:
        return None  # undefined: nothing pairable, or no variation at all
    alpha = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))
    return None if math.isnan(alpha) else alpha


def _kappa(a: list[float], b: list[float], level: Level) -> float | None:
    from sklearn.metrics import cohen_kappa_score

    if len(set(a) | set(b)) < 2:
        return None  # one label throughout: kappa is undefined
    weights = "linear" if level == "ordinal" else None
    value = float(cohen_kappa_score(a, b, weights=weights))
    return None if math.isnan(value) else value


def dimension_agreement(
    dimension: Dimension, table: dict[str, dict[tuple[Any, ...], Value]]
) -> DimensionAgreement:
    raters = sorted(table)
    counts: dict[tuple[Any, ...], int] = defaultdict(int)
    for values in table.values():
        for unit in values:
            counts[unit] += 1
    units = sorted((u for u, n in counts.items() if n >= 2), key=repr)
    index = {u: i for i, u in enumerate(units)}
    codes = _codes(table) if dimension.level == "nominal" else {}
    matrix = np.array(
        [[_number(table[r].get(u), codes) for u in units] for r in raters], dtype=np.float64
    ).reshape(len(raters), len(units))
    pairs = []
    for a, b in combinations(raters, 2):
        common = [u for u in units if u in table[a] and u in table[b]]
        if len(common) >= 2:
            first, second = (matrix[raters.index(r), [index[u] for u in common]] for r in (a, b))
            kappa = _kappa(first.tolist(), second.tolist(), dimension.level)
            pairs.append(PairKappa((a, b), len(common), kappa))
    return DimensionAgreement(
        dimension.name,
        dimension.level,
        dimension.rule,
        len(units),
        len(raters),
        _alpha(matrix, dimension.level),
        tuple(pairs),
        tuple(tuple(float(x) for x in row) for row in matrix),
        tuple(raters),
    )


def _codes(table: dict[str, dict[tuple[Any, ...], Value]]) -> dict[Value, int]:
    labels = sorted({str(v) for values in table.values() for v in values.values()})
    return {label: i for i, label in enumerate(labels)}


def _number(value: Value | None, codes: dict[Value, int]) -> float:
    if value is None:
        return math.nan
    return float(codes[str(value)]) if codes else float(value)


def agreement(session: Session, dimensions: Iterable[Dimension] = DIMENSIONS) -> list[DimensionAgreement]:
    """Per dimension: units, raters, Krippendorff's alpha and pairwise Cohen's kappa of the reviews."""
    rows = reviews_by_row(session)
    return [dimension_agreement(d, unit_table(d, rows)) for d in dimensions]
