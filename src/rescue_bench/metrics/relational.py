"""Relation-aware analyses of a run's records, from the gold annotations of the samples (docs/robustness.md).

* RPP accuracy by gold transition (the previous labelled row's pattern -> the current one) and by segment
  (``stable``: same pattern as before, ``changing``, ``start``: the first labelled row);
* STP and SSP by target type of the annotated move (``one person``, ``group``: the couple or family label,
  ``several people``: two or more names);
* ITP, STP and SSP by the relation pattern in force at the decision row (the latest labelled pattern at or
  before it: ITP's decision row, the last row before STP's and SSP's unseen therapist turn);
* ER by gold intensity band, VP by the number of distinct gold targets.

Every group has its count, its number of conversations and a 95% cluster-bootstrap CI per metric
(conversations resampled within their scenario, :mod:`rescue_bench.metrics.bootstrap`).

The metrics layer cannot import the data layer, so samples are read through the structural
:class:`SampleLike` (``rescue_bench.data.schema.Sample`` fits it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from rescue_bench.metrics.aggregate import as_line, rank_scores, top1
from rescue_bench.metrics.bootstrap import cluster_bootstrap_cis
from rescue_bench.metrics.classification import FloatArray, safe_div
from rescue_bench.records import Json
from rescue_bench.rundir import PredictionLine
from rescue_bench.taxonomy import GROUP_LABELS, THERAPIST, relation_labels

Record = PredictionLine
FORMAT = 1
START = "start"
NONE = "(none)"
BANDS = ((0, 3, "low (0-3)"), (4, 6, "medium (4-6)"), (7, 10, "high (7-10)"))
GENERATION_KEYS = ("llm", "s_emo", "s_int", "total_0_6", "pairing", "viewpoint", "bertscore_f1")
"""Per-record scores of ER and VP shown when every record of the group has them (judge scores only after
judging)."""


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


@dataclass(frozen=True, slots=True)
class Group:
    """One group of one analysis: its records' metric values with CIs."""

    scenario: str
    """``couple``, ``family`` or ``all`` (pooled)."""
    group: str
    n: int
    conversations: int
    values: dict[str, float]
    ci: dict[str, tuple[float, float]]

    def to_json(self) -> dict[str, Json]:
        return {
            "scenario": self.scenario,
            "group": self.group,
            "n": self.n,
            "conversations": self.conversations,
            "values": self.values,
            "ci": {k: list(v) for k, v in self.ci.items()},
        }


@dataclass(frozen=True, slots=True)
class Analysis:
    """One analysis: a task's records split into groups by a gold fact."""

    key: str
    task: str
    title: str
    metrics: tuple[str, ...]
    groups: tuple[Group, ...]

    def to_json(self) -> dict[str, Json]:
        return {
            "task": self.task,
            "title": self.title,
            "metrics": list(self.metrics),
            "groups": [g.to_json() for g in self.groups],
        }


