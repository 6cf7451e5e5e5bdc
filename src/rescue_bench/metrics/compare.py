"""Paired comparison of two runs on the instances they share: metric differences with paired cluster bootstrap
CIs, and McNemar's test on top-1 correctness.

Both runs are scored on exactly the same instances (the intersection of their instance ids), so differences
are not confounded by coverage. The bootstrap resamples the same conversations for both runs, which keeps the
pairing. McNemar's test treats instances as independent; instances of one conversation are correlated, so its
p-values are optimistic, and the cluster bootstrap CI of the difference is the more conservative evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scipy.stats import binom, binomtest

from rescue_bench.errors import ConfigError
from rescue_bench.metrics.aggregate import (
    LineInput,
    metric_plan,
    point_values,
    rank_scores,
    scope_labels,
    scope_records,
    spec_of,
    top1,
    typed_records,
)
from rescue_bench.metrics.bootstrap import paired_cluster_bootstrap_cis
from rescue_bench.metrics.spec import MetricSpec
from rescue_bench.records import TaskKind
from rescue_bench.rundir import PredictionLine


def mcnemar(a_correct: Sequence[bool], b_correct: Sequence[bool]) -> dict[str, Any]:
    """McNemar's test on paired correctness: exact binomial p-value and mid-p, both two-sided.

    ``a_only`` counts items only A got right, ``b_only`` those only B got right. Without discordant pairs both
    p-values are 1.0.

    >>> r = mcnemar([True] * 9 + [False], [False] * 9 + [True])
    >>> r["a_only"], r["b_only"], round(r["p_exact"], 4), round(r["p_mid"], 4)
    (9, 1, 0.0215, 0.0117)
    >>> mcnemar([], [])["p_exact"]
    1.0
    """
    if len(a_correct) != len(b_correct):
        raise ValueError(f"{len(a_correct)} results for A but {len(b_correct)} for B")
    a_only = sum(1 for a, b in zip(a_correct, b_correct, strict=True) if a and not b)
    b_only = sum(1 for a, b in zip(a_correct, b_correct, strict=True) if b and not a)
    n = a_only + b_only
    if n == 0:
        return {"n": len(a_correct), "a_only": 0, "b_only": 0, "p_exact": 1.0, "p_mid": 1.0}
    k = min(a_only, b_only)
    p_exact = float(binomtest(k, n, 0.5).pvalue)
    p_mid = min(1.0, float(2 * binom.cdf(k, n, 0.5) - binom.pmf(k, n, 0.5)))
    return {"n": len(a_correct), "a_only": a_only, "b_only": b_only, "p_exact": p_exact, "p_mid": p_mid}


def correct_top1(kind: TaskKind, record: PredictionLine) -> bool:
    """Top-1 correctness: the answer equals gold (ITP, RPP), or recall@1 of the record's scores (STP, SSP).

    >>> line = PredictionLine(instance_id="i", task="itp", valid=True, prediction="yes", gold="yes")
    >>> correct_top1("binary", line)
    True
    """
    if kind == "ranking":
        return rank_scores(record)[0] == 1.0
    return bool(top1(record) == record.gold)


def shared_instances(
    task: str, records_a: Sequence[PredictionLine], records_b: Sequence[PredictionLine]
) -> tuple[list[PredictionLine], list[PredictionLine], dict[str, int]]:
    """Records of both runs on their shared instances (sorted), and how many each run has alone.

    An instance of a repeated run is one (instance, repeat) line (:attr:`PredictionLine.key`), paired with
    the same repeat of the other run; without repeats the key is the instance id.

    Raises:
        ConfigError: a shared instance has a different gold answer or scenario in the two runs.
    """
    by_a = {r.key: r for r in records_a}
    by_b = {r.key: r for r in records_b}
    shared = sorted(set(by_a) & set(by_b))
    for instance_id in shared:
        a, b = by_a[instance_id], by_b[instance_id]
        if a.gold != b.gold or a.scenario != b.scenario:
            raise ConfigError(
                f"{task}: the runs disagree on the gold answer or scenario of {instance_id}; "
                "they were built from different data or task settings and cannot be compared"
            )
    counts = {"n_shared": len(shared), "only_a": len(by_a) - len(shared), "only_b": len(by_b) - len(shared)}
    return [by_a[i] for i in shared], [by_b[i] for i in shared], counts


def compare_scope(
    spec: MetricSpec,
    records_a: Sequence[PredictionLine],
    records_b: Sequence[PredictionLine],
    labels: Sequence[str] = (),
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Headline metrics of A and B on the same (aligned) instances, A - B with a paired CI, and McNemar."""
    plan = metric_plan(spec, labels)
    cis = paired_cluster_bootstrap_cis(
        plan.matrix(records_a),
        plan.matrix(records_b),
        [r.sample_id for r in records_a],
        plan.from_sums,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        strata=[r.scenario for r in records_a],
    )
    values_a = point_values(spec, records_a, labels)
    values_b = point_values(spec, records_b, labels)
    metrics: dict[str, Any] = {}
    for name in spec.headline:
        a, b = values_a[name], values_b[name]
        missing = a is None or b is None
        metrics[name] = {
            "a": a,
            "b": b,
            "diff": None if missing else a - b,
            "ci": None if missing else list(cis[name]),
        }
    out: dict[str, Any] = {"n": len(records_a), "metrics": metrics}
    if spec.mcnemar:
        kind = spec.kind
        out["mcnemar"] = mcnemar(
            [correct_top1(kind, r) for r in records_a], [correct_top1(kind, r) for r in records_b]
        )
    return out


