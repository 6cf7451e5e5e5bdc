"""The ``compare RUN_A RUN_B`` table: paired differences on the shared instances
(:func:`rescue_bench.metrics.compare.compare_runs`), with paired cluster-bootstrap CIs and McNemar's test."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rescue_bench.metrics.compare import compare_runs
from rescue_bench.report.entries import ComparedScope, ComparisonMeta
from rescue_bench.report.robustness import run_records
from rescue_bench.report.tables import SCOPE_NAMES, Cell, Table, Value
from rescue_bench.rundir import RunData
from rescue_bench.tasks import TASK_NAMES, headline, metric_specs, paper_metrics, task_info


def compare_run_data(a: RunData, b: RunData, *, n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Paired comparison of two runs, ER/VP judge scores folded in from their judgments; the answers of a
    renamed run (``--perturb name-swap|anonymize``) are mapped back to the original names first."""
    records_a = run_records(a)
    records_b = run_records(b)
    return compare_runs(records_a, records_b, metric_specs(), n_resamples=n_resamples, seed=seed)


def _cell(task: str, value: float | None, lo: float | None = None, hi: float | None = None) -> Cell:
    info = task_info(task)
    scale, digits = (100.0, 2) if info.percent else (1.0, 3 if info.judged else 4)
    return Cell(value, lo, hi, scale, digits)


def comparison_table(
    result: Mapping[str, Any],
    names: tuple[str, str],
    *,
    scopes: Sequence[str] = ("all",),
    every_metric: bool = False,
) -> Table:
    """One row per task, scope and metric: A, B, A - B with its 95% CI, and McNemar's p (top-1 tasks)."""
    rows: list[tuple[Value, ...]] = []
    for task in [t for t in TASK_NAMES if t in result]:
        entry = result[task]
        for scope in [s for s in scopes if s in entry]:
            block = ComparedScope.model_validate(entry[scope])
            test = block.mcnemar
            metrics = headline(task) if every_metric else paper_metrics(task)
            for metric in [name for name in metrics if name in block.metrics]:
                m = block.metrics[metric]
                ci = m.ci or [None, None]
                rows.append(
                    (
                        task.upper(),
                        SCOPE_NAMES[scope],
                        metric,
                        block.n,
                        _cell(task, m.a),
                        _cell(task, m.b),
                        _cell(task, m.diff, ci[0], ci[1]),
                        None,
                    )
                )
            if test:
                rows.append(
                    (
                        task.upper(),
                        SCOPE_NAMES[scope],
                        "top-1 correct (McNemar)",
                        block.n,
                        f"{test['a_only']} right only in A",
                        f"{test['b_only']} right only in B",
                        None,
                        f"{test['p_exact']:.4g}",
                    )
                )
    meta = ComparisonMeta.model_validate(result.get("_meta", {}))
    only = [f"{names[0]} only: {', '.join(meta.tasks_only_a)}"] if meta.tasks_only_a else []
    only += [f"{names[1]} only: {', '.join(meta.tasks_only_b)}"] if meta.tasks_only_b else []
    note = (
        f"A = {names[0]}, B = {names[1]}, on the instances both runs have. CI: paired cluster bootstrap over "
        "conversations. McNemar: exact two-sided p on discordant top-1 results (instances treated as "
        "independent, so optimistic). Classification and ranking metrics in %."
        + (" Tasks in one run only: " + "; ".join(only) + "." if only else "")
    )
    return Table(
        "compare",
        f"{names[0]} vs {names[1]}",
        ("Task", "Scope", "Metric", "n", "A", "B", "A − B [95% CI]", "McNemar p"),
        tuple(rows),
        note,
    )
