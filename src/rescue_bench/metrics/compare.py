"""Paired comparison of two runs on the instances they share: metric differences with paired cluster bootstrap
CIs, and McNemar's test on top-1 correctness.

Both runs are scored on exactly the same instances (the intersection of their instance ids), so differences
are not confounded by coverage. The bootstrap resamples the same conversations for both runs, which keeps the
pairing. McNemar's test treats instances as independent; instances of one conversation are correlated, so its
p-values are optimistic, and the cluster bootstrap CI of the difference is the more conservative evidence.

Runs with ``repeats = K`` (docs/repeats.md) are compared on what their ``scores.json`` reports: each metric's
mean over the K repeats (each repeat scored on its own), for A and B. The paired bootstrap draws conversations
(the same for both runs), each with all its K repeats, and recomputes both means; so the interval of A - B
holds the sampling of conversations with the repeat noise that rides on each conversation. McNemar's test
needs one outcome per instance and run: it is computed on repeat 0 of both runs (the asks of an unrepeated
run). Runs with different repeat counts are refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.stats import binom, binomtest

from rescue_bench.errors import ConfigError
from rescue_bench.metrics.aggregate import (
    LineInput,
    point_values,
    scope_labels,
    scope_records,
    spec_of,
    typed_records,
)
from rescue_bench.metrics.bootstrap import percentile_interval, resample_weights
from rescue_bench.metrics.classification import FloatArray
from rescue_bench.metrics.plan import MetricPlan, correct_top1, metric_plan
from rescue_bench.metrics.repeats import spread
from rescue_bench.metrics.spec import MetricSpec
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


def repeat_count(records: Sequence[PredictionLine]) -> int:
    """How many repeats the records hold (1 for a run without repeats).

    >>> repeat_count([PredictionLine(instance_id="i", task="itp", repeat=2)])
    3
    """
    return max((r.repeat for r in records), default=0) + 1


def repeat_mean_values(
    spec: MetricSpec, records: Sequence[PredictionLine], labels: Sequence[str] = ()
) -> dict[str, float | None]:
    """The headline metrics as ``scores.json`` gives them: of all records, or with repeats the mean over
    repeats of each repeat's own value."""
    k = repeat_count(records)
    if k == 1:
        return point_values(spec, records, labels)
    per_repeat = [point_values(spec, [r for r in records if r.repeat == j], labels) for j in range(k)]
    mean: dict[str, float | None] = spread(per_repeat)["mean"]
    return mean


def paired_draws(
    plan: MetricPlan, runs: Sequence[Sequence[PredictionLine]], n_resamples: int, seed: int
) -> list[dict[str, FloatArray]]:
    """Every run's resampled metric values (mean over its repeats), all on one set of conversation
    resamples drawn within scenarios (the pairing): the runs hold the same instances and repeats.

    The draws are those of :func:`rescue_bench.metrics.bootstrap.paired_cluster_bootstrap_cis`, and without
    repeats so are the values."""
    first = runs[0]
    keys = sorted({r.sample_id for r in first}, key=str)
    index = {key: i for i, key in enumerate(keys)}
    names = sorted({r.scenario for r in first}, key=str)
    stratum = np.zeros(len(keys), dtype=np.int64)
    for record in first:
        stratum[index[record.sample_id]] = names.index(record.scenario)
    weights = resample_weights(stratum, n_resamples, np.random.default_rng(seed))
    k = repeat_count(first)
    out = []
    for run in runs:
        sums = np.zeros((len(keys), k, plan.width), dtype=np.float64)
        cells = ([index[r.sample_id] for r in run], [r.repeat for r in run])
        np.add.at(sums, cells, plan.matrix(run))
        totals: dict[str, FloatArray] = {}
        for j in range(k):
            for name, value in plan.from_sums(weights @ np.ascontiguousarray(sums[:, j])).items():
                totals[name] = value if j == 0 else totals[name] + value
        out.append(totals if k == 1 else {name: total / k for name, total in totals.items()})
    return out


def first_repeat(records: Sequence[PredictionLine]) -> list[PredictionLine]:
    """Repeat 0 of every instance: the one outcome per instance that McNemar's test pairs."""
    return [r for r in records if r.repeat == 0]


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
    """Headline metrics of A and B on the same (aligned) instances, A - B with a paired CI, and McNemar;
    with repeats, the metrics are means over repeats and McNemar pairs repeat 0 (module docstring)."""
    if not 0.0 < confidence < 1.0 or n_resamples < 1:
        raise ValueError(f"confidence {confidence} must lie in (0, 1) and n_resamples {n_resamples} be >= 1")
    if not records_a:  # no instance answered in both runs: nothing to compare, no number and no test
        empty = {"a": None, "b": None, "diff": None, "ci": None}
        return {"n": 0, "metrics": {name: dict(empty) for name in spec.headline}}
    plan = metric_plan(spec, labels)
    draws_a, draws_b = (
        paired_draws(plan, [records_a, records_b], n_resamples, seed) if records_a else ({}, {})
    )
    values_a = repeat_mean_values(spec, records_a, labels)
    values_b = repeat_mean_values(spec, records_b, labels)
    metrics: dict[str, Any] = {}
    for name in spec.headline:
        a, b = values_a[name], values_b[name]
        diff = None if a is None or b is None else a - b
        ci = list(percentile_interval(draws_a[name] - draws_b[name], confidence)) if draws_a else [0.0, 0.0]
        metrics[name] = {"a": a, "b": b, "diff": diff, "ci": None if diff is None else ci}
    k = repeat_count(records_a)
    out: dict[str, Any] = {"n": len({r.instance_id for r in records_a}), "metrics": metrics}
    if k > 1:
        out["repeats"] = k
    if spec.mcnemar:
        kind = spec.kind
        out["mcnemar"] = mcnemar(
            [correct_top1(kind, r) for r in first_repeat(records_a)],
            [correct_top1(kind, r) for r in first_repeat(records_b)],
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
    if repeat_count(lines_a) != repeat_count(lines_b):
        raise ConfigError(
            f"{task}: run A has {repeat_count(lines_a)} repeats and run B {repeat_count(lines_b)}; "
            "compare runs with the same repeats"
        )
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