def compare_task(
    task: str,
    records_a: Sequence[LineInput],
    records_b: Sequence[LineInput],
    *,
    spec: MetricSpec,
    labels_by_scenario: Mapping[str, Sequence[str]] | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Paired comparison of one task: instance counts, then ``couple``/``family``/``all`` scopes as in
    ``scores.json`` (see :func:`compare_scope`). ``spec`` is the task's :class:`MetricSpec`.

    Raises:
        ConfigError: unknown task, or the runs disagree on a gold answer.
        DataError: a record lacks a required field.
    """
    lines_a, lines_b = typed_records(task, records_a, spec), typed_records(task, records_b, spec)
    aligned_a, aligned_b, counts = shared_instances(task, lines_a, lines_b)
    out: dict[str, Any] = dict(counts)
    scopes_a = scope_records(aligned_a)
    scopes_b = scope_records(aligned_b)
    for scope, members_a in scopes_a.items():
        labels = scope_labels(members_a, labels_by_scenario) if spec.kind == "multiclass" else ()
        out[scope] = compare_scope(
            spec,
            members_a,
            scopes_b[scope],
            labels,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )
    return out


def compare_runs(
    records_by_task_a: Mapping[str, Sequence[LineInput]],
    records_by_task_b: Mapping[str, Sequence[LineInput]],
    specs: Mapping[str, MetricSpec],
    *,
    labels_by_scenario: Mapping[str, Sequence[str]] | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """:func:`compare_task` for every task both runs have; ``_meta`` lists tasks only one run has.

    ``specs`` maps task names to their :class:`MetricSpec` (``rescue_bench.tasks.metric_specs()``);
    ``labels_by_scenario`` applies to the multiclass tasks.
    """
    tasks = [task for task in records_by_task_a if task in records_by_task_b]
    out: dict[str, Any] = {
        task: compare_task(
            task,
            records_by_task_a[task],
            records_by_task_b[task],
            spec=(spec := spec_of(task, specs)),
            labels_by_scenario=labels_by_scenario if spec.kind == "multiclass" else None,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )
        for task in tasks
    }
    out["_meta"] = {
        "tasks_only_a": [t for t in records_by_task_a if t not in records_by_task_b],
        "tasks_only_b": [t for t in records_by_task_b if t not in records_by_task_a],
        "ci": {
            "method": "paired percentile cluster bootstrap of A - B",
            "cluster": "sample_id",
            "strata": "scenario",
            "confidence": confidence,
            "n_resamples": n_resamples,
            "seed": seed,
        },
        "mcnemar": "two-sided exact binomial and mid-p on discordant top-1 results (independent instances)",
    }
    return out
