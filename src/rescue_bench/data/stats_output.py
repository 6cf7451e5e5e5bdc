"""Render :class:`~rescue_bench.data.stats.DatasetStats` as rich tables, Markdown or CSV, and write files.

``write_outputs`` writes, into one directory: ``stats.json``, ``table3.csv``, ``distributions.csv`` and, per
scenario with samples, ``transitions_<scenario>.csv`` and a ``transitions_<scenario>.png`` heatmap (Figure 3).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rescue_bench.data.stats import DEFINITIONS, DISTRIBUTIONS, SCOPES, DatasetStats, Table3, Transitions
from rescue_bench.printable import table_cell
from rescue_bench.taxonomy import SCENARIOS


def _num(digits: int) -> Callable[[float | None], str]:
    return lambda value: "–" if value is None else f"{value:,.{digits}f}"


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f}%"


# (label, attribute of Table3, formatter), in the paper's row order.
TABLE3_ROWS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("Samples", "samples", str),
    ("Total duration (min)", "duration_min", _num(2)),
    ("Total turns", "turns", str),
    ("Avg. duration / sample (min)", "avg_duration_min", _num(2)),
    ("Avg. turns / sample", "avg_turns", _num(2)),
    ("Avg. speakers / sample", "avg_speakers", _num(2)),
    ("Therapist turn share", "therapist_share", _percent),
)
TABLE3_CSV_FIELDS = tuple(Table3(0, 0, 0.0, 0, 0).to_json())


def table3_cells(stats: DatasetStats) -> list[list[str]]:
    """Table 3 as text cells: a header row, then one row per statistic with couple, family and all."""
    rows = [["Statistic", "Couple", "Family", "All"]]
    for label, name, fmt in TABLE3_ROWS:
        rows.append([label, *(fmt(getattr(stats.scopes[scope].table, name)) for scope in SCOPES)])
    return rows


def definition_lines() -> list[str]:
    return [f"{name}: {text}" for name, text in DEFINITIONS.items()]


# -- rich ----------------------------------------------------------------------------------------------------


def render_rich(stats: DatasetStats) -> RenderableType:
    """Table 3, the label distributions and the transition counts as rich tables, with the definitions."""
    header, *body = table3_cells(stats)
    parts: list[RenderableType] = [_rich_table("Dataset statistics (paper Table 3)", header, body)]
    for kind in DISTRIBUTIONS:
        header, *body = _distribution_cells(stats, kind)
        parts.append(_rich_table(f"Distribution: {kind.replace('_', ' ')}", header, body))
    for scenario in SCENARIOS:
        matrix = stats.scopes[scenario].transitions
        if stats.scopes[scenario].table.samples:
            header, *body = _matrix_cells(matrix)
            parts.append(
                _rich_table(
                    f"{scenario.capitalize()} relation-pattern transitions (counts, "
                    f"{matrix.total} in total; rows: from, columns: to, by the rows' numbers)",
                    header,
                    body,
                )
            )
    parts.append(Text("\n".join(definition_lines()), style="dim"))
    return Group(*parts)


def _rich_table(title: str, header: Sequence[str], body: Sequence[Sequence[str]]) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column(header[0])
    for name in header[1:]:
        table.add_column(name, justify="right")
    for row in body:
        table.add_row(*(table_cell(cell) for cell in row))
    return table


def _distribution_cells(stats: DatasetStats, kind: str) -> list[list[str]]:
    labels = list(stats.scopes["all"].distributions[kind])
    rows = [["Label", "Couple", "Family", "All"]]
    for label in labels:
        counts = [stats.scopes[scope].distributions[kind].get(label) for scope in SCOPES]
        rows.append([label, *("–" if c is None else str(c) for c in counts)])
    return rows


def _matrix_cells(matrix: Transitions) -> list[list[str]]:
    """The matrix with its labels numbered: each row ``1 label``, the columns ``1``, ``2``... (the full
    labels as column heads made the table 124-160 columns wide)."""
    rows = [["from \\ to", *(str(n) for n in range(1, len(matrix.labels) + 1))]]
    for n, (label, counts) in enumerate(zip(matrix.labels, matrix.counts, strict=True), start=1):
        rows.append([f"{n} {label}", *(str(c) if c else "·" for c in counts)])
    return rows


# -- markdown and CSV ----------------------------------------------------------------------------------------


def render_markdown(stats: DatasetStats) -> str:
    """Everything as GitHub Markdown tables, with the definitions as a list."""
    sections = ["## Dataset statistics (paper Table 3)", _md_table(table3_cells(stats))]
    for kind in DISTRIBUTIONS:
        sections += [
            f"## Distribution: {kind.replace('_', ' ')}",
            _md_table(_distribution_cells(stats, kind)),
        ]
    for scenario in SCENARIOS:
        if stats.scopes[scenario].table.samples:
            matrix = stats.scopes[scenario].transitions
            sections += [
                f"## {scenario.capitalize()} relation-pattern transitions ({matrix.total} in total)",
                _md_table(_matrix_cells(matrix)),
            ]
    sections += ["## Definitions", "\n".join(f"- {line}" for line in definition_lines())]
    return "\n\n".join(sections) + "\n"


def _md_table(cells: Sequence[Sequence[str]]) -> str:
    header, *body = cells
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def render_csv(stats: DatasetStats) -> str:
    """Table 3 as CSV, one row per scope, full precision (shares as fractions)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["scope", *TABLE3_CSV_FIELDS])
    for scope in SCOPES:
        values = stats.scopes[scope].table.to_json()
        writer.writerow([scope, *("" if values[f] is None else values[f] for f in TABLE3_CSV_FIELDS)])
    return buffer.getvalue()


