"""Relation-aware analyses of a run's records, from the gold annotations of the samples (docs/robustness.md).

* RPP accuracy by gold transition (the previous labelled row's pattern -> the current one) and by segment
  (``stable``: same pattern as before, ``changing``, ``start``: the first labelled row);
* STP and SSP by target type of the annotated move (``one person``, ``group``: the couple or family label,
  ``several people``: two or more names);
* ITP, STP and SSP by the relation pattern in force at the decision row (the latest labelled pattern at or
  before it: ITP's decision row, the last row before STP's and SSP's unseen therapist turn);
* ER by gold intensity band, VP by the number of distinct gold targets.

Which analyses a task has is the task's own fact (``TaskInfo.analyses``, a tuple of the
:class:`AnalysisSpec` records defined here); :func:`analysis_plan` reads it from the task registry's infos, so
no task name is written in this module.

Every group has its count, its number of conversations and a 95% cluster-bootstrap CI per metric
(conversations resampled within their scenario, :mod:`rescue_bench.metrics.bootstrap`).

The gold facts and the groupers are in :mod:`rescue_bench.metrics.relational_gold`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from rescue_bench.metrics.bootstrap import cluster_bootstrap_cis
from rescue_bench.metrics.classification import FloatArray, safe_div
from rescue_bench.metrics.plan import rank_scores, top1
from rescue_bench.metrics.relational_gold import (
    INTENSITY_BAND,
    PATTERN_AT_ROW,
    PATTERN_BEFORE_ROW,
    SAMPLE_FREE,
    SEGMENT,
    TARGET_COUNT,
    TARGET_TYPE,
    TRANSITION,
    AnalysisSpec,
    IndexedSample,
    SampleLike,
)
from rescue_bench.records import Json, TaskKind
from rescue_bench.rundir import PredictionLine

FORMAT = 1
TOP1_KINDS: frozenset[TaskKind] = frozenset({"binary", "multiclass"})
"""Kinds whose group value is top-1 ``accuracy``; ranking tasks show ``recall_at_1`` and ``mrr``."""
GENERATION_KEYS = ("llm", "s_emo", "s_int", "total_0_6", "pairing", "viewpoint", "bertscore_f1")
"""Per-record scores of ER and VP shown when every record of the group has them (judge scores only after
judging)."""


class Group(BaseModel):
    """One group of one analysis: its records' metric values with CIs (as stored in ``scores.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario: str
    """``couple``, ``family`` or ``all`` (pooled)."""
    group: str
    n: int
    conversations: int
    values: dict[str, float]
    ci: dict[str, tuple[float, float]]

    def to_json(self) -> dict[str, Json]:
        return self.model_dump(mode="json")


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


def record_values(kind: TaskKind, record: PredictionLine) -> dict[str, float]:
    """The per-record values averaged in a group: top-1 ``accuracy`` (binary, multiclass), ``recall_at_1``
    and ``mrr`` (ranking), the stored scores (generation)."""
    if kind in TOP1_KINDS:
        return {"accuracy": float(top1(record) == record.gold)}
    if kind == "ranking":
        recall, _, _, mrr = rank_scores(record)
        return {"recall_at_1": recall, "mrr": mrr}
    scores = record.scores
    present = {k: float(v) for k, v in scores.items() if v is not None}
    return {k: present[k] for k in GENERATION_KEYS if k in present}


@dataclass(frozen=True, slots=True)
class TaskAnalyses:
    """A task's analyses, as :func:`analysis_plan` reads them from its info."""

    task: str
    kind: TaskKind
    specs: tuple[AnalysisSpec, ...]