def _clean(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def pattern_field(sample: SampleLike) -> str:
    """The row field of the sample's relation patterns: ``relation_cycle_state`` when any row has one, else
    ``relation_pattern`` (the RPP task's ``auto`` gold rule, which release samples need)."""
    has_cycle = any(_clean(row.relation_cycle_state) for row in sample.rows)
    return "relation_cycle_state" if has_cycle else "relation_pattern"


def pattern_sequence(sample: SampleLike, field: str | None = None) -> dict[int, str]:
    """Row index -> in-taxonomy gold pattern, for the labelled rows of the sample."""
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


def intensity_band(gold: object) -> str | None:
    """The band of an ER gold intensity.

    >>> intensity_band({"intensity": 7}), intensity_band({"intensity": 2}), intensity_band({})
    ('high (7-10)', 'low (0-3)', None)
    """
    level = gold.get("intensity") if isinstance(gold, dict) else None
    if not isinstance(level, int | float) or isinstance(level, bool):
        return None
    return next((name for lo, hi, name in BANDS if lo <= level <= hi), None)


def target_count(gold: object) -> str | None:
    """``1``, ``2`` or ``3+`` distinct gold targets of a VP instance."""
    if not isinstance(gold, list):
        return None
    n = len({_clean(g.get("target")) for g in gold if isinstance(g, dict)} - {""})
    return None if n == 0 else str(n) if n < 3 else "3+"


def record_values(task: str, record: Record) -> dict[str, float]:
    """The per-record values averaged in a group: top-1 ``accuracy`` (ITP, RPP), ``recall_at_1`` and
    ``mrr`` (STP, SSP), the stored scores (ER, VP)."""
    if task in ("itp", "rpp"):
        return {"accuracy": float(top1(record) == record.gold)}
    if task in ("stp", "ssp"):
        recall, _, _, mrr = rank_scores(record)
        return {"recall_at_1": recall, "mrr": mrr}
    scores = record.scores
    return {k: float(v) for k in GENERATION_KEYS if isinstance(v := scores.get(k), int | float)}


Grouper = Callable[[Record, SampleLike | None], str | None]


def analyse(
    key: str,
    title: str,
    task: str,
    records: Sequence[Record],
    samples: Mapping[str, SampleLike],
    grouper: Grouper,
    *,
    by_scenario: bool,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Analysis:
    """Split ``task``'s records by ``grouper`` (a record left out when it gives ``None``) and summarise each
    group, per scenario when the groups are scenario labels, else pooled as ``all``."""
    grouped: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        if record.task != task:
            continue
        group = grouper(record, samples.get(record.sample_id))
        if group is not None:
            scope = record.scenario if by_scenario else "all"
            grouped.setdefault((scope, group), []).append(record)
    groups = tuple(
        summarize(scope, group, task, members, n_resamples=n_resamples, seed=seed)
        for (scope, group), members in sorted(grouped.items())
    )
    metrics = tuple(dict.fromkeys(m for g in groups for m in g.values))
    return Analysis(key, task, title, metrics, groups)


def summarize(
    scope: str, group: str, task: str, records: Sequence[Record], *, n_resamples: int = 1000, seed: int = 0
) -> Group:
    """Means of the records' values (those every record has) with cluster-bootstrap CIs."""
    values = [record_values(task, r) for r in records]
    keys = [k for k in values[0] if all(k in v for v in values)]
    features = np.asarray([[1.0, *(v[k] for k in keys)] for v in values], dtype=np.float64)

    def from_sums(sums: FloatArray) -> dict[str, FloatArray]:
        return {k: safe_div(sums[..., i + 1], sums[..., 0]) for i, k in enumerate(keys)}

    cis = cluster_bootstrap_cis(
        features,
        [r.sample_id for r in records],
        from_sums,
        n_resamples=n_resamples,
        seed=seed,
        strata=[r.scenario for r in records],
    )
    totals = features.sum(axis=0)
    point = {k: float(totals[i + 1] / totals[0]) for i, k in enumerate(keys)}
    conversations = len({r.sample_id for r in records})
    return Group(scope, group, len(records), conversations, point, {k: cis[k] for k in keys})


def _previous_pattern(record: Record, sample: SampleLike) -> str | None:
    field = (record.meta or {}).get("gold_field")
    sequence = pattern_sequence(sample, field if isinstance(field, str) else None)
    return latest_before(sequence, record.row_index - 1)


def by_transition(record: Record, sample: SampleLike | None) -> str | None:
    """``previous -> current`` gold pattern of an RPP record (``start -> current`` for the first)."""
    if sample is None:
        return None
    return f"{_previous_pattern(record, sample) or START} -> {record.gold}"


def by_segment(record: Record, sample: SampleLike | None) -> str | None:
    """``stable`` (the previous labelled row had the same pattern), ``changing`` or ``start``."""
    if sample is None:
        return None
    previous = _previous_pattern(record, sample)
    return START if previous is None else "stable" if previous == record.gold else "changing"


def by_pattern_in_force(record: Record, sample: SampleLike | None) -> str | None:
    """The gold pattern in force at the decision row: ITP's row itself, the row before STP's and SSP's
    therapist turn (the last one the model sees); ``(none)`` before the first labelled row."""
    if sample is None:
        return None
    row = record.row_index - (0 if record.task == "itp" else 1)
    return latest_before(pattern_sequence(sample), row) or NONE


def by_target_type(record: Record, sample: SampleLike | None) -> str | None:
    if sample is None or not 1 <= record.row_index <= len(sample.rows):
        return None
    return target_type(sample, record.row_index)


ANALYSES: tuple[tuple[str, str, str, Grouper, bool], ...] = (
    ("rpp_transition", "rpp", "RPP accuracy by gold transition (previous -> current)", by_transition, True),
    ("rpp_segment", "rpp", "RPP accuracy in stable and changing segments", by_segment, True),
    ("stp_target_type", "stp", "STP by target type", by_target_type, False),
    ("ssp_target_type", "ssp", "SSP by target type", by_target_type, False),
    ("itp_pattern", "itp", "ITP by the relation pattern in force", by_pattern_in_force, True),
    ("stp_pattern", "stp", "STP by the relation pattern in force", by_pattern_in_force, True),
    ("ssp_pattern", "ssp", "SSP by the relation pattern in force", by_pattern_in_force, True),
    ("er_intensity", "er", "ER by gold intensity band", lambda r, _s: intensity_band(r.gold), False),
    ("vp_targets", "vp", "VP by number of gold targets", lambda r, _s: target_count(r.gold), False),
)
"""(key, task, title, grouper, per scenario) of every analysis, in report order."""


def relational_analyses(
    given: Sequence[PredictionLine | Mapping[str, Any]],
    samples: Sequence[SampleLike],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Json]:
    """Every analysis with data, keyed as :data:`ANALYSES`, for ``scores.json``'s ``_relational``.

    ``records`` are prediction records of any tasks (with judge scores merged in, for ER and VP's judge
    metrics); ``samples`` the run's samples (records of other samples are left out).
    """
    records = [as_line(r) for r in given]
    by_id = {s.sample_id: s for s in samples}
    out: dict[str, Json] = {}
    for key, task, title, grouper, per_scenario in ANALYSES:
        analysis = analyse(
            key,
            title,
            task,
            records,
            by_id,
            grouper,
            by_scenario=per_scenario,
            n_resamples=n_resamples,
            seed=seed,
        )
        if analysis.groups:
            out[key] = analysis.to_json()
    out["_meta"] = {
        "format": FORMAT,
        "ci": {"method": "percentile cluster bootstrap", "cluster": "sample_id", "strata": "scenario"},
        "n_resamples": n_resamples,
        "seed": seed,
    }
    return out


def analyses_of(data: Mapping[str, Json]) -> list[Analysis]:
    """:class:`Analysis` records back from :func:`relational_analyses` output (``scores.json``)."""
    out = []
    for key, value in data.items():
        if key.startswith("_") or not isinstance(value, dict):
            continue
        groups = tuple(
            Group(
                str(g["scenario"]),
                str(g["group"]),
                int(g["n"]),
                int(g["conversations"]),
                {k: float(v) for k, v in g["values"].items()},
                {k: (float(v[0]), float(v[1])) for k, v in g["ci"].items()},
            )
            for g in value["groups"]
        )
        out.append(Analysis(key, str(value["task"]), str(value["title"]), tuple(value["metrics"]), groups))
    return out
