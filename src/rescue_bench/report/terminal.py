"""Report tables in the terminal: each fits the console's width, no model name cut, no CI wrapped over lines.

A :class:`~rescue_bench.report.tables.Table` is shown as one rich table or several. Its leading key columns
(the model, and on a leaderboard its status) are repeated in each; its value columns are split
between them where a group ends (a task's columns, ``ITP P``/``ITP R``/``ITP F1``, stay together), so every
cell is shown whole on one line. A table too wide for one piece stacks its task headers (``ITP`` over
``Prec.``), so a task's columns are about as wide as their values. When even one value column does not fit
beside the names, the names become numbers with a legend below the table. The files (``leaderboard.md``,
``report.md``) hold the same tables in one piece, with their CIs.

Piped output is laid out for :data:`PIPED_WIDTH` columns (or ``$COLUMNS``), never wider.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rich import box
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table as RichTable
from rich.text import Text

from rescue_bench.printable import printable
from rescue_bench.report.measured import PARTIAL, measured
from rescue_bench.report.tables import (
    CI_BRACKETS,
    PAPER_COLUMNS,
    SCOPE_NAMES,
    Cell,
    Table,
    Value,
    metric_cell,
)
from rescue_bench.report.writers import text
from rescue_bench.rundir import RunData, Scores, load_judging
from rescue_bench.rundir.files import RUN_FILE, read_json_object
from rescue_bench.rundir.manifest import Manifest
from rescue_bench.tasks import TASK_NAMES

PIPED_WIDTH = 100
_MEASURE = Console(width=10_000, color_system=None)
STACKED = frozenset({*(task.upper() for task in TASK_NAMES), "Valid"})
"""First words of headers that go over the rest of the header when a table is too wide for one piece."""
NO_CI = "95% CIs: --ci, and in the files"
"""What the terminal says instead of the files' bracket legend when its tables show no CIs."""


def console_width() -> int:
    """The terminal's width; for piped output ``$COLUMNS`` if set, else :data:`PIPED_WIDTH`."""
    console = Console()
    if console.is_terminal:
        return console.width
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH


def make_console() -> Console:
    """A console of :func:`console_width` (a terminal's own, else the piped width)."""
    return Console(width=console_width())


def _groups(columns: Sequence[str], keys: int) -> list[list[int]]:
    """The value columns' indices, grouped by the first word of their header (``ITP P`` -> ``ITP``)."""
    groups: list[list[int]] = []
    last = None
    for index in range(keys, len(columns)):
        word = columns[index].split()[0] if columns[index].split() else ""
        if groups and word == last:
            groups[-1].append(index)
        else:
            groups.append([index])
        last = word
    return groups


