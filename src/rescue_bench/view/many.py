"""The pages for many runs: the leaderboard (paper Table 5 columns, rank groups, validity, status marks) and
the many-way compare page (per task and metric, the matrix of paired differences with adjusted p-values,
each top-1 cell linking to the instances right in one run and wrong in the other).

The statistics are the report's: :func:`~rescue_bench.report.comparison.compare_many_run_data` (paired
cluster bootstrap on the instances all runs share, Holm-adjusted p-values, rank groups, and the legend
saying how fine the groups can be, :mod:`rescue_bench.metrics.separation`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rescue_bench.errors import ConfigError
from rescue_bench.metrics.compare_many import ManyComparison, MetricMatrix, ScopeMatrix
from rescue_bench.metrics.separation import method_legend, resolution_legend
from rescue_bench.report import likeness
from rescue_bench.report.comparison import compare_many_run_data
from rescue_bench.report.tables import PAPER_COLUMNS, SCOPE_NAMES, Cell, metric_cell
from rescue_bench.tasks import TASK_NAMES, paper_metrics, task_info
from rescue_bench.view.data import RunView

Context = dict[str, Any]
LEVEL = 0.05


def variant(view: RunView) -> str:
    """The run's perturbations (``""`` for none): rank groups compare runs of one variant only."""
    return ", ".join(view.data.manifest.perturbed)


def comparable(views: Sequence[RunView]) -> list[RunView]:
    """The runs a many-way comparison takes: every instance answered (finished or degraded)."""
    return [v for v in views if not v.partial]


def many_result(views: Sequence[RunView], resamples: int = 1000) -> ManyComparison | str:
    """The comparison of ``views`` (at least two), or why it cannot be made (one line)."""
    if len(views) < 2:
        return "Fewer than two runs with an answer for every instance: nothing to compare."
    try:
        return compare_many_run_data([v.data for v in views], n_resamples=resamples)
    except ConfigError as exc:
        return str(exc)


@dataclass(frozen=True, slots=True)
class Score:
    """One leaderboard cell: value with CI (as shown and as sorted on) and the run's rank group."""

    text: str
    ci: str
    value: float | None
    group: str


@dataclass(frozen=True, slots=True)
class Entry:
    view: RunView
    status: str
    validity: float | None
    """Share of valid answers over every task (``run.json`` counts)."""
    valid: int | None
    instances: int | None
    scores: tuple[Score, ...]


def _groups(
    views: Sequence[RunView], results: Mapping[str, ManyComparison | str]
) -> dict[int, dict[str, str]]:
    """Run index -> "task/metric" -> its rank group letters, among the complete runs of its variant."""
    out: dict[int, dict[str, str]] = {}
    for name, result in results.items():
        if isinstance(result, str):
            continue
        members = [v for v in comparable(views) if variant(v) == name]
        for position, view in enumerate(members):
            letters = out.setdefault(view.index, {})
            for task in result.tasks:
                scope = task.scopes.get("all")
                for matrix in scope.metrics if scope is not None else ():
                    letters[f"{task.task}/{matrix.metric}"] = matrix.groups[position]
    return out


def leaderboard(views: Sequence[RunView], results: Mapping[str, ManyComparison | str]) -> Context:
    """The leaderboard page: ``results`` is :func:`many_result` per variant (:func:`variant_results`)."""
    groups = _groups(views, results)
    entries = []
    for view in views:
        found = view.validity()
        scores = []
        for task, metric, _, scale, digits in PAPER_COLUMNS:
            cell = metric_cell(view.data.score_record, task, "all", metric, scale, digits)
            group = groups.get(view.index, {}).get(f"{task}/{metric}", "")
            scores.append(Score(cell.shown(cell.value), _ci(cell), cell.scaled(cell.value), group))
        entries.append(
            Entry(
                view=view,
                status=_status(view),
                validity=None if not found or not found[1] else found[0] / found[1],
                valid=found[0] if found else None,
                instances=found[1] if found else None,
                scores=tuple(scores),
            )
        )
    problems = {name: r for name, r in results.items() if isinstance(r, str) and len(_of(views, name)) > 1}
    shown = {(task, metric) for task, metric, *_ in PAPER_COLUMNS}
    said = {
        name: resolution_legend(r.resolutions("all", shown))
        for name, r in results.items()
        if not isinstance(r, str)
    }
    resolutions = {name: text for name, text in said.items() if text}
    return {
        "title": "Leaderboard",
        "unlike": _unlike(views),
        "entries": entries,
        "headers": [(task, header) for task, _, header, _, _ in PAPER_COLUMNS],
        "problems": problems,
        "level": LEVEL,
        "legend": method_legend("holm", LEVEL),
        "resolutions": resolutions,
    }


def _unlike(views: Sequence[RunView]) -> list[str]:
    """Per perturbation, what differs between its runs in a way that changes their numbers (judges,
    BERTScore model, data, protocol settings): :mod:`rescue_bench.report.likeness`."""
    out = []
    for name in dict.fromkeys(variant(v) for v in views):
        members = [v for v in views if variant(v) == name]
        if len(members) > 1:
            found = likeness.note([v.data for v in members], [v.name for v in members])
            if found:
                out.append(found)
    return out


