"""Aggregation of a run's per-instance records (``predictions.jsonl`` lines) into ``scores.json``.

Scores are micro means over instances per scope: ``couple``, ``family`` and ``all`` (both pooled, as the
paper's "Both" rows). Every headline metric gets a 95% cluster bootstrap CI that resamples whole samples
(conversations) within their scenario (:mod:`rescue_bench.metrics.bootstrap`). A scope without instances is
left out, except ``all``.

Invalid predictions are misses here whatever their record says (an ``<invalid>`` top-1, rank scores 0,
generation floors; see :mod:`rescue_bench.metrics.generation`), and they are counted: ``valid``,
``parse_failures`` and ``invalid_labels`` sit next to the metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rescue_bench.errors import ConfigError, DataError
from rescue_bench.metrics.bootstrap import SumsFn, cluster_bootstrap_cis
from rescue_bench.metrics.classification import (
    INVALID,
    FloatArray,
    accuracy_by_position,
    binary_from_confusion,
    binary_metrics,
    multiclass_from_confusion,
    multiclass_metrics,
    safe_div,
)
from rescue_bench.metrics.generation import FEATURES, FROM_SUMS, generation_summary
from rescue_bench.metrics.ranking import RANK_KEYS, top1_confusion
from rescue_bench.records import Prediction, TaskKind
from rescue_bench.taxonomy import SCENARIOS, relation_labels

Record = Mapping[str, Any]
SCOPES = ("couple", "family", "all")
TASK_KINDS: dict[str, TaskKind] = {
    "itp": "binary",
    "rpp": "multiclass",
    "stp": "ranking",
    "ssp": "ranking",
    "er": "generation",
    "vp": "generation",
}
HEADLINE: dict[str, tuple[str, ...]] = {
    "itp": ("precision", "recall", "f1", "accuracy", "balanced_accuracy"),
    "rpp": ("accuracy", "macro_f1", "recall_at_2", "recall_at_3", "mrr"),
    "stp": ("recall_at_1", "mrr", "recall_at_2", "recall_at_3"),
    "ssp": ("recall_at_1", "mrr", "recall_at_2", "recall_at_3"),
    "er": ("llm", "s_emo", "s_int", "bertscore_f1"),
    "vp": ("llm", "total_0_6", "pairing", "viewpoint", "bertscore_f1"),
}
"""Metrics reported with a CI per task; the paper's columns are :data:`PAPER_METRICS`."""
PAPER_METRICS: dict[str, tuple[str, ...]] = {
    "itp": ("precision", "recall", "f1"),
    "rpp": ("accuracy",),
    "stp": ("recall_at_1", "mrr"),
    "ssp": ("recall_at_1", "mrr"),
    "er": ("llm", "bertscore_f1"),
    "vp": ("llm", "bertscore_f1"),
}
REQUIRED_FIELDS = ("instance_id", "sample_id", "scenario", "gold", "valid")
N_POSITION_BINS = 10


def top1(record: Record) -> str:
    """The first answer of a valid prediction (a label, or the head of a ranked list), else ``<invalid>``.

    >>> top1({"valid": True, "prediction": ["b", "a"]}), top1({"valid": False, "prediction": ["b"]})
    ('b', '<invalid>')
    """
    value = record.get("prediction")
    if not record.get("valid") or value is None:
        return INVALID
    if isinstance(value, list | tuple):
        return str(value[0]) if value else INVALID
    return str(value)


def rank_scores(record: Record) -> list[float]:
    """``recall_at_1..3, mrr`` of a record's scores; zeros for an invalid prediction or a missing score.

    >>> scores = {"recall_at_1": 0.0, "recall_at_2": 1.0, "recall_at_3": 1.0, "mrr": 0.5}
    >>> rank_scores({"valid": True, "scores": scores})
    [0.0, 1.0, 1.0, 0.5]
    """
    if not record.get("valid"):
        return [0.0] * len(RANK_KEYS)
    scores = record.get("scores") or {}
    return [float(scores.get(key) or 0.0) for key in RANK_KEYS]


