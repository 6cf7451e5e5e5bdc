"""The ``compare RUN_A RUN_B`` table: paired differences on the shared instances
(:func:`rescue_bench.metrics.compare.compare_runs`), with paired cluster-bootstrap CIs and McNemar's test;
with three runs or more, the matrices of :func:`rescue_bench.metrics.compare_many.compare_many` (adjusted
p-values and rank groups)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rescue_bench.errors import ConfigError
from rescue_bench.metrics.compare import compare_runs
from rescue_bench.metrics.compare_many import ManyComparison, MetricMatrix, ScopeMatrix, compare_many
from rescue_bench.metrics.multiplicity import Adjustment
from rescue_bench.metrics.separation import method_legend, resolution_legend
from rescue_bench.records import Json
from rescue_bench.report.entries import ComparedScope, ComparisonMeta
from rescue_bench.report.robustness import run_records
from rescue_bench.report.tables import SCOPE_NAMES, Cell, Table, Value, display_names
from rescue_bench.rundir import RunData
from rescue_bench.tasks import TASK_NAMES, headline, metric_specs, paper_metrics, task_info


def compare_run_data(a: RunData, b: RunData, *, n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Paired comparison of two runs, ER/VP judge scores folded in from their judgments; the answers of a
    renamed run (``--perturb name-swap|anonymize``) are mapped back to the original names first."""
    records_a, records_b = paired_repeats(a, b)
    return compare_runs(records_a, records_b, metric_specs(), n_resamples=n_resamples, seed=seed)


def paired_repeats(
    a: RunData, b: RunData
) -> tuple[dict[str, list[dict[str, Json]]], dict[str, list[dict[str, Json]]]]:
    """Both runs' records; an (instance, repeat) is paired with the same (instance, repeat) of the other run
    (:func:`rescue_bench.metrics.compare.shared_instances`). Runs with different repeats are refused."""
    check_one_protocol([a, b])
    k_a, k_b = a.repeats, b.repeats
    if k_a != k_b:
        raise ConfigError(
            f"compare: {a.path} has {k_a} repeats and {b.path} {k_b}; compare runs with the same repeats"
        )
    return run_records(a), run_records(b)


def check_one_protocol(runs: Sequence[RunData]) -> None:
    """Refuse to compare runs made under different protocol versions (``run.json``'s ``config.protocol``):
    their prompts, judge inputs or scoring differ, so a difference would not be the models'."""
    versions = {run.path: run.manifest.protocol for run in runs}
    if len(set(versions.values())) > 1:
        listed = ", ".join(f"{path} v{version}" for path, version in versions.items())
        raise ConfigError(f"compare: the runs follow different protocol versions ({listed}); rerun the older")


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
            rows += _scope_rows(task, scope, ComparedScope.model_validate(entry[scope]), every_metric)
    note = _comparison_note(ComparisonMeta.model_validate(result.get("_meta", {})), names)
    return Table(
        "compare",
        f"{names[0]} vs {names[1]}",
        ("Task", "Scope", "Metric", "n", "A", "B", "A − B [95% CI]", "McNemar p"),
        tuple(rows),
        note,
    )


def _scope_rows(task: str, scope: str, block: ComparedScope, every_metric: bool) -> list[tuple[Value, ...]]:
    """A task's rows in one scope: each metric's A, B and A - B, then McNemar's test (top-1 tasks)."""
    rows: list[tuple[Value, ...]] = []
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
    return rows


def _comparison_note(meta: ComparisonMeta, names: tuple[str, str]) -> str:
    only = [f"{names[0]} only: {', '.join(meta.tasks_only_a)}"] if meta.tasks_only_a else []
    only += [f"{names[1]} only: {', '.join(meta.tasks_only_b)}"] if meta.tasks_only_b else []
    return (
        f"A = {names[0]}, B = {names[1]}, on the instances both runs have. CI: paired cluster bootstrap over "
        "conversations. McNemar: exact two-sided p on discordant top-1 results (instances treated as "
        "independent, so optimistic). Classification and ranking metrics in %."
        + (" Tasks in one run only: " + "; ".join(only) + "." if only else "")
    )


