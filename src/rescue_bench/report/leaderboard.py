"""A study's leaderboard: ``leaderboard.md``, ``.html`` and ``.csv`` in the Table 5 layout.

One row per run (model, and perturbation when there are several), the columns of the paper's Table 5 as the
task registry declares them (:data:`~rescue_bench.report.tables.PAPER_COLUMNS`), each value with its 95% CI;
``with_paper`` adds the published rows (:mod:`rescue_bench.report.paper`) with what they measured. Each row
has its status (run.json's, :func:`rescue_bench.report.measured.state`) and validity (the share of instances
with a valid answer): a run that did not finish is marked PARTIAL with its done/planned counts (its values,
aggregated from what was done, are never shown as complete), a degraded run ``degraded``, a failed run
``failed`` with its reason in the note. A second table gives each metric's rank groups: among the finished
runs of one perturbation, runs that share a letter cannot be told apart at the chosen level after the
adjustment (:func:`rescue_bench.metrics.compare_many.compare_many`).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rescue_bench.metrics.compare_many import ManyComparison
from rescue_bench.metrics.multiplicity import Adjustment
from rescue_bench.metrics.separation import method_legend, resolution_legend
from rescue_bench.report import averages, likeness
from rescue_bench.report.build import Report, with_scores
from rescue_bench.report.comparison import compare_many_run_data
from rescue_bench.report.html import write_html
from rescue_bench.report.measured import (
    COMPLETE,
    DEGRADED,
    heading,
    progress,
    published_caveat,
    published_heading,
    state,
)
from rescue_bench.report.tables import (
    CI_BRACKETS,
    PAPER_BERT_NOTE,
    PAPER_COLUMNS,
    VALIDITY_NOTE,
    Cell,
    Table,
    Value,
    average_row,
    bert_note,
    metric_cell,
    paper_bert_comparable,
    published_table_rows,
    status_note,
    validity_cell,
)
from rescue_bench.report.writers import write_markdown
from rescue_bench.rundir import RunData, load_run, study_members

FILES = ("leaderboard.md", "leaderboard.html", "leaderboard.csv")


@dataclass(frozen=True, slots=True)
class Entry:
    """One run of the study as the leaderboard sees it."""

    label: str
    path: Path
    variant: str
    status: str
    """``finished``, ``partial``, ``failed`` or ``pending`` (``study.json``)."""
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Row:
    entry: Entry
    run: RunData | None
    state: str
    """What the Status column says: ``finished``, ``degraded``, ``PARTIAL done/planned``, ``failed``,
    ``pending``."""

    @property
    def complete(self) -> bool:
        return self.state in COMPLETE

    @property
    def detail(self) -> str:
        """Why a row is not a clean result (for the note), or empty."""
        if self.state == "failed":
            return f"{self.entry.label}: failed: {self.entry.reason or 'unknown'}"
        if self.run is not None and not self.complete:
            return f"{self.entry.label}: {self.state} ({progress(self.run).describe().partition(': ')[2]})"
        if not self.complete or self.state == DEGRADED:
            return f"{self.entry.label}: {self.state}"
        return ""


def _row(entry: Entry) -> Row:
    has_predictions = (entry.path / "predictions.jsonl").is_file()
    run = with_scores(load_run(entry.path)) if has_predictions else None
    if entry.status == "failed":
        return Row(entry, run, "failed")
    if run is None:
        return Row(entry, None, "pending")
    return Row(entry, run, state(run))


def comparisons(
    rows: Sequence[Row], *, method: Adjustment, level: float, n_resamples: int, seed: int
) -> list[tuple[str, list[int], ManyComparison]]:
    """Per perturbation with two finished rows or more: its name, the rows compared, their comparison."""
    out = []
    for variant in dict.fromkeys(r.entry.variant for r in rows):
        members = [i for i, r in enumerate(rows) if r.entry.variant == variant and r.complete and r.run]
        if len(members) < 2:
            continue
        runs = [rows[i].run for i in members]
        result = compare_many_run_data(
            [r for r in runs if r is not None], method=method, level=level, n_resamples=n_resamples, seed=seed
        )
        out.append((variant, members, result))
    return out


def rank_groups(
    rows: Sequence[Row], *, method: Adjustment, level: float, n_resamples: int, seed: int
) -> dict[int, dict[tuple[str, str], str]]:
    """Row index -> (task, metric) -> group letters, among the finished rows of each perturbation."""
    return _all_letters(comparisons(rows, method=method, level=level, n_resamples=n_resamples, seed=seed))


def _all_letters(
    compared: Sequence[tuple[str, list[int], ManyComparison]],
) -> dict[int, dict[tuple[str, str], str]]:
    out: dict[int, dict[tuple[str, str], str]] = {}
    for _, members, result in compared:
        for position, index in enumerate(members):
            out[index] = _letters(result, position)
    return out


def _letters(result: ManyComparison, position: int) -> dict[tuple[str, str], str]:
    letters = {}
    for task in result.tasks:
        scope = task.scopes.get("all")
        for matrix in scope.metrics if scope is not None else ():
            letters[(task.task, matrix.metric)] = matrix.groups[position]
    return letters


def _groups_note(
    compared: Sequence[tuple[str, list[int], ManyComparison]], method: Adjustment, level: float
) -> str:
    """The rank groups' legend: the method, then per perturbation the resolution of the columns shown."""
    shown = {(task, metric) for task, metric, *_ in PAPER_COLUMNS}
    parts = [f"Among the finished runs of one perturbation. {method_legend(method, level)}"]
    for variant, _, result in compared:
        found = resolution_legend(result.resolutions("all", shown))
        named = f"{variant}: " if variant and len(compared) > 1 else ""
        parts += [f"{named}{found}"] if found else []
    return " ".join([*parts, "Empty: not finished, fewer than two finished runs, or no groups (said above)."])