@dataclass(frozen=True, slots=True)
class MetricPlan:
    """How a task's headline metrics come from records: per-record features, and a vectorised map of their
    sums to metric values."""

    features: Callable[[Record], list[float]]
    from_sums: SumsFn
    width: int

    def matrix(self, records: Sequence[Record]) -> FloatArray:
        return np.asarray([self.features(r) for r in records], dtype=np.float64).reshape(
            len(records), self.width
        )

    def values(self, records: Sequence[Record]) -> dict[str, float]:
        return {k: float(v) for k, v in self.from_sums(self.matrix(records).sum(axis=0)).items()}


def _binary_plan() -> MetricPlan:
    columns = {"yes": 0, "no": 1}

    def features(record: Record) -> list[float]:
        row = np.zeros(6)
        row[3 * (0 if record["gold"] == "yes" else 1) + columns.get(top1(record), 2)] = 1.0
        return row.tolist()

    def from_sums(sums: FloatArray) -> dict[str, FloatArray]:
        metrics = binary_from_confusion(sums.reshape(*sums.shape[:-1], 2, 3))
        return {name: metrics[name] for name in HEADLINE["itp"]}

    return MetricPlan(features, from_sums, 6)


def _multiclass_plan(labels: Sequence[str]) -> MetricPlan:
    size = len(labels) + 1  # last row: gold outside the set; last column: invalid prediction
    index = {label: i for i, label in enumerate(labels)}

    def features(record: Record) -> list[float]:
        row = np.zeros(size * size + 3)
        row[size * index.get(record["gold"], size - 1) + index.get(top1(record), size - 1)] = 1.0
        row[size * size :] = rank_scores(record)[1:]
        return row.tolist()

    def from_sums(sums: FloatArray) -> dict[str, FloatArray]:
        table = sums[..., : size * size].reshape(*sums.shape[:-1], size, size)
        metrics = multiclass_from_confusion(table, size - 1)
        n = table.sum(axis=(-2, -1))
        out = {"accuracy": metrics["accuracy"], "macro_f1": metrics["macro_f1"]}
        out.update({key: safe_div(sums[..., size * size + i], n) for i, key in enumerate(RANK_KEYS[1:])})
        return out

    return MetricPlan(features, from_sums, size * size + 3)


def _ranking_plan() -> MetricPlan:
    def from_sums(sums: FloatArray) -> dict[str, FloatArray]:
        return {key: safe_div(sums[..., i + 1], sums[..., 0]) for i, key in enumerate(RANK_KEYS)}

    return MetricPlan(lambda record: [1.0, *rank_scores(record)], from_sums, 1 + len(RANK_KEYS))


def _generation_plan(task: str) -> MetricPlan:
    if task not in FEATURES:
        raise ConfigError(f"no generation metrics for task {task!r}; expected one of {sorted(FEATURES)}")
    features = FEATURES[task]
    return MetricPlan(lambda r: features(r.get("scores") or {}, bool(r.get("valid"))), FROM_SUMS[task], 7)


def metric_plan(task: str, kind: TaskKind, labels: Sequence[str] = ()) -> MetricPlan:
    """The :class:`MetricPlan` of a task; ``labels`` is the closed label set of a multiclass task.

    >>> plan = metric_plan("stp", "ranking")
    >>> hit = {"valid": True, "scores": {"recall_at_1": 1.0, "mrr": 1.0}}
    >>> plan.values([hit, {"valid": False}])["recall_at_1"]
    0.5
    """
    if kind == "binary":
        return _binary_plan()
    if kind == "multiclass":
        return _multiclass_plan(list(dict.fromkeys(labels)))
    if kind == "ranking":
        return _ranking_plan()
    return _generation_plan(task)


