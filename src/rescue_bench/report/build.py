"""Assemble a report (tables and figures) from run directories, and write every output format.

``report RUN... --out DIR`` writes ``report.md`` (+ ``figures/*.png``), a self-contained ``report.html``,
``results.xlsx``, ``results.csv`` and ``table.tex``.

``report BASE PERTURBED...``: when the first run is unperturbed (or perturbed otherwise) and later runs
carry a ``perturbation`` in ``run.json``, those are its perturbed variants and the report adds the robustness
table (:mod:`rescue_bench.report.robustness`); a variant that does not share the base's data, model or tasks
is refused, naming what differs. Every report has the relation-aware analyses of each run and the local-cue
vs relation-intensive profile (:mod:`rescue_bench.report.relational`).

Only finished runs are reported as they are: a run that is not finished (killed, stopped by its budget, not
every planned instance done) is refused, naming its counts, unless the caller asks for a partial report, in
which every table, figure title and file says PARTIAL with the counts. A run without predictions is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from rescue_bench.data.stats import Transitions
from rescue_bench.errors import BenchError, ConfigError
from rescue_bench.judge.scores import judged_run_lines
from rescue_bench.metrics.aggregate import aggregate_run, split_by_task
from rescue_bench.pricing import load_prices
from rescue_bench.report import (
    analysis,
    averages,
    configuration,
    figures,
    html,
    likeness,
    relational,
    robustness,
    run_tables,
    tables,
    writers,
)
from rescue_bench.report.document import Report as Report
from rescue_bench.report.figures import Figure
from rescue_bench.report.measured import PARTIAL, Progress, heading, progress
from rescue_bench.report.tables import Table
from rescue_bench.rundir import (
    PROTOCOL,
    RUN_FILE,
    Manifest,
    PredictionLine,
    RunData,
    Scores,
    load_run,
    read_json_object,
)
from rescue_bench.rundir.status import engine_unfinished
from rescue_bench.tasks import metric_specs
from rescue_bench.taxonomy import SCENARIOS


class UnfinishedRunError(BenchError):
    """A run asked to be reported is not finished (and no partial report was asked for)."""


def check_finished(runs: Sequence[RunData], *, allow_partial: bool) -> tuple[Progress, ...]:
    """The unfinished runs' progress (empty when all are finished).

    Raises:
        DataError: a run holds no predictions.
        UnfinishedRunError: a run is not finished and ``allow_partial`` is false.
    """
    for run in runs:  # a run of a newer protocol is not read by the rules of this one
        if run.manifest.protocol > PROTOCOL:
            raise ConfigError(str(run.manifest.protocol_note(run.path)))
    unfinished = tuple(p for p in (progress(run) for run in runs) if not p.finished)
    if unfinished and not allow_partial:
        listed = "; ".join(p.describe() for p in unfinished)
        raise UnfinishedRunError(
            f"not finished: {listed}. Resume with the same `rescue-bench run` command, "
            "or pass --partial for a report marked PARTIAL"
        )
    return unfinished


def protocol_notes(runs: Sequence[Path]) -> list[str]:
    """A warning for each run of an older protocol version than this rescue-bench's: its numbers follow
    other rules (:meth:`~rescue_bench.rundir.Manifest.protocol_note`); a newer one is refused by
    :func:`check_finished`."""
    notes = []
    for path in runs:
        manifest = Manifest.from_json(read_json_object(path / RUN_FILE) or {}, str(path / RUN_FILE))
        note = manifest.protocol_note(path) if manifest.protocol < PROTOCOL else None
        notes += [note] if note else []
    return notes


def marked_partial(report: Report, unfinished: Sequence[Progress]) -> Report:
    """The report with PARTIAL and the counts in its title, every table's title and note, every figure."""
    if not unfinished:
        return report
    lines = tuple(p.describe() for p in unfinished)
    banner = f"{PARTIAL}: " + "; ".join(lines)
    tables = tuple(
        replace(t, title=f"{t.title} [{PARTIAL}]", note=f"{t.note} {banner}".strip()) for t in report.tables
    )
    figures_ = tuple(replace(f, title=f"{f.title} [{PARTIAL}]") for f in report.figures)
    return replace(
        report, title=f"{report.title} [{PARTIAL}]", tables=tables, figures=figures_, partial=lines
    )