def leaderboard_report(
    entries: Sequence[Entry],
    *,
    with_paper: bool = False,
    method: Adjustment = "holm",
    level: float = 0.05,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Report:
    """The study's leaderboard (status, validity, every Table 5 value with its CI) and its rank groups."""
    rows = [_row(e) for e in entries]
    compared = comparisons(rows, method=method, level=level, n_resamples=n_resamples, seed=seed)
    groups = _all_letters(compared)
    main: list[tuple[Value, ...]] = []
    letters: list[tuple[Value, ...]] = []
    for index, row in enumerate(rows):
        cells = [
            metric_cell(row.run.score_record if row.run else None, task, "all", metric, scale, digits)
            for task, metric, _, scale, digits in PAPER_COLUMNS
        ]
        main.append((row.entry.label, row.state, validity_cell(row.run) if row.run else None, *cells))
        found = groups.get(index, {})
        marked = row.entry.label if row.state == "finished" else f"{row.entry.label} [{row.state.split()[0]}]"
        letters.append((marked, *(found.get((task, metric), "") for task, metric, *_ in PAPER_COLUMNS)))
    averaged = _average_rows(rows)
    main.extend(averaged)
    runs = [row.run for row in rows if row.run is not None]
    comparable = paper_bert_comparable(runs)
    if with_paper:
        main += [(row[0], *row[2:]) for row in published_table_rows(comparable)]
    headers = tuple(c[2] for c in PAPER_COLUMNS)
    unfinished = tuple(row.detail for row in rows if not row.complete)
    subtitle = heading(runs) if runs else "Measured: no run has answers yet"
    if with_paper:
        subtitle += f"\n{published_heading(runs)}"
    tables = (
        Table(
            "leaderboard",
            "Leaderboard (paper Table 5 layout)",
            ("Model", "Status", "Valid (%)", *headers),
            tuple(main),
            _note(rows, runs, with_paper, comparable) + (averages.NOTE if averaged else ""),
            subtitle=subtitle,
        ),
        Table(
            "rank_groups",
            "Rank groups",
            ("Model", *headers),
            tuple(letters),
            _groups_note(compared, method, level),
        ),
    )
    return Report("Study leaderboard", tuple(r.entry.label for r in rows), tables, (), partial=unfinished)


def _unlike(rows: Sequence[Row]) -> str:
    """What differs between the runs of each perturbation in a way that changes their numbers."""
    notes = []
    for variant in dict.fromkeys(r.entry.variant for r in rows):
        members = [r for r in rows if r.entry.variant == variant and r.run is not None]
        runs = [r.run for r in members if r.run is not None]
        found = likeness.note(runs, [r.entry.label for r in members]) if len(runs) > 1 else ""
        if found:
            notes.append(found)
    return " ".join(notes)


def _average_rows(rows: Sequence[Row]) -> list[tuple[Value, ...]]:
    """The paper's Average rows: per perturbation, over its finished, comparable model runs."""
    out: list[tuple[Value, ...]] = []
    for variant in dict.fromkeys(r.entry.variant for r in rows):
        runs = [r.run for r in rows if r.entry.variant == variant and r.complete and r.run is not None]
        for group in averages.groups(runs):
            label = f"Average ({len(group.members)} runs{f', {variant}' if variant else ''})"
            members = [runs[i] for i in group.members]
            out.append((label, "mean of finished runs", None, *average_row(members, "all")))
    return out


def _note(rows: Sequence[Row], runs: Sequence[RunData], with_paper: bool, comparable: bool) -> str:
    labels = [r.entry.label for r in rows if r.run is not None]
    note = (
        f"Values pooled over both scenarios; {CI_BRACKETS}. "
        f"'–': not computed. {bert_note(labels, runs)} {VALIDITY_NOTE}"
    )
    unlike = _unlike(rows)
    note += f" {unlike}" if unlike else ""
    marks = status_note([row.state for row in rows])
    note += f" {marks}" if marks else ""
    details = [row.detail for row in rows if row.detail]
    if details:
        note += " " + "; ".join(details) + "."
    if with_paper:
        note += " " + published_caveat(runs)
        note += "" if comparable else PAPER_BERT_NOTE
    return note


def study_entries(folder: Path) -> list[Entry] | None:
    """The runs of a study directory as leaderboard entries (``None`` when ``folder`` is no study)."""
    members = study_members(folder)
    if members is None:
        return None
    return [Entry(m.label, where, m.perturbation, m.status, m.reason) for m, where in members]


def study_tables(
    folders: Sequence[Path], *, with_paper: bool = False, method: Adjustment = "holm", level: float = 0.05
) -> tuple[Table, ...]:
    """The leaderboard and rank groups of each study directory among ``folders`` (none for a run directory),
    titled with the study's path, for the head of a report."""
    studies = [(folder, entries) for folder in folders if (entries := study_entries(folder)) is not None]
    out: list[Table] = []
    for number, (folder, entries) in enumerate(studies, start=1):
        made = leaderboard_report(entries, with_paper=with_paper, method=method, level=level)
        prefix = "study" if len(studies) == 1 else f"study{number}"
        out += [replace(t, key=f"{prefix}_{t.key}", title=f"Study {folder}: {t.title}") for t in made.tables]
    return tuple(out)


def write_leaderboard(report: Report, folder: Path) -> list[Path]:
    """``leaderboard.md``, ``leaderboard.html`` and ``leaderboard.csv`` (long format, stored scale)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [write_markdown(report, folder / FILES[0]), write_html(report, folder / FILES[1])]
    main, groups = report.table("leaderboard"), report.table("rank_groups")
    blank = ("",) * len(PAPER_COLUMNS)
    with (folder / FILES[2]).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        header = ["model", "status", "valid_share", "task", "metric", "value", "ci_low", "ci_high", "group"]
        writer.writerow(header)
        for index, row in enumerate(main.rows):
            found = groups.rows[index][1:] if index < len(groups.rows) else blank
            share = row[2].value if isinstance(row[2], Cell) else None
            for (task, metric, *_), cell, group in zip(PAPER_COLUMNS, row[3:], found, strict=True):
                if isinstance(cell, Cell):
                    writer.writerow(
                        [row[0], row[1], share, task, metric, cell.value, cell.lo, cell.hi, group]
                    )
    paths.append(folder / FILES[2])
    return paths
