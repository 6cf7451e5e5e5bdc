"""Report figures as PNG bytes, drawn with matplotlib's Agg canvas (no display, no pyplot global state).

* confusion matrices (RPP and SSP per scenario, STP by target kind), coloured by row share, with counts;
* RPP accuracy by relative position, 10 bins, with standard-error bands (paper Fig. 4);
* gold relation-pattern distribution per position bin (paper Fig. 5);
* the row-normalised gold transition heatmap, self-transitions excluded (paper Fig. 3);
* RPP accuracy per gold transition (previous -> current pattern), and each model's profile over the paper's
  local-cue and relation-intensive tasks (docs/robustness.md).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure as MplFigure

from rescue_bench.data.stats import Transitions
from rescue_bench.printable import printable
from rescue_bench.report.analysis import Confusion, TransitionGrid

DPI = 110


@dataclass(frozen=True, slots=True)
class Figure:
    """A rendered figure: ``key`` is its file stem, ``png`` the image."""

    key: str
    title: str
    png: bytes
    caption: str = ""


def _png(fig: MplFigure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def _pretty(label: str) -> str:
    return label.replace("_", " ")


def _shown(text: str) -> str:
    r"""A title or legend entry that may carry a run's or model's name, drawn as written: control characters
    as visible escapes (a font has no glyph for them) and ``$`` as itself, not as the start of mathtext.

    >>> _shown("gpt$4$\x1b[2J")
    'gpt\\$4\\$\\x1b[2J'
    """
    return printable(text, one_line=True).replace("$", r"\$")


def confusion_png(confusion: Confusion) -> bytes:
    """Gold (rows) against predicted top-1 (columns); colour is the row share, text the count."""
    counts = np.asarray(confusion.counts, dtype=float).reshape(len(confusion.rows), len(confusion.columns))
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    size = max(4.0, 0.55 * len(confusion.columns) + 2.5)
    fig = MplFigure(figsize=(size, max(3.0, 0.5 * len(confusion.rows) + 2.0)))
    ax = fig.subplots()
    image = ax.imshow(shares, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    for (i, j), n in np.ndenumerate(counts):
        if n:
            ax.text(
                j,
                i,
                f"{int(n)}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if shares[i, j] > 0.6 else "black",
            )
    ax.set_xticks(
        range(len(confusion.columns)),
        [_pretty(c) for c in confusion.columns],
        rotation=45,
        ha="right",
        fontsize=8,
    )
    ax.set_yticks(range(len(confusion.rows)), [_pretty(r) for r in confusion.rows], fontsize=8)
    ax.set_xlabel("predicted (top-1)")
    ax.set_ylabel("gold")
    ax.set_title(_shown(confusion.title), fontsize=10)
    fig.colorbar(image, ax=ax, label="share of gold row")
    return _png(fig)


def position_accuracy_png(series: Mapping[str, Sequence[Mapping[str, Any]]]) -> bytes:
    """RPP accuracy per relative-position bin, one line per run, shaded ±1 standard error (no empty bins)."""
    fig = MplFigure(figsize=(6.5, 3.6))
    ax = fig.subplots()
    for name, bins in series.items():
        kept = [b for b in bins if b["n"]]
        x = np.array([100 * (b["lo"] + b["hi"]) / 2 for b in kept])
        y = np.array([100 * b["accuracy"] for b in kept])
        se = np.array([100 * b["se"] for b in kept])
        ax.plot(x, y, marker="o", label=_shown(name))
        ax.fill_between(x, y - se, y + se, alpha=0.2)
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 100)
    ax.set_xticks(range(0, 101, 10))
    ax.set_xlabel("relative position in the conversation (%)")
    ax.set_ylabel("RPP accuracy (%)")
    ax.set_title("RPP accuracy by relative position (±1 SE)", fontsize=10)
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=8)
    return _png(fig)


def gold_by_bin_png(bins: Sequence[Mapping[str, Any]], title: str) -> bytes:
    """Stacked shares of each gold relation pattern per position bin."""
    labels = sorted({label for b in bins for label in b["gold"]})
    fig = MplFigure(figsize=(7.0, 3.8))
    ax = fig.subplots()
    x = np.arange(len(bins))
    bottom = np.zeros(len(bins))
    totals = np.array([max(1, b["n"]) for b in bins], dtype=float)
    colours = colormaps["tab20"](np.linspace(0.0, 1.0, 20))
    for index, label in enumerate(labels):
        share = np.array([100 * b["gold"].get(label, 0) for b in bins]) / totals
        ax.bar(x, share, bottom=bottom, label=_pretty(label), color=colours[index % len(colours)])
        bottom += share
    ax.set_xticks(x, [f"{int(100 * b['lo'])}-{int(100 * b['hi'])}" for b in bins], rotation=45, fontsize=8)
    ax.set_ylim(0, 100)
    ax.set_xlabel("relative position bin (%)")
    ax.set_ylabel("share of gold labels (%)")
    ax.set_title(_shown(title), fontsize=10)
    if labels:
        ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    return _png(fig)


def transitions_png(transitions: Transitions, title: str) -> bytes:
    """Row-normalised transition shares (%) between consecutive gold labels; empty rows stay blank."""
    shares = 100 * np.asarray(transitions.shares, dtype=float).reshape(len(transitions.labels), -1)
    size = max(4.0, 0.6 * len(transitions.labels) + 2.5)
    fig = MplFigure(figsize=(size, size * 0.8))
    ax = fig.subplots()
    image = ax.imshow(shares, cmap="Oranges", vmin=0, vmax=100)
    for (i, j), value in np.ndenumerate(shares):
        if value:
            ax.text(
                j,
                i,
                f"{value:.0f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if value > 60 else "black",
            )
    names = [_pretty(label) for label in transitions.labels]
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xlabel("next pattern")
    ax.set_ylabel("current pattern")
    ax.set_title(f"{_shown(title)} (n = {transitions.total} transitions)", fontsize=10)
    fig.colorbar(image, ax=ax, label="% of the row")
    return _png(fig)


def transition_accuracy_png(grid: TransitionGrid, title: str) -> bytes:
    """Accuracy (%) per gold transition (previous -> current pattern), with counts; blank cells had no
    instance. The diagonal holds the stable segments."""
    values = np.asarray(
        [[np.nan if a is None else 100 * a for a in row] for row in grid.accuracy], dtype=float
    ).reshape(len(grid.sources), len(grid.labels))
    fig = MplFigure(
        figsize=(max(4.5, 0.7 * len(grid.labels) + 3.0), max(3.5, 0.55 * len(grid.sources) + 2.0))
    )
    ax = fig.subplots()
    image = ax.imshow(np.ma.masked_invalid(values), cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
    for (i, j), n in np.ndenumerate(np.asarray(grid.counts).reshape(values.shape)):
        if n:
            ax.text(j, i, f"{values[i, j]:.0f}\nn={n}", ha="center", va="center", fontsize=6.5)
    ax.set_xticks(
        range(len(grid.labels)), [_pretty(x) for x in grid.labels], rotation=45, ha="right", fontsize=8
    )
    ax.set_yticks(range(len(grid.sources)), [_pretty(x) for x in grid.sources], fontsize=8)
    ax.set_xlabel("current gold pattern")
    ax.set_ylabel("previous gold pattern")
    ax.set_title(_shown(title), fontsize=10)
    fig.colorbar(image, ax=ax, label="accuracy (%)")
    return _png(fig)


def profile_png(profiles: Mapping[str, Mapping[str, float | None]], groups: Mapping[str, str]) -> bytes:
    """Grouped bars: each model's score per task (0-100), tasks grouped as local cues then relation-intensive,
    with each group's mean as a dashed line per model. A missing value is left out (no bar)."""
    tasks = list(groups)
    fig = MplFigure(figsize=(max(6.0, 1.1 * len(tasks) + 2.0), 3.8))
    ax = fig.subplots()
    width = 0.8 / max(1, len(profiles))
    colours = colormaps["tab10"](np.linspace(0.0, 1.0, 10))
    for k, (name, profile) in enumerate(profiles.items()):
        x = [
            i + (k - (len(profiles) - 1) / 2) * width
            for i, t in enumerate(tasks)
            if profile.get(t) is not None
        ]
        y = [float(profile[t] or 0.0) for t in tasks if profile.get(t) is not None]
        ax.bar(x, y, width=width, label=_shown(name), color=colours[k % len(colours)])
        for group in dict.fromkeys(groups.values()):
            members = [i for i, t in enumerate(tasks) if groups[t] == group and profile.get(t) is not None]
            if members:
                mean = sum(float(profile[tasks[i]] or 0.0) for i in members) / len(members)
                span = [i for i, t in enumerate(tasks) if groups[t] == group]
                ax.hlines(
                    mean, span[0] - 0.4, span[-1] + 0.4, colors=colours[k % len(colours)], linestyles="dashed"
                )
    boundary = [i for i in range(1, len(tasks)) if groups[tasks[i]] != groups[tasks[i - 1]]]
    for i in boundary:
        ax.axvline(i - 0.5, color="grey", linewidth=0.8)
    ax.set_xticks(range(len(tasks)), [f"{t.upper()}\n({groups[t]})" for t in tasks], fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_ylabel("score (% of maximum)")
    ax.set_title("Local cues vs relation-intensive tasks (dashed: group mean)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if profiles:
        ax.legend(fontsize=7, loc="upper right")
    return _png(fig)
