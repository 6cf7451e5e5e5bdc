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

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from rescue_bench.errors import ConfigError, DataError
from rescue_bench.metrics.bootstrap import cluster_bootstrap_cis
from rescue_bench.metrics.classification import (
    INVALID,
    accuracy_by_position,
    binary_metrics,
    multiclass_metrics,
)
from rescue_bench.metrics.generation import generation_summary
from rescue_bench.metrics.plan import metric_plan, top1
from rescue_bench.metrics.ranking import top1_confusion
from rescue_bench.metrics.spec import MetricSpec
from rescue_bench.records import Json, ProblemKind
from rescue_bench.rundir import PredictionLine
from rescue_bench.taxonomy import SCENARIOS, relation_labels

LineInput = PredictionLine | Mapping[str, Json]
"""What the entry points (:func:`aggregate_task`, :func:`aggregate_run`, :func:`split_by_task`) take: a
prediction line, or its JSON object as read from ``predictions.jsonl``, typed once on entry
(:func:`typed_records`); everything past them works on :class:`PredictionLine`."""
SCOPES = ("couple", "family", "all")
REQUIRED_FIELDS = ("instance_id", "sample_id", "scenario", "gold", "valid")
N_POSITION_BINS = 10


L = TypeVar("L", PredictionLine, Mapping[str, Json])


def as_line(record: LineInput, where: str = "") -> PredictionLine:
    return record if isinstance(record, PredictionLine) else PredictionLine.from_json(record, where)


def _generation_summary(spec: MetricSpec, records: Sequence[PredictionLine]) -> dict[str, Any]:
    if spec.generation is None:
        raise ConfigError(f"a {spec.kind} MetricSpec has no generation metrics")
    return generation_summary(spec.generation, [r.scores for r in records], [r.valid for r in records])


def _typed(task: str, number: int, record: LineInput) -> PredictionLine:
    """One record typed; a JSON object must hold every :data:`REQUIRED_FIELDS` (they have defaults in the
    typed line, but a file line without them is broken)."""
    if isinstance(record, PredictionLine):
        return record
    line = as_line(record, f"{task} prediction record {number}")
    _check_required(task, number, line)
    return line


def _check_required(task: str, number: int, line: PredictionLine) -> None:
    """``line`` was read from a JSON object that gave every :data:`REQUIRED_FIELDS`."""
    missing = [name for name in REQUIRED_FIELDS if name not in line.model_fields_set]
    if missing:
        raise DataError(
            f"{task} prediction record {number} ({line.instance_id}): missing field {missing[0]!r}"
        )


def check_required(lines: Iterable[PredictionLine]) -> None:
    """Raise the one-line :class:`DataError` of :func:`typed_records` for a line read from a JSON object
    that lacks one of the :data:`REQUIRED_FIELDS`, numbered within its task as there; for callers that type
    the records themselves (:meth:`PredictionLine.from_json`)."""
    numbers: dict[str, int] = {}
    for line in lines:
        numbers[line.task] = number = numbers.get(line.task, 0) + 1
        _check_required(line.task, number, line)


def check_records(task: str, records: Iterable[PredictionLine], spec: MetricSpec | None = None) -> None:
    """Raise a one-line :class:`DataError` for a record with a bad scenario (or a bad binary gold)."""
    for number, record in enumerate(records, start=1):
        where = f"{task} prediction record {number} ({record.instance_id})"
        if record.scenario not in SCENARIOS:
            raise DataError(f"{where}: field 'scenario' is {record.scenario!r}, expected couple or family")
        labels = spec.binary_labels if spec is not None else None
        if labels is not None and record.gold not in labels:
            raise DataError(
                f"{where}: field 'gold' is {record.gold!r}, expected {labels[0]!r} or {labels[1]!r}"
            )


def typed_records(task: str, records: Sequence[LineInput], spec: MetricSpec) -> list[PredictionLine]:
    """The answered records typed and checked (one-line errors naming the record and field), once per
    aggregation. A record of an instance that got no answer (:attr:`PredictionLine.answered`) is left out:
    unfinished work is never part of a number, in any score, report, table or comparison."""
    lines = [_typed(task, number, record) for number, record in enumerate(records, start=1)]
    check_records(task, lines, spec)
    return [line for line in lines if line.answered]