def check_records(task: str, records: Iterable[Record]) -> None:
    """Raise a one-line :class:`DataError` for a record without a required field or with a bad scenario."""
    for number, record in enumerate(records, start=1):
        where = f"{task} prediction record {number} ({record.get('instance_id', '?')})"
        missing = [name for name in REQUIRED_FIELDS if name not in record]
        if missing:
            raise DataError(f"{where}: missing field {missing[0]!r}")
        if record["scenario"] not in SCENARIOS:
            raise DataError(f"{where}: field 'scenario' is {record['scenario']!r}, expected couple or family")
        if task == "itp" and record["gold"] not in ("yes", "no"):
            raise DataError(f"{where}: field 'gold' is {record['gold']!r}, expected 'yes' or 'no'")


def scope_records(records: Sequence[Record]) -> dict[str, list[Record]]:
    """Records per scope: each scenario that has instances, and ``all`` (always present).

    >>> {k: len(v) for k, v in scope_records([{"scenario": "family"}, {"scenario": "family"}]).items()}
    {'family': 2, 'all': 2}
    """
    scopes: dict[str, list[Record]] = {s: [r for r in records if r["scenario"] == s] for s in SCENARIOS}
    out = {scope: rs for scope, rs in scopes.items() if rs}
    out["all"] = list(records)
    return out


def scope_labels(
    records: Sequence[Record], labels_by_scenario: Mapping[str, Sequence[str]] | None
) -> list[str]:
    """The label set of a scope: the union (in order) of the label sets of the scenarios present.

    >>> scope_labels([{"scenario": "couple"}], {"couple": ["a", "b"], "family": ["b", "c"]})
    ['a', 'b']
    """
    present = [s for s in SCENARIOS if any(r["scenario"] == s for r in records)]
    labels: dict[str, None] = {}
    for scenario in present:
        chosen = labels_by_scenario[scenario] if labels_by_scenario else relation_labels(scenario)
        labels.update(dict.fromkeys(chosen))
    return list(labels)


def _counts(records: Sequence[Record]) -> dict[str, int]:
    predictions = [
        Prediction(str(r["instance_id"]), None, bool(r["valid"]), tuple(r.get("problems") or ()))
        for r in records
    ]
    return {
        "valid": sum(p.valid for p in predictions),
        "parse_failures": sum(p.parse_failure for p in predictions),
        "invalid_labels": sum(p.invalid_label for p in predictions),
    }


def _extras(task: str, kind: TaskKind, records: Sequence[Record], labels: Sequence[str]) -> dict[str, Any]:
    golds = [r["gold"] for r in records]
    preds: list[str | None] = [None if (t := top1(r)) == INVALID else t for r in records]
    if kind == "binary":
        m = binary_metrics(golds, preds)
        keys = ("tp", "fp", "tn", "fn", "invalid", "precision_no", "recall_no", "f1_no", "confusion")
        return {key: m[key] for key in keys}
    if kind == "multiclass":
        m = multiclass_metrics(golds, preds, labels)
        out = {key: m[key] for key in ("macro_precision", "macro_recall", "per_label", "confusion")}
        out["by_position"] = position_summary(records)
        return out
    if kind == "ranking":
        return {"confusion": top1_confusion([str(g) for g in golds], preds)}
    summary = generation_summary(
        task, [r.get("scores") or {} for r in records], [bool(r["valid"]) for r in records]
    )
    return {key: summary[key] for key in ("n_judged", "n_unscored", "n_bertscore")}


def relative_position(record: Record) -> float | None:
    """``meta["relative_position"]`` (or ``meta["position"]``, as the RPP task writes it) when numeric.

    >>> relative_position({"meta": {"position": 0.25}}), relative_position({"meta": {"position": "x"}})
    (0.25, None)
    """
    meta = record.get("meta") or {}
    for key in ("relative_position", "position"):
        value = meta.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def position_summary(records: Sequence[Record], n_bins: int = N_POSITION_BINS) -> dict[str, Any]:
    """Top-1 accuracy and gold counts per relative-position bin (:func:`relative_position`; RPP).

    Records without a numeric position are counted in ``n_without_position`` and left out of the bins.

    >>> hit = {"gold": "a", "valid": True, "prediction": ["a"], "meta": {"relative_position": 0.5}}
    >>> recs = [hit, {"gold": "a"}]
    >>> out = position_summary(recs, n_bins=2)
    >>> out["n_without_position"], [(b["n"], b["accuracy"]) for b in out["bins"]]
    (1, [(0, 0.0), (1, 1.0)])
    """
    placed = [(position, r) for r in records if (position := relative_position(r)) is not None]
    bins = accuracy_by_position(
        [position for position, _ in placed],
        [float(top1(r) == r["gold"]) for _, r in placed],
        [str(r["gold"]) for _, r in placed],
        n_bins,
    )
    return {"n_bins": n_bins, "n_without_position": len(records) - len(placed), "bins": bins}