def _rich(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], chosen: Sequence[int]
) -> RichTable:
    # Plain Text, never markup: names come from run.json and data files ("[bold]" stays as written), and
    # Text drops control characters a hostile name could carry.
    shown = Text(printable(title)) if title else None
    table = RichTable(title=shown, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    for index in chosen:
        numeric = index > 0 and any(_numeric(row[index]) for row in rows)  # the first column names the row
        table.add_column(
            Text(printable(columns[index])),
            justify="right" if numeric else "left",
            no_wrap=True,
        )
    for row in rows:
        table.add_row(*(Text(printable(row[i], one_line=True)) for i in chosen))
    return table


def _numeric(shown: str) -> bool:
    return shown[:1].isdigit() or (shown[:1] in "-–−" and shown[1:2].isdigit())


def _width(columns: Sequence[str], rows: Sequence[Sequence[str]], chosen: Sequence[int]) -> int:
    table = _rich("", columns, rows, chosen)
    return Measurement.get(_MEASURE, _MEASURE.options, table).maximum


def _parts(
    columns: Sequence[str], rows: Sequence[Sequence[str]], keys: int, width: int
) -> list[list[int]] | None:
    """Value columns split into parts that fit beside the key columns; ``None`` when one column cannot."""
    key = list(range(keys))
    singles = [[i] for group in _groups(columns, keys) for i in group]
    if any(_width(columns, rows, key + single) > width for single in singles):
        return None
    parts: list[list[int]] = []
    for group in _groups(columns, keys):
        pieces = [group] if _width(columns, rows, key + group) <= width else [[i] for i in group]
        for piece in pieces:
            if parts and _width(columns, rows, key + parts[-1] + piece) <= width:
                parts[-1] += piece
            else:
                parts.append(list(piece))
    return parts or [[]]


def _stacked(header: str) -> str:
    """``ITP Prec.`` as two lines, ``ITP`` over ``Prec.``; other headers as they are."""
    first, _, rest = header.partition(" ")
    return f"{first}\n{rest}" if first in STACKED and rest else header


def fit(table: Table, width: int, *, keys: int = 1, ci: bool = False) -> list[RenderableType]:
    """``table`` as rich tables of at most ``width`` columns each, then its legend (if names were
    numbered) and its note. ``ci``: show each value's CI (else the value alone, and the note's legend of
    the CIs' brackets says where they are)."""
    table, empty = _without_empty(table, keys)
    rows = [[text(value, ci=ci) for value in row] for row in table.rows]
    columns = list(table.columns)
    if _width(columns, rows, range(len(columns))) > width:
        columns = [_stacked(c) for c in columns]
    legend: list[str] = []
    parts = _parts(columns, rows, keys, width)
    if parts is None:  # names too long to sit beside a column: number them
        legend = [f"{n + 1} = {row[0]}" for n, row in enumerate(rows)]
        rows = [[str(n + 1), *row[1:]] for n, row in enumerate(rows)]
        parts = _parts(columns, rows, keys, width) or [[i] for g in _groups(columns, keys) for i in g]
    out: list[RenderableType] = []
    for number, part in enumerate(parts, start=1):
        shown = table.title if len(parts) == 1 else f"{table.title} ({number}/{len(parts)})"
        if number == 1 and table.subtitle:
            shown += f"\n{table.subtitle}"
        # The title above the table, not in it: a title wraps at the console's width, a table's at its own
        # (a long study path in the title made a line wider than the console).
        out += [Text(printable(shown)), _rich("", columns, rows, [*range(keys), *part])]
    if not table.rows:
        out = [Text(printable(f"{table.title}\n(no data)"))]
    out += [Text(printable(line)) for line in legend]
    shown_note = table.note if ci else re.sub(re.escape(CI_BRACKETS), NO_CI, table.note, flags=re.IGNORECASE)
    note = " ".join(
        filter(None, (shown_note, f"Not shown (no values): {', '.join(empty)}." if empty else ""))
    )
    if note:
        out.append(Text(printable(note), style="dim"))
    return out


def _blank(value: Value) -> bool:
    return value is None or value == "" or (isinstance(value, Cell) and value.value is None)


def _without_empty(table: Table, keys: int) -> tuple[Table, list[str]]:
    """The table without its value columns that hold no value in any row (tasks no run was asked)."""
    empty = [
        i for i in range(keys, len(table.columns)) if table.rows and all(_blank(row[i]) for row in table.rows)
    ]
    if not empty:
        return table, []
    keep = [i for i in range(len(table.columns)) if i not in empty]
    rows = tuple(tuple(row[i] for i in keep) for row in table.rows)
    shown = replace(table, columns=tuple(table.columns[i] for i in keep), rows=rows)
    return shown, [table.columns[i] for i in empty]


PLAIN = frozenset({"ok", "published", "mean", ""})
"""Short statuses that need no mark: a leaderboard whose rows are all plain leaves its Status column out."""


def short_status(state: str) -> str:
    """A leaderboard row's status as the terminal shows it: ``ok``, ``partial 417/445``, ``degraded``,
    ``failed``, ``pending``, ``mean`` (an Average row), ``published``.

    >>> [short_status(s) for s in ("finished", "PARTIAL 417/445", "mean of finished runs", "degraded")]
    ['ok', 'partial 417/445', 'mean', 'degraded']
    """
    if state == "finished":
        return "ok"
    if state.startswith(f"{PARTIAL} "):
        return state.replace(PARTIAL, PARTIAL.lower(), 1)
    return "mean" if state.startswith("mean of") else state


def leaderboard_view(table: Table) -> tuple[Table, int]:
    """A leaderboard (a report's or a study's) for the terminal, with its number of key columns: without the
    Source column (the note says which rows are published), its statuses short (:func:`short_status`) and
    without the Status column when every row finished cleanly (a partial, degraded or failed row keeps it).
    The key columns, repeated in each piece of a wide table, are the model and its status; the validity is
    a value column of the first piece."""
    status = table.columns.index("Status") if "Status" in table.columns else None
    short = [short_status(str(row[status] or "")) if status is not None else "" for row in table.rows]
    plain = status is not None and all(s in PLAIN for s in short)
    keep = [i for i, c in enumerate(table.columns) if c != "Source" and not (plain and i == status)]
    rows = tuple(tuple(short[n] if i == status else row[i] for i in keep) for n, row in enumerate(table.rows))
    note = table.note.replace(f"{PARTIAL} (done/planned", f"{PARTIAL.lower()} (done/planned")
    shown = replace(table, columns=tuple(table.columns[i] for i in keep), rows=rows, note=note)
    keys = sum(c in ("Model", "Status") for c in shown.columns)
    return shown, keys


def print_tables(console: Console, tables: Sequence[tuple[Table, int]], *, ci: bool = False) -> None:
    """Print each (table, key columns) fitted to the console's width."""
    for table, keys in tables:
        for renderable in fit(table, console.width, keys=keys, ci=ci):
            console.print(renderable)
        console.print()


def run_summary(out: Path, scores: Scores) -> Table:
    """A finished run's scores in the paper's Table 5 layout, one row per scope (Both, Couple, Family), with
    what was measured under the title (the run's status and validity follow in its summary line,
    :func:`rescue_bench.cli.outcome.summary_line`)."""
    manifest = Manifest.from_json(read_json_object(out / RUN_FILE) or {}, str(out / RUN_FILE))
    run = RunData(out, manifest, (), score_record=scores, judging=load_judging(out, manifest))
    rows: list[tuple[Value, ...]] = []
    for scope in ("all", "couple", "family"):
        if any(scope in scores.tasks.get(task, {}) for task, *_ in PAPER_COLUMNS):
            rows.append(
                (
                    SCOPE_NAMES[scope],
                    *(metric_cell(scores, t, scope, m, s, d) for t, m, _, s, d in PAPER_COLUMNS),
                )
            )
    return Table(
        "summary",
        f"RESCUE-Bench: {run.name}",
        ("Scope", *(c[2] for c in PAPER_COLUMNS)),
        tuple(rows),
        "Values without CIs; scores.json and `rescue-bench report` have them.",
        subtitle=f"Measured: {measured(run)}",
    )
