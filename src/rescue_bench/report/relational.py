"""Report tables and figures of the relation-aware analyses (``scores.json``'s ``_relational``, computed
by :func:`rescue_bench.metrics.relational.relational_analyses`) and of the paper's local-cue vs
relation-intensive grouping (docs/robustness.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rescue_bench.judge.merge import judged_records
from rescue_bench.metrics.relational import Analysis, SampleLike, analyses_of, relational_analyses
from rescue_bench.report import analysis, figures
from rescue_bench.report.figures import Figure
from rescue_bench.report.tables import Cell, Table, Value
from rescue_bench.rundir import RunData
from rescue_bench.tasks import task_info
from rescue_bench.taxonomy import SCENARIOS

NOTE = "From the gold annotations; 95% cluster-bootstrap CIs (conversations resampled within scenario)."
TRANSITION_NOTE = (
    "Rows: previous labelled row's gold pattern (start: none before); columns: current gold. The diagonal "
    "is the stable segments."
)


def relational_data(run: RunData, samples: Sequence[SampleLike] | None = None) -> dict[str, Any]:
    """The run's relation-aware analyses: from ``scores.json`` when it has them, else computed from the
    records and ``samples`` (empty without either)."""
    stored = run.score_record.relational if run.score_record is not None else None
    if stored:
        return dict(stored)
    if samples is None:
        return {}
    return relational_analyses(judged_records(run.prediction_lines, run.judgment_lines), samples)


def _cell(
    analysis_: Analysis, values: Mapping[str, float], ci: Mapping[str, tuple[float, float]], metric: str
) -> Cell:
    scale, digits = (100.0, 1) if task_info(analysis_.task).percent else (1.0, 2)
    lo, hi = ci.get(metric, (None, None))
    return Cell(values.get(metric), lo, hi, scale, digits)


def relational_tables(
    runs: Sequence[RunData], names: Sequence[str], data: Sequence[Mapping[str, Any]]
) -> list[Table]:
    """One table per analysis that any run has, a row per run, scenario and group."""
    per_run = [{a.key: a for a in analyses_of(d)} for d in data]
    keys = list(dict.fromkeys(k for analyses in per_run for k in analyses))
    tables = []
    for key in keys:
        present = [
            (name, analyses[key]) for name, analyses in zip(names, per_run, strict=True) if key in analyses
        ]
        metrics = tuple(dict.fromkeys(m for _, a in present for m in a.metrics))
        rows: tuple[tuple[Value, ...], ...] = tuple(
            (name, g.scenario, g.group, g.n, g.conversations, *(_cell(a, g.values, g.ci, m) for m in metrics))
            for name, a in present
            for g in a.groups
        )
        title = present[0][1].title
        tables.append(
            Table(
                f"relational_{key}",
                title,
                ("Model", "Scenario", "Group", "n", "Conversations", *metrics),
                rows,
                NOTE,
            )
        )
    return tables


def relational_figures(names: Sequence[str], data: Sequence[Mapping[str, Any]]) -> list[Figure]:
    """RPP accuracy per gold transition, per run and scenario."""
    out = []
    for name, relational in zip(names, data, strict=True):
        for scenario in SCENARIOS:
            grid = analysis.transition_grid(relational, scenario)
            if grid is not None:
                out.append(
                    Figure(
                        _slug(f"rpp_transition_accuracy_{name}_{scenario}"),
                        f"RPP accuracy by gold transition, {scenario}: {name}",
                        figures.transition_accuracy_png(
                            grid, f"RPP accuracy by transition ({scenario}): {name}"
                        ),
                        TRANSITION_NOTE,
                    )
                )
    return out


def profile_figure(runs: Sequence[RunData], names: Sequence[str]) -> Figure | None:
    """Each model's profile over the local-cue and relation-intensive tasks, or ``None`` without scores."""
    profiles = {
        name: analysis.task_profile(run.scores) for name, run in zip(names, runs, strict=True) if run.scores
    }
    profiles = {n: p for n, p in profiles.items() if any(v is not None for v in p.values())}
    if not profiles:
        return None
    return Figure(
        "local_vs_relational_profile",
        "Local cues vs relation-intensive tasks",
        figures.profile_png(profiles, analysis.task_groups()),
        "ITP F1, RPP accuracy, STP and SSP Recall@1 in %; ER and VP judge scores as % of 5 (no bar before "
        "judging). Grouping as in the paper (Sec. 5.3).",
    )


def profile_table(runs: Sequence[RunData], names: Sequence[str]) -> Table:
    """The profile's numbers: per model, each task's score and each group's mean (0-100)."""
    groups = analysis.task_groups()
    group_names = tuple(dict.fromkeys(groups.values()))
    rows: list[tuple[Value, ...]] = []
    for name, run in zip(names, runs, strict=True):
        profile = analysis.task_profile(run.scores)
        means = analysis.group_means(profile)
        rows.append(
            (
                name,
                *(Cell(v, digits=1) for v in profile.values()),
                *(Cell(means[g], digits=1) for g in group_names),
            )
        )
    columns = (
        "Model",
        *(f"{t.upper()} ({g})" for t, g in groups.items()),
        *(f"mean {g}" for g in group_names),
    )
    return Table(
        "profile", "Local cues vs relation-intensive tasks", columns, tuple(rows), "Scores on a 0-100 scale."
    )


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_").lower()