def unanswered_count(task: str, records: Sequence[LineInput]) -> int:
    """How many of ``records`` got no answer (left out of every metric by :func:`typed_records`)."""
    return sum(not _typed(task, number, r).answered for number, r in enumerate(records, start=1))


def scope_records(records: Sequence[PredictionLine]) -> dict[str, list[PredictionLine]]:
    """Records per scope: each scenario that has instances, and ``all`` (always present).

    >>> line = PredictionLine(instance_id="i", task="itp", scenario="family")
    >>> {k: len(v) for k, v in scope_records([line, line]).items()}
    {'family': 2, 'all': 2}
    """
    scopes: dict[str, list[PredictionLine]] = {s: [r for r in records if r.scenario == s] for s in SCENARIOS}
    out = {scope: rs for scope, rs in scopes.items() if rs}
    out["all"] = list(records)
    return out


def scope_labels(
    records: Sequence[PredictionLine], labels_by_scenario: Mapping[str, Sequence[str]] | None
) -> list[str]:
    """The label set of a scope: the union (in order) of the label sets of the scenarios present.

    >>> line = PredictionLine(instance_id="i", task="rpp", scenario="couple")
    >>> scope_labels([line], {"couple": ["a", "b"], "family": ["b", "c"]})
    ['a', 'b']
    """
    present = [s for s in SCENARIOS if any(r.scenario == s for r in records)]
    labels: dict[str, None] = {}
    for scenario in present:
        chosen = labels_by_scenario[scenario] if labels_by_scenario else relation_labels(scenario)
        labels.update(dict.fromkeys(chosen))
    return list(labels)


def _counts(records: Sequence[PredictionLine]) -> dict[str, int]:
    kinds = [r.kinds for r in records if r.problems]
    return {
        "valid": sum(r.valid for r in records),
        "parse_failures": sum(any(k.unreadable for k in ks) for ks in kinds),
        "invalid_labels": sum(ProblemKind.INVALID_LABEL in ks for ks in kinds),
    }


def _extras(spec: MetricSpec, records: Sequence[PredictionLine], labels: Sequence[str]) -> dict[str, Any]:
    kind = spec.kind
    golds: list[Any] = [r.gold for r in records]
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
    summary = _generation_summary(spec, records)
    return {key: summary[key] for key in ("n_judged", "n_unscored", "n_bertscore")}


def relative_position(record: PredictionLine) -> float | None:
    """``meta["relative_position"]`` (or ``meta["position"]``, as the RPP task writes it) when numeric.

    >>> line = PredictionLine(instance_id="i", task="rpp", meta={"position": 0.25})
    >>> relative_position(line), relative_position(line.model_copy(update={"meta": {"position": "x"}}))
    (0.25, None)
    """
    meta = record.meta or {}
    for key in ("relative_position", "position"):
        value = meta.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def position_summary(records: Sequence[PredictionLine], n_bins: int = N_POSITION_BINS) -> dict[str, Any]:
    """Top-1 accuracy and gold counts per relative-position bin (:func:`relative_position`; RPP).

    Records without a numeric position are counted in ``n_without_position`` and left out of the bins.

    >>> hit = PredictionLine(instance_id="i", task="rpp", gold="a", valid=True, prediction=["a"],
    ...                      meta={"relative_position": 0.5})
    >>> recs = [hit, PredictionLine(instance_id="j", task="rpp", gold="a")]
    >>> out = position_summary(recs, n_bins=2)
    >>> out["n_without_position"], [(b["n"], b["accuracy"]) for b in out["bins"]]
    (1, [(0, 0.0), (1, 1.0)])
    """
    placed = [(position, r) for r in records if (position := relative_position(r)) is not None]
    bins = accuracy_by_position(
        [position for position, _ in placed],
        [float(top1(r) == r.gold) for _, r in placed],
        [str(r.gold) for _, r in placed],
        n_bins,
    )
    return {"n_bins": n_bins, "n_without_position": len(records) - len(placed), "bins": bins}


def point_values(
    spec: MetricSpec, records: Sequence[PredictionLine], labels: Sequence[str] = ()
) -> dict[str, Any]:
    """The headline metrics of ``records`` (``None`` for a judge or BERTScore mean never computed)."""
    if spec.kind == "generation":
        summary = _generation_summary(spec, records)
        return {name: summary[name] for name in spec.headline}
    return metric_plan(spec, labels).values(records)