def _point_estimates(
    task: str, kind: TaskKind, plan: MetricPlan, records: Sequence[Record]
) -> dict[str, Any]:
    if kind == "generation":
        summary = generation_summary(
            task, [r.get("scores") or {} for r in records], [bool(r["valid"]) for r in records]
        )
        return {name: summary[name] for name in HEADLINE[task]}
    return plan.values(records)


def summarize_scope(
    task: str,
    kind: TaskKind,
    records: Sequence[Record],
    labels: Sequence[str] = (),
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """One scope of one task: ``n``, headline metrics, their CIs, counts, and the task's extra tables."""
    plan = metric_plan(task, kind, labels)
    point = _point_estimates(task, kind, plan, records)
    cis = cluster_bootstrap_cis(
        plan.matrix(records),
        [r["sample_id"] for r in records],
        plan.from_sums,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        strata=[r["scenario"] for r in records],
    )
    out: dict[str, Any] = {"n": len(records), **point}
    out["ci"] = {name: None if point[name] is None else list(cis[name]) for name in point}
    out.update(_counts(records))
    out.update(_extras(task, kind, records, labels))
    return out


def aggregate_task(
    task: str,
    kind: TaskKind,
    records: Sequence[Record],
    *,
    labels_by_scenario: Mapping[str, Sequence[str]] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The ``scores.json`` entry of a task: ``{"couple"|"family"|"all": summary}`` (:func:`summarize_scope`).

    ``labels_by_scenario`` gives the closed label sets of a multiclass task (default: the RPP relation
    taxonomy); macro-F1 runs over the labels of the scope's scenarios (their union for ``all``).

    Raises:
        DataError: a record lacks a required field or has an unknown scenario.
    """
    check_records(task, records)
    out: dict[str, Any] = {}
    for scope, members in scope_records(records).items():
        labels = scope_labels(members, labels_by_scenario) if kind == "multiclass" else ()
        out[scope] = summarize_scope(
            task,
            kind,
            members,
            labels,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )
    return out


def split_by_task(records: Iterable[Record]) -> dict[str, list[Record]]:
    """Group ``predictions.jsonl`` records by their ``task`` field, in first-seen order."""
    grouped: dict[str, list[Record]] = {}
    for record in records:
        grouped.setdefault(str(record.get("task")), []).append(record)
    return grouped


def task_kind(task: str) -> TaskKind:
    if task not in TASK_KINDS:
        raise ConfigError(f"unknown task {task!r}; expected one of {', '.join(TASK_KINDS)}")
    return TASK_KINDS[task]


def aggregate_run(
    records_by_task: Mapping[str, Sequence[Record]],
    *,
    labels_by_scenario: Mapping[str, Sequence[str]] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The ``scores.json`` dict of a run: an :func:`aggregate_task` entry per task, and ``_meta``."""
    scores: dict[str, Any] = {
        task: aggregate_task(
            task,
            task_kind(task),
            records,
            labels_by_scenario=labels_by_scenario if task == "rpp" else None,
            n_resamples=n_resamples,
            seed=seed,
            confidence=confidence,
        )
        for task, records in records_by_task.items()
    }
    scores["_meta"] = {
        "ci": {
            "method": "percentile cluster bootstrap",
            "cluster": "sample_id",
            "strata": "scenario",
            "confidence": confidence,
            "n_resamples": n_resamples,
            "seed": seed,
        },
        "pooling": "micro over instances; 'all' pools couple and family",
    }
    return scores