def with_scores(run: RunData) -> RunData:
    """The run, with ``scores`` aggregated in memory (judgments folded in) when ``scores.json`` is missing, or
    when the run's own work is unfinished (a ``scores.json`` of such a run may count unanswered requests):
    the aggregate is over answered instances only."""
    if run.score_record is not None and not engine_unfinished(run.manifest.status, run.manifest.counts):
        return run
    lines = judged_run_lines(run)
    return replace(run, score_record=Scores.of(aggregate_run(split_by_task(lines), metric_specs())))


def _by_dataset(runs: Sequence[RunData]) -> list[RunData]:
    """One run per distinct dataset (gold-only figures are the same for runs on the same data)."""
    seen: dict[object, RunData] = {}
    for run in runs:
        seen.setdefault(run.manifest.dataset.hash or run.path, run)
    return list(seen.values())


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_").lower()


def run_figures(runs: Sequence[RunData], names: Sequence[str]) -> list[Figure]:
    """Confusion matrices per run; position curves for all runs; gold-only figures per dataset."""
    predictions = {id(run): run.prediction_lines for run in runs}
    out: list[Figure] = []
    for name, run in zip(names, runs, strict=True):
        out += _confusion_figures(name, predictions[id(run)])
    series = {
        name: analysis.position_bins(predictions[id(run)]) for name, run in zip(names, runs, strict=True)
    }
    found = averages.groups(runs)
    for group in found:  # the paper's pooled curve: every model's instances of the bin together
        pooled = [line for i in group.members for line in runs[i].prediction_lines]
        series[f"pooled: {group.label(names, len(found) > 1)}"] = analysis.position_bins(pooled)
    series = {name: bins for name, bins in series.items() if any(b["n"] for b in bins)}
    if series:
        out.append(
            Figure(
                f"{analysis.pattern_task()}_accuracy_by_position",
                f"{analysis.pattern_task().upper()} accuracy by relative position (Fig. 4)",
                figures.position_accuracy_png(series),
                "10 bins of relative position; bands are ±1 binomial standard error. A pooled curve puts the "
                "instances of the finished, comparable model runs together (report/averages.py).",
            )
        )
    for index, run in enumerate(_by_dataset(runs)):
        suffix = f" (dataset {index + 1})" if len(_by_dataset(runs)) > 1 else ""
        out += _gold_figures(predictions[id(run)], index, suffix)
    return out


def _confusion_figures(name: str, predictions: Sequence[PredictionLine]) -> list[Figure]:
    return [
        Figure(
            _slug(f"{name}_{confusion.title}"),
            f"{confusion.title}: {name}",
            figures.confusion_png(confusion),
            "Rows: gold; columns: predicted top-1 (<invalid> = unusable answer).",
        )
        for confusion in analysis.confusions(predictions)
    ]


def _gold_figures(predictions: Sequence[PredictionLine], index: int, suffix: str) -> list[Figure]:
    """The gold-only figures of one dataset (its ``index`` among the runs' datasets): patterns by position
    and their transitions, per scenario."""
    out: list[Figure] = []
    for scenario in SCENARIOS:
        bins = analysis.position_bins(predictions, scenario)
        if any(b["n"] for b in bins):
            out.append(
                Figure(
                    f"gold_by_position_{scenario}{index or ''}",
                    f"Gold relation patterns by position, {scenario} (Fig. 5){suffix}",
                    figures.gold_by_bin_png(bins, f"Gold relation-pattern share per bin ({scenario})"),
                )
            )
        trans: Transitions = analysis.gold_transitions(predictions, scenario)
        if trans.total:
            out.append(
                Figure(
                    f"transitions_{scenario}{index or ''}",
                    f"Relation-pattern transitions, {scenario} (Fig. 3){suffix}",
                    figures.transitions_png(trans, f"Gold transitions ({scenario})"),
                    "Row-normalised; self-transitions excluded.",
                )
            )
    return out