def _ci(cell: Cell) -> str:
    return "" if cell.lo is None or cell.hi is None else f"[{cell.shown(cell.lo)}, {cell.shown(cell.hi)}]"


def _of(views: Sequence[RunView], name: str) -> list[RunView]:
    return [v for v in comparable(views) if variant(v) == name]


def variant_results(views: Sequence[RunView], resamples: int = 1000) -> dict[str, ManyComparison | str]:
    """:func:`many_result` of the complete runs of each variant."""
    names = dict.fromkeys(variant(v) for v in comparable(views))
    return {name: many_result(_of(views, name), resamples) for name in names}


def _status(view: RunView) -> str:
    if view.partial:
        return f"PARTIAL ({view.status})"
    return "degraded" if view.degraded else view.status


@dataclass(frozen=True, slots=True)
class PairCell:
    """Row run minus column run on one metric."""

    text: str
    ci: str
    p: str
    significant: bool
    sign: int
    a_only: int | None
    """Top-1 tasks: instances right in the row run and wrong in the column run (McNemar's discordant)."""
    b_only: int | None


@dataclass(frozen=True, slots=True)
class MatrixBlock:
    task: str
    metric: str
    title: str
    runs: tuple[RunView, ...]
    values: tuple[str, ...]
    groups: tuple[str, ...]
    cells: tuple[tuple[PairCell | None, ...], ...]


def _scaled(task: str, value: float | None, lo: float | None = None, hi: float | None = None) -> Cell:
    info = task_info(task)
    scale, digits = (100.0, 2) if info.percent else (1.0, 3 if info.judged else 4)
    return Cell(value, lo, hi, scale, digits)


def _pair_cell(
    task: str, matrix: MetricMatrix, block: ScopeMatrix, i: int, j: int, level: float
) -> PairCell | None:
    pair = next((p for p in matrix.pairs if {p.a, p.b} == {i, j}), None)
    if pair is None or i == j:
        return None
    sign = 1.0 if pair.a == i else -1.0
    test = next((t for t in block.mcnemar if {t.a, t.b} == {i, j}), None)
    a_only = b_only = None
    if test is not None:
        a_only, b_only = (test.a_only, test.b_only) if test.a == i else (test.b_only, test.a_only)
    if pair.diff is None:
        return PairCell("–", "", "", False, 0, a_only, b_only)
    lo, hi = sorted((sign * pair.ci[0], sign * pair.ci[1])) if pair.ci else (None, None)
    diff = sign * pair.diff
    q = pair.p_adjusted
    cell = _scaled(task, diff, lo, hi)
    return PairCell(
        text=cell.shown(diff),
        ci="" if lo is None or hi is None else f"95% CI [{cell.shown(lo)}, {cell.shown(hi)}]",
        p="–" if q is None else f"{q:.3g}",
        significant=q is not None and q < level,
        sign=(diff > 0) - (diff < 0),
        a_only=a_only,
        b_only=b_only,
    )


def compare_page(views: Sequence[RunView], results: Mapping[str, ManyComparison | str]) -> Context:
    """The many-way compare page: a section per perturbation variant (:func:`variant_results`)."""
    sections = [_section(name, _of(views, name), result) for name, result in results.items()]
    if not sections:
        sections = [
            _section("", [], "Fewer than two runs with an answer for every instance: nothing to compare.")
        ]
    return {"title": "Compare runs", "sections": sections, "left_out": [v for v in views if v.partial]}


def _section(name: str, views: Sequence[RunView], result: ManyComparison | str) -> Context:
    """The matrices of the complete runs ``views`` of one variant (in ``result``'s order)."""
    if isinstance(result, str):
        return {"variant": name, "blocks": [], "problem": result, "note": ""}
    blocks = []
    for entry in [e for t in TASK_NAMES for e in result.tasks if e.task == t]:
        block = entry.scopes.get("all")
        if block is None:
            continue
        for matrix in [m for m in block.metrics if m.metric in paper_metrics(entry.task)]:
            n = len(views)
            blocks.append(
                MatrixBlock(
                    task=entry.task,
                    metric=matrix.metric,
                    title=f"{entry.task.upper()} {matrix.metric} ({SCOPE_NAMES['all']}, n = {block.n})",
                    runs=tuple(views),
                    values=tuple(_scaled(entry.task, v).text() for v in matrix.values),
                    groups=matrix.groups,
                    cells=tuple(
                        tuple(_pair_cell(entry.task, matrix, block, i, j, result.level) for j in range(n))
                        for i in range(n)
                    ),
                )
            )
    shown = {(entry.task, metric) for entry in result.tasks for metric in paper_metrics(entry.task)}
    note = (
        "Cell: row minus column (point at it for its 95% CI, from a paired cluster bootstrap over "
        f"conversations, {result.n_resamples} resamples), p adjusted as below; bold: p < {result.level:g}. "
        f"Group: {result.legend('all', shown)} "
        "Top-1 tasks: the counts link to the instances right in the row run and wrong in the column run, "
        "and the reverse."
    )
    left = f" Tasks not in every run: {', '.join(result.tasks_left_out)}." if result.tasks_left_out else ""
    return {"variant": name, "blocks": blocks, "problem": "", "note": note + left}
