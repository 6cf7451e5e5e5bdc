"""Report tables and figures of the relation-aware analyses (``scores.json``'s ``_relational``, computed
by :func:`rescue_bench.metrics.relational.relational_analyses`) and of the paper's local-cue vs
relation-intensive grouping (docs/relational.md).

Which analyses exist comes from the tasks (``TaskInfo.analyses``); the transition heatmap is drawn for every
task that declares the ``transition`` analysis, over its gold labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rescue_bench.judge.scores import judged_run_lines
from rescue_bench.metrics.relational import (
    TRANSITION,
    Analysis,
    SampleLike,
    analyses_of,
    analysis_plan,
    refreshed,
    relational_analyses,
)
from rescue_bench.metrics.relational_gold import START
from rescue_bench.records import Json
from rescue_bench.report import analysis, figures
from rescue_bench.report.analysis import TransitionGrid
from rescue_bench.report.figures import Figure
from rescue_bench.report.tables import Cell, Table, Value
from rescue_bench.rundir import RunData
from rescue_bench.tasks import task_info, task_infos
from rescue_bench.taxonomy import SCENARIOS

NOTE = "From the gold annotations; 95% cluster-bootstrap CIs (conversations resampled within scenario)."
TRANSITION_NOTE = (
    "Rows: previous labelled row's gold pattern (start: none before); columns: current gold. The diagonal "
    "is the stable segments; each cell shows accuracy (%) and its count."
)
Relational = Mapping[str, Json]


def relational_data(run: RunData, samples: Sequence[SampleLike] | None = None) -> dict[str, Json]:
    """The run's relation-aware analyses: computed from its records and ``samples`` when given, else
    ``scores.json``'s ``_relational`` with the analyses that need no samples (ER bands, VP targets)
    computed again from the records, so judge scores folded in later show."""
    lines = judged_run_lines(run)
    plan = analysis_plan(task_infos())
    if samples is not None:
        return relational_analyses(lines, samples, plan)
    stored = run.score_record.relational if run.score_record is not None else None
    return refreshed(stored or {}, lines, plan)


def _cell(
    analysis_: Analysis, values: Mapping[str, float], ci: Mapping[str, tuple[float, float]], metric: str
) -> Cell:
    scale, digits = (100.0, 1) if task_info(analysis_.task).percent else (1.0, 2)
    lo, hi = ci.get(metric, (None, None))
    return Cell(values.get(metric, None), lo, hi, scale, digits)


def relational_tables(names: Sequence[str], data: Sequence[Relational]) -> list[Table]:
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
        tables.append(
            Table(
                f"relational_{key}",
                present[0][1].title,
                ("Model", "Scenario", "Group", "n", "Conversations", *metrics),
                rows,
                NOTE,
            )
        )
    return tables


def transition_keys() -> list[str]:
    """Analysis keys of the tasks that declare the transition analysis, in task order."""
    return [f"{t.task}_{TRANSITION.key}" for t in analysis_plan(task_infos()) if TRANSITION in t.specs]


def transition_grid(found: Analysis, scenario: str) -> TransitionGrid | None:
    """Accuracy per gold transition of one scenario as a grid (labels in the task's order), or ``None``."""
    cells = {
        tuple(g.group.split(" -> ", 1)): (g.n, g.values["accuracy"])
        for g in found.groups
        if g.scenario == scenario and " -> " in g.group and "accuracy" in g.values
    }
    if not cells:
        return None
    gold = task_info(found.task).gold_labels
    known = gold(scenario) if gold is not None and scenario in SCENARIOS else ()
    seen = {t for _, t in cells} | {s for s, _ in cells}
    labels = tuple(x for x in (*known, *sorted(seen - set(known) - {START})) if x in seen)
    sources = ((START,) if any(s == START for s, _ in cells) else ()) + labels
    counts = tuple(tuple(cells[(s, t)][0] if (s, t) in cells else 0 for t in labels) for s in sources)
    accuracy = tuple(tuple(cells[(s, t)][1] if (s, t) in cells else None for t in labels) for s in sources)
    return TransitionGrid(scenario, labels, sources, counts, accuracy)


def relational_figures(names: Sequence[str], data: Sequence[Relational]) -> list[Figure]:
    """Accuracy per gold transition (a heatmap), per run, transition analysis and scenario."""
    out = []
    keys = transition_keys()
    for name, relational in zip(names, data, strict=True):
        for found in (a for a in analyses_of(relational) if a.key in keys):
            for scenario in SCENARIOS:
                grid = transition_grid(found, scenario)
                if grid is None:
                    continue
                title = f"{found.task.upper()} accuracy by gold transition, {scenario}: {name}"
                out.append(
                    Figure(
                        _slug(f"{found.key}_accuracy_{name}_{scenario}"),
                        title,
                        figures.transition_accuracy_png(grid, title),
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
        "Each task's profile metric (F1 of a binary task, else its first paper column) on a 0-100 scale: "
        "percent metrics x 100, judge scores as % of 5 (no bar before judging). Grouping as in the paper "
        "(Sec. 5.3), from each task's relation_intensive flag.",
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
                *(Cell(profile[t], digits=1) for t in groups),
                *(Cell(means[g], digits=1) for g in group_names),
            )
        )
    columns = (
        "Model",
        *(f"{t.upper()} {analysis.profile_metric(t)} ({g})" for t, g in groups.items()),
        *(f"mean {g}" for g in group_names),
    )
    return Table(
        "profile", "Local cues vs relation-intensive tasks", columns, tuple(rows), "Scores on a 0-100 scale."
    )


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_").lower()