def compare_many_run_data(
    runs: Sequence[RunData],
    *,
    method: Adjustment = "holm",
    level: float = 0.05,
    n_resamples: int = 1000,
    seed: int = 0,
) -> ManyComparison:
    """The many-way comparison of ``runs`` (:func:`rescue_bench.metrics.compare_many.compare_many`), the
    records prepared as for two runs (judgments folded in, renamed answers mapped back)."""
    check_one_protocol(runs)
    return compare_many(
        [run_records(run) for run in runs],
        display_names(runs),
        metric_specs(),
        method=method,
        level=level,
        n_resamples=n_resamples,
        seed=seed,
    )


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def matrix_tables(
    result: ManyComparison,
    *,
    scopes: Sequence[str] = ("all",),
    every_metric: bool = False,
    numbered: bool = False,
    ci: bool = True,
) -> list[Table]:
    """Per task, scope and metric: each run's value and rank group, and its difference from every other run
    (row minus column, 95% CI, adjusted p); McNemar's pairs below for top-1 tasks.

    ``numbered``: rows read ``1 name``, columns ``− 1``; ``ci=False``: cells without their CI (narrow columns
    for the terminal)."""
    tables = []
    names = result.runs
    for entry in [e for t in TASK_NAMES for e in result.tasks if e.task == t]:
        wanted = headline(entry.task) if every_metric else paper_metrics(entry.task)
        for scope in [s for s in scopes if s in entry.scopes]:
            block = entry.scopes[scope]
            for matrix in [m for m in block.metrics if m.metric in wanted]:
                tables.append(_matrix_table(entry.task, scope, block.n, matrix, names, result, numbered, ci))
            if block.mcnemar:
                tables.append(_mcnemar_table(entry.task, scope, block, names, result))
    return tables


def _matrix_table(
    task: str,
    scope: str,
    n: int,
    matrix: MetricMatrix,
    names: Sequence[str],
    result: ManyComparison,
    numbered: bool = False,
    ci: bool = True,
) -> Table:
    by_pair = {(p.a, p.b): p for p in matrix.pairs}
    rows: list[tuple[Value, ...]] = []
    for i, name in enumerate(names):
        cells: list[Value] = []
        for j in range(len(names)):
            pair = by_pair.get((i, j)) or by_pair.get((j, i))
            if pair is None or pair.diff is None:
                cells.append(None if i == j else "–")
                continue
            sign = 1.0 if pair.a == i else -1.0
            lo, hi = pair.ci or (None, None)
            bounds = (None, None) if lo is None or hi is None else sorted((sign * lo, sign * hi))
            cell = _cell(task, sign * pair.diff, bounds[0], bounds[1]).text(ci=ci)
            cells.append(f"{cell} p={_p(pair.p_adjusted)}")
        label = f"{i + 1} {name}" if numbered else name
        rows.append((label, _cell(task, matrix.values[i]), matrix.groups[i], *cells))
    heads = [str(i + 1) for i in range(len(names))] if numbered else names
    return Table(
        f"compare_{task}_{matrix.metric}_{scope}",
        f"{task.upper()} {matrix.metric} ({SCOPE_NAMES[scope]}, n = {n})",
        ("Model", "Value", "Group", *(f"− {head}" for head in heads)),
        tuple(rows),
        _note(result, matrix) + ("" if ci else " CIs: --ci, or --json."),
    )


def _mcnemar_table(
    task: str, scope: str, block: ScopeMatrix, names: Sequence[str], result: ManyComparison
) -> Table:
    rows: tuple[tuple[Value, ...], ...] = tuple(
        (names[t.a], names[t.b], t.a_only, t.b_only, _p(t.p), _p(t.p_adjusted)) for t in block.mcnemar
    )
    return Table(
        f"mcnemar_{task}_{scope}",
        f"{task.upper()} top-1 correct, McNemar ({SCOPE_NAMES[scope]}, n = {block.n})",
        ("A", "B", "right only in A", "right only in B", "p (exact)", f"p ({result.adjust})"),
        rows,
        "Exact two-sided McNemar on discordant top-1 results (instances treated as independent).",
    )


