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
from typing import Any, Literal

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from rescue_bench.data.schema import parse_intensity
from rescue_bench.review.db import Review, RowRecord, Segment, User
from rescue_bench.review.forms import relation_keys
from rescue_bench.taxonomy import GROUP_LABELS, THERAPIST

Level = Literal["ordinal", "nominal"]
NONE = "(none)"
Value = int | str
UnitValues = dict[tuple[Any, ...], Value]
"""unit -> value, for one rater."""


@dataclass(frozen=True, slots=True)
class Dimension:
    name: str
    level: Level
    rule: str
    values: Callable[[dict[str, Any], list[str]], UnitValues]
    """(row data, candidates) -> this rater's value per unit (the row is added to the unit key)."""
    fill: Value | None = None
    """The value of a rater who reviewed the row but gave nothing for a unit another rater gave (``None``:
    missing)."""


def _first_by(items: Any, key: str, value: Callable[[dict[str, Any]], Value | None]) -> UnitValues:
    out: UnitValues = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get(key), str) and (item[key],) not in out:
            found = value(item)
            if found is not None:
                out[(item[key],)] = found
    return out


def _intensity(data: dict[str, Any], _c: list[str]) -> UnitValues:
    return _first_by(data.get("internal_emotion"), "person", lambda e: parse_intensity(e.get("intensity")))


def _emotion(data: dict[str, Any], candidates: list[str]) -> UnitValues:
    given = data.get("internal_emotion")
    named = {e.get("person") for e in given if isinstance(e, dict)} if isinstance(given, list) else set()
    return {(c,): int(c in named) for c in candidates}


def _label(key: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any], list[str]], UnitValues]:
    def values(data: dict[str, Any], _c: list[str]) -> UnitValues:
        value = data.get(key(data))
        return {(): value.strip()} if isinstance(value, str) and value.strip() else {}

    return values


def _strategy(data: dict[str, Any], _c: list[str]) -> UnitValues:
    return _first_by(data.get("support_strategy"), "provider", lambda s: s.get("strategy_type") or None)


def _targets(data: dict[str, Any], candidates: list[str]) -> UnitValues:
    given = data.get("target")
    named = {t for t in given if isinstance(t, str)} if isinstance(given, list) else set()
    return {(c,): int(c in named) for c in candidates}


def _viewpoints(data: dict[str, Any], candidates: list[str]) -> UnitValues:
    given = data.get("viewpoints_attitudes")
    pairs = {
        (v.get("source"), v.get("target"))
        for v in (given if isinstance(given, list) else [])
        if isinstance(v, dict)
    }
    return {(s, t): int((s, t) in pairs) for s in candidates for t in candidates if s != t}


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("intensity", "ordinal", "row x person; the first emotion given for the person", _intensity),
    Dimension(
        "utterance_type",
        "nominal",
        "row; rows where a rater gave one",
        _label(lambda _d: "utterance_type"),
        NONE,
    ),
    Dimension(
        "relation_pattern",
        "nominal",
        "row; rows where a rater gave one",
        _label(lambda d: relation_keys(d)[0]),
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


def reviews_by_row(session: Session) -> dict[int, tuple[list[str], dict[str, dict[str, Any]]]]:
    """row id -> (candidates, rater name -> values), for rows of active segments with two or more reviews."""
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
    out: dict[int, tuple[list[str], dict[str, dict[str, Any]]]] = {}
    for row_id, data, name, participants, scenario in session.execute(stmt):
        group = GROUP_LABELS.get(scenario, "Couple")
        entry = out.setdefault(row_id, ([*participants, THERAPIST, group], {}))
        entry[1][name] = data
    return out


def unit_table(
    dimension: Dimension, rows: dict[int, tuple[list[str], dict[str, dict[str, Any]]]]
) -> dict[str, dict[tuple[Any, ...], Value]]:
    """rater -> unit -> value for one dimension (units are ``(row id, *key)``)."""
    table: dict[str, dict[tuple[Any, ...], Value]] = defaultdict(dict)
    for row_id, (candidates, by_rater) in rows.items():
        given = {rater: dimension.values(data, candidates) for rater, data in by_rater.items()}
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