class HasAnalyses(Protocol):
    """What :func:`analysis_plan` reads of a task's info (``rescue_bench.tasks.base.TaskInfo`` fits)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> TaskKind: ...
    @property
    def analyses(self) -> tuple[AnalysisSpec, ...]: ...


def analysis_plan(infos: Iterable[HasAnalyses]) -> list[TaskAnalyses]:
    """Every task with analyses, in the given (registry) order."""
    return [TaskAnalyses(i.name, i.kind, tuple(i.analyses)) for i in infos if i.analyses]


def analyse(
    plan: TaskAnalyses,
    spec: AnalysisSpec,
    records: Sequence[PredictionLine],
    samples: Mapping[str, SampleLike],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Analysis:
    """Split the task's records by the spec's grouper (a record left out when it gives ``None``) and
    summarise each group, per scenario or pooled as ``all``."""
    grouped: dict[tuple[str, str], list[PredictionLine]] = {}
    for record in records:
        if record.task != plan.task:
            continue
        group = spec.grouper(record, samples.get(record.sample_id))
        if group is not None:
            scope = record.scenario if spec.per_scenario else "all"
            grouped.setdefault((scope, group), []).append(record)
    groups = tuple(
        summarize(scope, group, plan.kind, members, n_resamples=n_resamples, seed=seed)
        for (scope, group), members in sorted(grouped.items())
    )
    metrics = tuple(dict.fromkeys(m for g in groups for m in g.values))
    title = f"{plan.task.upper()} {spec.title}"
    return Analysis(f"{plan.task}_{spec.key}", plan.task, title, metrics, groups)


def summarize(
    scope: str,
    group: str,
    kind: TaskKind,
    records: Sequence[PredictionLine],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Group:
    """Means of the records' values (those every record has) with cluster-bootstrap CIs."""
    values = [record_values(kind, r) for r in records]
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
    return Group(
        scenario=scope,
        group=group,
        n=len(records),
        conversations=conversations,
        values=point,
        ci={k: cis[k] for k in keys},
    )


def relational_analyses(
    given: Sequence[PredictionLine],
    samples: Sequence[SampleLike],
    plan: Sequence[TaskAnalyses],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Json]:
    """Every analysis of ``plan`` with data, keyed ``<task>_<spec key>``, for ``scores.json``'s
    ``_relational``, in plan order.

    ``given`` are prediction records of any tasks (with judge scores merged in, for ER and VP's judge
    metrics); ``samples`` the run's samples (records of other samples are left out of the analyses that
    need one).
    """
    by_id: dict[str, SampleLike] = {s.sample_id: IndexedSample(s) for s in samples}
    out: dict[str, Json] = {}
    for task in plan:
        for spec in task.specs:
            result = analyse(task, spec, given, by_id, n_resamples=n_resamples, seed=seed)
            if result.groups:
                out[result.key] = result.to_json()
    out["_meta"] = {
        "format": FORMAT,
        "ci": {"method": "percentile cluster bootstrap", "cluster": "sample_id", "strata": "scenario"},
        "n_resamples": n_resamples,
        "seed": seed,
    }
    return out


def sample_free(plan: Sequence[TaskAnalyses]) -> list[TaskAnalyses]:
    """The part of ``plan`` that needs no samples (:data:`SAMPLE_FREE`)."""
    kept = [TaskAnalyses(t.task, t.kind, tuple(s for s in t.specs if s.key in SAMPLE_FREE)) for t in plan]
    return [t for t in kept if t.specs]


def refreshed(
    stored: Mapping[str, Json],
    given: Sequence[PredictionLine],
    plan: Sequence[TaskAnalyses],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Json]:
    """``stored`` (a run's ``_relational``) with the analyses that need no samples computed again from
    ``given`` (after a judge pass, whose scores they then include); the others are kept as stored."""
    fresh = relational_analyses(given, (), sample_free(plan), n_resamples=n_resamples, seed=seed)
    fresh.pop("_meta")
    return {**stored, **fresh}


class _StoredAnalysis(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    task: str
    title: str
    metrics: tuple[str, ...]
    groups: tuple[Group, ...]


def analyses_of(data: Mapping[str, Json]) -> list[Analysis]:
    """:class:`Analysis` records back from :func:`relational_analyses` output (``scores.json``).

    Raises:
        ValueError: an analysis does not have the documented shape (pydantic's ``ValidationError``).
    """
    out = []
    for key, value in data.items():
        if key.startswith("_"):
            continue
        stored = _StoredAnalysis.model_validate(value)
        out.append(Analysis(key, stored.task, stored.title, stored.metrics, stored.groups))
    return out


__all__ = [
    "INTENSITY_BAND",
    "PATTERN_AT_ROW",
    "PATTERN_BEFORE_ROW",
    "SEGMENT",
    "TARGET_COUNT",
    "TARGET_TYPE",
    "TRANSITION",
    "Analysis",
    "AnalysisSpec",
    "Group",
    "SampleLike",
    "TaskAnalyses",
    "analyses_of",
    "analysis_plan",
    "relational_analyses",
]