def _note(result: ManyComparison, matrix: MetricMatrix) -> str:
    why = matrix.resolution.reason()
    return (
        "Cells: row minus column, 95% CI from a paired cluster bootstrap over conversations "
        f"({result.n_resamples} resamples), p adjusted as below. Group: "
        f"{method_legend(result.adjust, result.level)} "
        + (f"No groups: {why}." if why else resolution_legend([("", matrix.resolution)]))
    )


COMPACT_FROM = 5
"""From this many runs on, ``compare`` prints the compact form (:func:`compact_tables`), unless asked for
CIs."""


def compact_tables(
    result: ManyComparison, *, scopes: Sequence[str] = ("all",), every_metric: bool = False
) -> list[Table]:
    """Many runs in little room: one table of every run's values and rank groups, then per metric the
    adjusted p-value of each pair (runs by number, lower triangle) with its significant pairs in the note.
    The differences with their CIs and McNemar's pairs are in ``--json`` (and ``--ci``)."""
    names = result.runs
    chosen = [
        (entry.task, scope, entry.scopes[scope], matrix)
        for entry in [e for t in TASK_NAMES for e in result.tasks if e.task == t]
        for scope in scopes
        if scope in entry.scopes
        for matrix in entry.scopes[scope].metrics
        if matrix.metric in (headline(entry.task) if every_metric else paper_metrics(entry.task))
    ]
    heads = [
        f"{task.upper()} {matrix.metric}" + _scope_mark(scope, scopes) for task, scope, _, matrix in chosen
    ]
    rows = tuple(
        (
            f"{i + 1} {name}",
            *(f"{_cell(task, matrix.values[i]).text()} {matrix.groups[i]}" for task, _, _, matrix in chosen),
        )
        for i, name in enumerate(names)
    )
    overview = Table(
        "compare_values",
        "Values and rank groups",
        ("Model", *heads),
        rows,
        _compact_note(result),
    )
    return [
        overview,
        *(_p_table(task, scope, block.n, matrix, result) for task, scope, block, matrix in chosen),
    ]


def _scope_mark(scope: str, scopes: Sequence[str]) -> str:
    return "" if len(scopes) == 1 else f" ({SCOPE_NAMES[scope]})"


def _p_table(task: str, scope: str, n: int, matrix: MetricMatrix, result: ManyComparison) -> Table:
    """One metric's adjusted p-values, row ``i`` against each column ``j < i``; the significant pairs below,
    the better run first."""
    by_pair = {frozenset((p.a, p.b)): p for p in matrix.pairs}
    rows: list[tuple[Value, ...]] = []
    better: list[str] = []
    for i in range(1, len(result.runs)):
        cells: list[Value] = []
        for j in range(i):
            pair = by_pair.get(frozenset((i, j)))
            p = pair.p_adjusted if pair is not None else None
            cells.append(_p(p))
            if pair is not None and pair.diff is not None and p is not None and p < result.level:
                first, second = (pair.a, pair.b) if pair.diff > 0 else (pair.b, pair.a)
                better.append(f"{first + 1} > {second + 1}")
        rows.append((str(i + 1), *cells, *([""] * (len(result.runs) - 1 - i))))
    found = ", ".join(better) if better else "none"
    return Table(
        f"compare_p_{task}_{matrix.metric}_{scope}",
        f"{task.upper()} {matrix.metric} ({SCOPE_NAMES[scope]}, n = {n}): adjusted p, row vs column",
        ("Run", *(str(j + 1) for j in range(len(result.runs) - 1))),
        tuple(rows),
        f"Significant at {result.level:g}: {found}.",
    )


def _compact_note(result: ManyComparison) -> str:
    how = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}[result.adjust]
    return (
        "Each run's value and rank group: runs sharing a letter cannot be told apart at level "
        f"{result.level:g} (a = best). Below, per metric, each pair's p-value: two-sided, from a paired "
        f"cluster bootstrap over conversations ({result.n_resamples} resamples) on the instances all runs "
        f"share, {how} adjustment over the pairs of the metric. The differences with their CIs and "
        "McNemar's pairs: --ci, or --json."
    )