# -- files ---------------------------------------------------------------------------------------------------


def write_outputs(stats: DatasetStats, out_dir: Path) -> list[Path]:
    """Write every statistic to ``out_dir`` (created if needed); return the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [
        _write(out_dir / "stats.json", json.dumps(stats.to_json(), indent=2) + "\n"),
        _write(out_dir / "table3.csv", render_csv(stats)),
        _write(out_dir / "distributions.csv", _distributions_csv(stats)),
    ]
    for scenario in SCENARIOS:
        if stats.scopes[scenario].table.samples:
            matrix = stats.scopes[scenario].transitions
            written.append(_write(out_dir / f"transitions_{scenario}.csv", _transitions_csv(matrix)))
            written.append(
                write_heatmap(
                    matrix,
                    out_dir / f"transitions_{scenario}.png",
                    title=f"{scenario.capitalize()} relation-pattern transitions",
                )
            )
    return written


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _distributions_csv(stats: DatasetStats) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["scope", "kind", "label", "count"])
    for scope in SCOPES:
        for kind, counts in stats.scopes[scope].distributions.items():
            writer.writerows([scope, kind, label, n] for label, n in counts.items())
    return buffer.getvalue()


def _transitions_csv(matrix: Transitions) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["from", "to", "count", "row_share"])
    for a, counts, shares in zip(matrix.labels, matrix.counts, matrix.shares, strict=True):
        for b, n, share in zip(matrix.labels, counts, shares, strict=True):
            if a != b:
                writer.writerow([a, b, n, f"{share:.6f}"])
    return buffer.getvalue()


def write_heatmap(matrix: Transitions, path: Path, *, title: str) -> Path:
    """A row-normalised heatmap (percentages, with counts) of ``matrix`` as a PNG file."""
    # The object-oriented API with the Agg canvas keeps pyplot's global state (and any GUI backend) out.
    from matplotlib import colormaps
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    size = len(matrix.labels)
    figure = Figure(figsize=(1.1 * size + 3, 0.9 * size + 2), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    shares = [[100 * s for s in row] for row in matrix.shares]
    # Self-transitions are excluded: grey out the diagonal rather than showing it as 0%.
    masked = [[float("nan") if i == j else v for j, v in enumerate(row)] for i, row in enumerate(shares)]
    cmap = colormaps["Blues"].with_extremes(bad="#dddddd")
    image = axes.imshow(masked, cmap=cmap, vmin=0, vmax=100)
    for i, row in enumerate(matrix.counts):
        for j, count in enumerate(row):
            if i != j:
                dark = shares[i][j] > 55
                axes.text(
                    j,
                    i,
                    f"{shares[i][j]:.0f}%\n({count})",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if dark else "black",
                )
    axes.set_xticks(range(size), [label.replace("_", "\n") for label in matrix.labels], fontsize=8)
    axes.set_yticks(range(size), list(matrix.labels), fontsize=8)
    axes.set_xlabel("next label")
    axes.set_ylabel("current label")
    axes.set_title(f"{title}\nrow-normalised, self-transitions excluded, n = {matrix.total}", fontsize=10)
    figure.colorbar(image, ax=axes, label="% of the row")
    figure.savefig(path, dpi=120)
    return path
