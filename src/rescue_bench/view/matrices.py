"""Confusion matrices and the gold transition heatmap (of the pattern task, RPP) as HTML tables whose
cells link to their instances.

The counts come from :mod:`rescue_bench.report.analysis` (the report's own matrices); each cell carries the
instance-list filter that selects exactly the instances it counts, and a shade class (0-10) from its row
share: the page's stylesheet colours it, since the Content-Security-Policy forbids inline styles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rescue_bench.report.analysis import (
    KIND_GOLD,
    Confusion,
    confusions,
    gold_transitions,
    of_task,
    pattern_task,
)
from rescue_bench.rundir import PredictionLine
from rescue_bench.taxonomy import SCENARIOS


@dataclass(frozen=True, slots=True)
class Cell:
    count: int
    share: float
    """Share of the row, 0-1."""
    filters: Mapping[str, str]
    """Instance-list filter of the instances counted here."""

    @property
    def shade(self) -> int:
        return round(10 * self.share)


@dataclass(frozen=True, slots=True)
class Matrix:
    key: str
    title: str
    row_title: str
    column_title: str
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    cells: tuple[tuple[Cell, ...], ...]
    total: int
    note: str = ""


def _confusion_filters(confusion: Confusion, gold: str, pred: str) -> dict[str, str]:
    task = confusion.task
    if confusion.rows == KIND_GOLD:  # by target kind: names differ between conversations
        return {"task": task, "gold_kind": gold, "pred_kind": pred}
    return {"task": task, "scenario": confusion.scenario or "", "gold": gold, "pred": pred}


def _cells(counts: Sequence[Sequence[int]], make: Any) -> tuple[tuple[Cell, ...], ...]:
    out = []
    for i, row in enumerate(counts):
        total = sum(row)
        out.append(tuple(Cell(n, n / total if total else 0.0, make(i, j)) for j, n in enumerate(row)))
    return tuple(out)


def confusion_matrix(confusion: Confusion) -> Matrix:
    def make(i: int, j: int) -> dict[str, str]:
        return _confusion_filters(confusion, confusion.rows[i], confusion.columns[j])

    return Matrix(
        key=confusion.title.lower().replace(" ", "-").replace("(", "").replace(")", ""),
        title=confusion.title,
        row_title="gold",
        column_title="predicted (top 1)",
        rows=confusion.rows,
        columns=confusion.columns,
        cells=_cells(confusion.counts, make),
        total=confusion.total,
        note="Colour: share of the row. Each count links to its instances.",
    )


def transition_matrix(records: Sequence[PredictionLine], scenario: str) -> Matrix:
    """Transitions between consecutive gold labels of the pattern task (RPP) in one scenario
    (self-transitions excluded)."""
    found = gold_transitions(records, scenario)
    labels = found.labels
    task = pattern_task()

    def make(i: int, j: int) -> dict[str, str]:
        return {"task": task, "scenario": scenario, "prev_gold": labels[i], "gold": labels[j]}

    return Matrix(
        key=f"{task}-transitions-{scenario}",
        title=f"{task.upper()} gold transitions ({scenario})",
        row_title="current pattern",
        column_title="next pattern",
        rows=labels,
        columns=labels,
        cells=_cells(found.counts, make),
        total=found.total,
        note="Counts of changes between consecutive gold patterns of a conversation; a count links to the "
        "instances whose gold is the next pattern after the current one.",
    )


def all_matrices(records: Sequence[PredictionLine]) -> list[Matrix]:
    """Every confusion matrix the run has data for, then the transition heatmap per scenario."""
    out = [confusion_matrix(c) for c in confusions(records)]
    out += [transition_matrix(records, s) for s in SCENARIOS if of_task(records, pattern_task(), s)]
    return out