def build_report(
    run_dirs: Sequence[str | Path],
    *,
    with_paper: bool = False,
    prices: Path | None = None,
    allow_partial: bool = False,
    first: Sequence[Table] = (),
) -> Report:
    """Read the runs and build every table and figure; ``prices`` is a JSON price file for the cost column
    (see :func:`rescue_bench.pricing.load_prices`); ``first``: tables put before the leaderboard (a study's
    leaderboard, :func:`rescue_bench.report.leaderboard.study_tables`).

    Raises:
        DataError: a directory is not a readable run, or holds no predictions.
        UnfinishedRunError: a run is not finished and ``allow_partial`` is false.
        ConfigError: the price file is unreadable or lacks a model that used tokens.
    """
    loaded = [load_run(path) for path in run_dirs]
    base, variants = perturbed_variants(loaded)
    robustness.check_variants(base, variants)
    unfinished = check_finished(loaded, allow_partial=allow_partial)
    runs = [with_scores(run) for run in loaded]
    names = tables.display_names(runs)
    data = [relational.relational_data(run) for run in runs]
    robust = (robustness.robustness_table(base, variants),) if variants else ()
    priced = None if prices is None else partial(load_prices, prices)
    board = tables.leaderboard(runs, with_paper=with_paper)
    unlike = likeness.note(runs, names)  # named beside the numbers it changes
    built = (
        *first,
        replace(board, note=f"{board.note} {unlike}".strip()) if unlike else board,
        *robust,
        *report_tables(runs, names, data, priced),
    )
    title = "RESCUE-Bench report: " + ", ".join(names)
    shown = (*run_figures(runs, names), *relational_part(runs, names, data))
    report = Report(title, tuple(names), built, shown, subtitle=heading(runs))
    return marked_partial(report, unfinished)


def report_tables(
    runs: Sequence[RunData],
    names: Sequence[str],
    data: Sequence[relational.Relational],
    prices: run_tables.PriceOf | None,
) -> tuple[Table, ...]:
    """The tables after the leaderboard (and the robustness table), in report order."""
    return (
        tables.per_scenario(runs),
        tables.per_label(runs),
        tables.label_distributions(runs),
        run_tables.judges(runs),
        run_tables.failures(runs),
        *(t for t in (run_tables.repeats(runs),) if t.rows),
        run_tables.usage(runs, prices),
        relational.profile_table(runs, names),
        *relational.relational_tables(names, data),
        *configuration.config(runs),
    )


def relational_part(
    runs: Sequence[RunData], names: Sequence[str], data: Sequence[relational.Relational]
) -> list[Figure]:
    """The transition heatmaps of each run, then the local-cues vs relation-intensive profile."""
    profile = relational.profile_figure(runs, names)
    return [*relational.relational_figures(names, data), *([profile] if profile is not None else [])]


def perturbed_variants(runs: Sequence[RunData]) -> tuple[RunData, list[RunData]]:
    """The first run (the base) and the later runs perturbed otherwise than it (its variants)."""
    base = runs[0]
    own = robustness.perturbation_of(base)
    return base, [
        run
        for run in runs[1:]
        if (record := robustness.perturbation_of(run)) is not None and record.names and record != own
    ]


def write_report(report: Report, out: Path) -> list[Path]:
    """Write all formats into ``out``; returns the paths written.

    Raises:
        RunDirError: a write failed (a full disk, a read-only folder) or a file to write is a link; one line
            naming the file (:func:`~rescue_bench.report.writers.writing`).
    """
    with writers.writing(out):
        paths = writers.write_figures(report, out / "figures")
        paths += [
            writers.write_markdown(report, out / "report.md"),
            html.write_html(report, out / "report.html"),
            writers.write_xlsx(report, out / "results.xlsx"),
            writers.write_csv(report, out / "results.csv"),
            writers.write_tex(report, out / "table.tex"),
        ]
    return paths