def summarize_scope(
    spec: MetricSpec,
    records: Sequence[PredictionLine],
    labels: Sequence[str] = (),
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """One scope of one task: ``n``, headline metrics, their CIs, counts, and the task's extra tables.

    A scope without answered records has ``n`` 0 and no number: every metric ``None``.
    """
    plan = metric_plan(spec, labels)
    if not records:
        names = spec.headline if spec.kind == "generation" else list(plan.values([]))
        empty = {"n": 0, **dict.fromkeys(names), "ci": dict.fromkeys(names), **_counts(records)}
        return {**empty, **_extras(spec, records, labels)}
    matrix = plan.matrix(records)
    if spec.kind == "generation":
        point = point_values(spec, records, labels)
    else:  # point_values, from the matrix the bootstrap needs anyway
        point = {k: float(v) for k, v in plan.from_sums(matrix.sum(axis=0)).items()}
    cis = cluster_bootstrap_cis(
        matrix,
        [r.sample_id for r in records],
        plan.from_sums,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        strata=[r.scenario for r in records],
    )
    out: dict[str, Any] = {"n": len(records), **point}
    out["ci"] = {name: None if point[name] is None else list(cis[name]) for name in point}
    out.update(_counts(records))
    out.update(_extras(spec, records, labels))
    return out


def aggregate_task(
    task: str,
    spec: MetricSpec,
    records: Sequence[LineInput],
    *,
    labels_by_scenario: Mapping[str, Sequence[str]] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The ``scores.json`` entry of a task: ``{"couple"|"family"|"all": summary}`` (:func:`summarize_scope`).

    ``spec`` is the task's :class:`MetricSpec` (``task.INFO.metrics``).

    ``labels_by_scenario`` gives the closed label sets of a multiclass task (default: the RPP relation
    taxonomy); macro-F1 runs over the labels of the scope's scenarios (their union for ``all``).

    Raises:
        DataError: a record lacks a required field or has an unknown scenario.
    """
    out: dict[str, Any] = {}
    for scope, members in scope_records(typed_records(task, records, spec)).items():
        labels = scope_labels(members, labels_by_scenario) if spec.kind == "multiclass" else ()
        out[scope] = summarize_scope(
            spec,
            members,
            labels,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )
    missing = unanswered_count(task, records)
    if missing:  # the n of each metric is over answered instances; the rest is said beside it
        out["all"]["unanswered"] = missing
    return out


def split_by_task(records: Iterable[L]) -> dict[str, list[L]]:
    """Group ``predictions.jsonl`` records by their ``task`` field, in first-seen order (each given as it
    came: typed lines stay lines, JSON objects are typed to read their task)."""
    grouped: dict[str, list[L]] = {}
    for number, record in enumerate(records, start=1):
        line = (
            record if isinstance(record, PredictionLine) else as_line(record, f"prediction record {number}")
        )
        grouped.setdefault(line.task, []).append(record)
    return grouped


def spec_of(task: str, specs: Mapping[str, MetricSpec]) -> MetricSpec:
    """The spec of ``task`` in ``specs`` (``rescue_bench.tasks.metric_specs()``); a :class:`ConfigError`
    for a task it does not know."""
    found = specs.get(task)
    if found is None:
        raise ConfigError(f"unknown task {task!r}; expected one of {', '.join(specs)}")
    return found


def aggregate_run(
    records_by_task: Mapping[str, Sequence[LineInput]],
    specs: Mapping[str, MetricSpec],
    *,
    labels_by_scenario: Mapping[str, Sequence[str]] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The ``scores.json`` dict of a run: an :func:`aggregate_task` entry per task, and ``_meta``.

    ``specs`` maps task names to their :class:`MetricSpec` (``rescue_bench.tasks.metric_specs()``);
    ``labels_by_scenario`` applies to the multiclass tasks.
    """
    scores: dict[str, Any] = {
        task: aggregate_task(
            task,
            spec := spec_of(task, specs),
            records,
            labels_by_scenario=labels_by_scenario if spec.kind == "multiclass" else None,
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
