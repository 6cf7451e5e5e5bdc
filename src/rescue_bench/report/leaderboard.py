"""A study's leaderboard: ``leaderboard.md``, ``.html`` and ``.csv`` in the Table 5 layout.

One row per run (model, and perturbation when there are several), the columns of the paper's Table 5 as the
task registry declares them (:data:`~rescue_bench.report.tables.PAPER_COLUMNS`), each value with its 95% CI;
``with_paper`` adds the published rows (:mod:`rescue_bench.report.paper`). A run that did not finish is
marked PARTIAL in its row (its values, aggregated from what was done, are never shown as complete), a failed
run shows its reason and no values. A second table gives each metric's rank groups: among the finished runs
of one perturbation, runs that share a letter cannot be told apart at the chosen level after the adjustment
(:func:`rescue_bench.metrics.compare_many.compare_many`).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rescue_bench.metrics.compare_many import ManyComparison
from rescue_bench.metrics.multiplicity import Adjustment
from rescue_bench.report import averages, likeness
from rescue_bench.report.build import PARTIAL, Report, progress, with_scores
from rescue_bench.report.comparison import compare_many_run_data
from rescue_bench.report.html import write_html
from rescue_bench.report.paper import SOURCE, published_rows
from rescue_bench.report.tables import (
    PAPER_BERT_NOTE,
    PAPER_COLUMNS,
    Cell,
    Table,
    Value,
    average_row,
    bert_note,
    metric_cell,
    paper_bert_comparable,
    published_cells,
)
from rescue_bench.report.writers import write_markdown
from rescue_bench.rundir import RunData, load_run
from rescue_bench.rundir.status import is_final

FILES = ("leaderboard.md", "leaderboard.html", "leaderboard.csv")


@dataclass(frozen=True, slots=True)
class Entry:
    """One run of the study as the leaderboard sees it."""

    label: str
    path: Path
    variant: str
    status: str
    """A run status, ``failed`` or ``pending`` (``study.json``)."""
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Row:
    entry: Entry
    run: RunData | None
    state: str
    """What the Status column says."""

    @property
    def complete(self) -> bool:
        return is_final(self.state)


def _row(entry: Entry) -> Row:
    has_predictions = (entry.path / "predictions.jsonl").is_file()
    run = with_scores(load_run(entry.path)) if has_predictions else None
    finished = run is not None and is_final(entry.status) and progress(run).finished
    if finished:
        # A degraded run is complete (every instance answered) but most answers failed: it says so.
        return Row(entry, run, entry.status)
    if entry.status == "failed":
        return Row(entry, None, f"failed: {entry.reason or 'unknown'}")
    done = (
        progress(run).describe().partition(": ")[2] if run is not None and run.prediction_lines else "nothing"
    )
    return Row(entry, run, f"{PARTIAL}: {done}")


def rank_groups(
    rows: Sequence[Row], *, method: Adjustment, level: float, n_resamples: int, seed: int
) -> dict[int, dict[tuple[str, str], str]]:
    """Row index -> (task, metric) -> group letters, among the finished rows of each perturbation."""
    out: dict[int, dict[tuple[str, str], str]] = {}
    for variant in dict.fromkeys(r.entry.variant for r in rows):
        members = [i for i, r in enumerate(rows) if r.entry.variant == variant and r.complete and r.run]
        if len(members) < 2:
            continue
        runs = [rows[i].run for i in members]
        result = compare_many_run_data(
            [r for r in runs if r is not None], method=method, level=level, n_resamples=n_resamples, seed=seed
        )
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


def leaderboard_report(
    entries: Sequence[Entry],
    *,
    with_paper: bool = False,
    method: Adjustment = "holm",
    level: float = 0.05,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Report:
    rows = [_row(e) for e in entries]
    groups = rank_groups(rows, method=method, level=level, n_resamples=n_resamples, seed=seed)
    main: list[tuple[Value, ...]] = []
    letters: list[tuple[Value, ...]] = []
    for index, row in enumerate(rows):
        label = row.entry.label if row.complete else f"{row.entry.label} [{PARTIAL if row.run else 'failed'}]"
        cells = [
            metric_cell(row.run.score_record if row.run else None, task, "all", metric, scale, digits)
            for task, metric, _, scale, digits in PAPER_COLUMNS
        ]
        main.append((label, row.state, *cells))
        found = groups.get(index, {})
        letters.append((label, *(found.get((task, metric), "") for task, metric, *_ in PAPER_COLUMNS)))
    averaged = _average_rows(rows)
    main.extend(averaged)
    runs = [row.run for row in rows]
    comparable = paper_bert_comparable(runs)
    if with_paper:
        for model, values in published_rows():
            main.append((f"{model} (published)", SOURCE, *published_cells(values, comparable)))
    headers = tuple(c[2] for c in PAPER_COLUMNS)
    unfinished = tuple(f"{r.entry.label}: {r.state}" for r in rows if not r.complete)
    how = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}[method]
    tables = (
        Table(
            "leaderboard",
            "Leaderboard (paper Table 5 layout)",
            ("Model", "Status", *headers),
            tuple(main),
            _note(with_paper, comparable)
            + " "
            + bert_note([r.entry.label for r in rows], runs)
            + (averages.NOTE if averaged else "")
            + " "
            + _unlike(rows),
        ),
        Table(
            "rank_groups",
            "Rank groups",
            ("Model", *headers),
            tuple(letters),
            "Among the finished runs of one perturbation, runs sharing a letter cannot be told apart "
            f"(paired cluster bootstrap on shared instances, {how} adjustment over the pairs, level "
            f"{level:g}); "
            "a = best. Empty: not finished, or fewer than two finished runs.",
        ),
    )
    return Report("Study leaderboard", tuple(r.entry.label for r in rows), tables, (), partial=unfinished)


def _unlike(rows: Sequence[Row]) -> str:
    """What differs between the finished runs of each perturbation in a way that changes their numbers."""
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
            out.append((label, "mean of finished runs", *average_row(members, "all")))
    return out


def _note(with_paper: bool, comparable: bool = True) -> str:
    note = (
        "Values pooled over both scenarios; brackets: 95% CI from a cluster bootstrap over conversations. "
        f"'–': not computed. Rows marked [{PARTIAL}] did not finish: their values cover what was done."
    )
    if with_paper:
        note += " Rows marked (published) are the paper's numbers, not results of this toolkit."
        note += "" if comparable else PAPER_BERT_NOTE
    return note


def write_leaderboard(report: Report, folder: Path) -> list[Path]:
    """``leaderboard.md``, ``leaderboard.html`` and ``leaderboard.csv`` (long format, stored scale)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [write_markdown(report, folder / FILES[0]), write_html(report, folder / FILES[1])]
    main, groups = report.table("leaderboard"), report.table("rank_groups")
    letters = {row[0]: row[1:] for row in groups.rows}
    with (folder / FILES[2]).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", "status", "task", "metric", "value", "ci_low", "ci_high", "group"])
        for row in main.rows:
            found = letters.get(row[0], ("",) * len(PAPER_COLUMNS))
            for (task, metric, *_), cell, group in zip(PAPER_COLUMNS, row[2:], found, strict=True):
                if isinstance(cell, Cell):
                    writer.writerow([row[0], row[1], task, metric, cell.value, cell.lo, cell.hi, group])
    paths.append(folder / FILES[2])
    return paths
