"""How a task's headline metrics come from prediction lines: the top-1 answer, the rank scores and a
:class:`MetricPlan` (per-line features whose sums map to metric values, so a bootstrap resample is a sum of
rows). :mod:`rescue_bench.metrics.aggregate`, the comparisons and the adapters share these.

An invalid prediction is a miss here: an ``<invalid>`` top-1, rank scores of zero.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rescue_bench.errors import ConfigError
from rescue_bench.metrics.bootstrap import SumsFn
from rescue_bench.metrics.classification import (
    INVALID,
    FloatArray,
    binary_from_confusion,
    multiclass_from_confusion,
    safe_div,
)
from rescue_bench.metrics.ranking import RANK_KEYS
from rescue_bench.metrics.spec import MetricSpec
from rescue_bench.records import TaskKind
from rescue_bench.rundir import PredictionLine


def top1(record: PredictionLine) -> str:
    """The first answer of a valid prediction (a label, or the head of a ranked list), else ``<invalid>``.

    >>> line = PredictionLine(instance_id="i", task="rpp", valid=True, prediction=["b", "a"])
    >>> top1(line), top1(line.model_copy(update={"valid": False}))
    ('b', '<invalid>')
    """
    valid, value = record.valid, record.prediction
    if not valid or value is None:
        return INVALID
    if isinstance(value, list | tuple):
        return str(value[0]) if value else INVALID
    return str(value)


def rank_scores(record: PredictionLine) -> list[float]:
    """``recall_at_1..3, mrr`` of a record's scores; zeros for an invalid prediction or a missing score.

    >>> scores = {"recall_at_1": 0.0, "recall_at_2": 1.0, "recall_at_3": 1.0, "mrr": 0.5}
    >>> rank_scores(PredictionLine(instance_id="i", task="stp", valid=True, scores=scores))
    [0.0, 1.0, 1.0, 0.5]
    """
    if not record.valid:
        return [0.0] * len(RANK_KEYS)
    scores = record.scores
    return [float(scores.get(key) or 0.0) for key in RANK_KEYS]


def correct_top1(kind: TaskKind, record: PredictionLine) -> bool:
    """Top-1 correctness: the answer equals gold (ITP, RPP), or recall@1 of the record's scores (STP, SSP).

    >>> line = PredictionLine(instance_id="i", task="itp", valid=True, prediction="yes", gold="yes")
    >>> correct_top1("binary", line)
    True
    """
    if kind == "ranking":
        return rank_scores(record)[0] == 1.0
    return bool(top1(record) == record.gold)


@dataclass(frozen=True, slots=True)
class MetricPlan:
    """How a task's headline metrics come from records: per-record features, and a vectorised map of their
    sums to metric values."""

    features: Callable[[PredictionLine], list[float]]
    from_sums: SumsFn
    width: int

    def matrix(self, records: Sequence[PredictionLine]) -> FloatArray:
        return np.asarray([self.features(r) for r in records], dtype=np.float64).reshape(
            len(records), self.width
        )

    def values(self, records: Sequence[PredictionLine]) -> dict[str, float]:
        return {k: float(v) for k, v in self.from_sums(self.matrix(records).sum(axis=0)).items()}


def _binary_plan(spec: MetricSpec) -> MetricPlan:
    positive, negative = spec.binary_labels or ("yes", "no")
    columns = {positive: 0, negative: 1}

    def features(record: PredictionLine) -> list[float]:
        row = [0.0] * 6
        row[3 * (0 if record.gold == positive else 1) + columns.get(top1(record), 2)] = 1.0
        return row

    def from_sums(sums: FloatArray) -> dict[str, FloatArray]:
        metrics = binary_from_confusion(sums.reshape(*sums.shape[:-1], 2, 3))
        return {name: metrics[name] for name in spec.headline}

    return MetricPlan(features, from_sums, 6)


def _multiclass_plan(labels: Sequence[str]) -> MetricPlan:
    size = len(labels) + 1  # last row: gold outside the set; last column: invalid prediction
    index = {label: i for i, label in enumerate(labels)}

    def features(record: PredictionLine) -> list[float]:
        row = [0.0] * (size * size)
        gold = record.gold if isinstance(record.gold, str) else None
        row[
            size * (size - 1 if gold is None else index.get(gold, size - 1))
            + index.get(top1(record), size - 1)
        ] = 1.0
        return row + rank_scores(record)[1:]

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


def metric_plan(spec: MetricSpec, labels: Sequence[str] = ()) -> MetricPlan:
    """The :class:`MetricPlan` of a task's spec; ``labels`` is the closed label set of a multiclass task.

    >>> from rescue_bench.metrics.spec import RANKING_TOP3
    >>> plan = metric_plan(RANKING_TOP3)
    >>> hit = PredictionLine(instance_id="i", task="stp", valid=True, scores={"recall_at_1": 1.0, "mrr": 1.0})
    >>> plan.values([hit, hit.model_copy(update={"valid": False})])["recall_at_1"]
    0.5
    """
    if spec.kind == "binary":
        return _binary_plan(spec)
    if spec.kind == "multiclass":
        return _multiclass_plan(list(dict.fromkeys(labels)))
    if spec.kind == "ranking":
        return _ranking_plan()
    generation = spec.generation
    if generation is None:
        raise ConfigError(f"a {spec.kind} MetricSpec has no generation metrics")
    return MetricPlan(lambda r: generation.features(r.scores, r.valid), generation.from_sums, 7)
