"""Report tables in the paper's layouts, as plain data that every writer (md, html, xlsx, csv, tex) renders.

* :func:`leaderboard`: Table 5 (ITP P/R/F1, RPP Acc, STP Rec/MRR, SSP Rec/MRR, ER LLM/BERT, VP LLM/BERT),
  pooled over both scenarios, each value with its 95% CI; optional published rows, marked as such;
* :func:`per_scenario`: Table 11 (the same columns per Couple, Family and Both);
* per-label RPP accuracy and gold label distributions.

How each run went (judges, repeats, failures, usage): :mod:`rescue_bench.report.run_tables`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rescue_bench.judge.bertscore import DEFAULT_MODEL, backbone_label, is_reference_setting
from rescue_bench.records import Json
from rescue_bench.report import analysis, averages, measured
from rescue_bench.report.entries import ScopeEntry
from rescue_bench.report.paper import SOURCE, published_rows
from rescue_bench.rundir import BertScoreSetting, RunData, Scores
from rescue_bench.tasks import judged_tasks, paper_columns, percent_tasks

PAPER_COLUMNS: tuple[tuple[str, str, str, float, int], ...] = tuple(
    (task, column.metric, column.header, column.scale, column.decimals) for task, column in paper_columns()
)
"""(task, metric in scores.json, header, display scale, decimals), in the paper's column order: each task's
``INFO.paper_columns``, in task order."""
SCOPE_NAMES = {"couple": "Couple", "family": "Family", "all": "Both"}


@dataclass(frozen=True, slots=True)
class Cell:
    """A metric value with its CI, on the stored scale; ``scale`` and ``digits`` say how to show it."""

    value: float | None
    lo: float | None = None
    hi: float | None = None
    scale: float = 1.0
    digits: int = 2

    def shown(self, x: float | None) -> str:
        return "–" if x is None else f"{x * self.scale:.{self.digits}f}"

    def text(self, *, ci: bool = True) -> str:
        """``"82.62 [80.10, 85.00]"``; ``–`` for a value that was not computed.

        >>> Cell(0.8262, 0.801, 0.85, 100, 2).text(), Cell(None).text()
        ('82.62 [80.10, 85.00]', '–')
        """
        if self.value is None or not ci or self.lo is None or self.hi is None:
            return self.shown(self.value)
        return f"{self.shown(self.value)} [{self.shown(self.lo)}, {self.shown(self.hi)}]"

    def scaled(self, x: float | None) -> float | None:
        return None if x is None else round(x * self.scale, self.digits + 2)


Value = str | int | float | Cell | None


@dataclass(frozen=True, slots=True)
class Table:
    """A titled table; ``key`` names its sheet, CSV section and HTML anchor."""

    key: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Value, ...], ...]
    note: str = ""
    subtitle: str = ""
    """What was measured (data, judge, marks), shown under the title."""


def display_names(runs: Sequence[RunData]) -> list[str]:
    """Each run's model name, with the directory name added where two runs share a model.

    >>> from pathlib import Path
    >>> runs = [RunData.of(Path(p), {"model": {"name": "openai/x"}}, []) for p in ("a", "b")]
    >>> display_names(runs + [RunData.of(Path("c"), {}, [])])
    ['openai/x (a)', 'openai/x (b)', 'c']
    """
    names = [run.name for run in runs]
    return [f"{n} ({run.path.name})" if names.count(n) > 1 else n for n, run in zip(names, runs, strict=True)]


def metric_cell(scores: Scores | None, task: str, scope: str, metric: str, scale: float, digits: int) -> Cell:
    """The value and CI of one metric from ``scores.json`` (``None`` when absent)."""
    entry = ScopeEntry.of(scores, task, scope)
    low, high = entry.bounds(metric)
    return Cell(entry.metric(metric), low, high, scale, digits)


def _metric_row(scores: Scores | None, scope: str) -> list[Value]:
    return [
        metric_cell(scores, task, scope, metric, scale, digits)
        for task, metric, _, scale, digits in PAPER_COLUMNS
    ]


def task_names(tasks: Sequence[str], joiner: str) -> str:
    """The tasks' names as headers show them, joined by ``joiner``."""
    return joiner.join(task.upper() for task in tasks)


def bert_setting(run: RunData | None) -> BertScoreSetting | None:
    """The BERTScore setting a run's ``scores.json`` records (``None``: BERTScore never ran)."""
    meta = run.score_record.meta if run is not None and run.score_record is not None else None
    return None if meta is None else meta.bertscore


def bert_note(names: Sequence[str], runs: Sequence[RunData | None]) -> str:
    """The sentence that names the BERTScore backbone of the rows' BERT columns.

    >>> bert_note(["a"], [None])
    'BERT: BERTScore F1 (not computed).'
    """
    labels = {n: backbone_label(bert_setting(r)) for n, r in zip(names, runs, strict=True)}
    found = {label for label in labels.values() if label is not None}
    if not found:
        return "BERT: BERTScore F1 (not computed)."
    if len(found) == 1:
        return f"BERT: BERTScore F1 with {found.pop()}."
    listed = "; ".join(f"{n}: {label or 'not computed'}" for n, label in labels.items())
    return f"BERT: BERTScore F1, with backbones that differ by row ({listed}); compare BERT only within one."


def paper_bert_comparable(runs: Sequence[RunData | None]) -> bool:
    """Whether every run with BERT numbers used the reference scripts' setting, the paper's BERT scale."""
    settings = [bert_setting(run) for run in runs]
    return all(is_reference_setting(s) for s in settings if s is not None)


def published_cells(values: Mapping[tuple[str, str], float], comparable: bool) -> list[Value]:
    """A published row's cells; its BERT values marked when the runs beside it used another backbone."""
    cells: list[Value] = []
    for task, metric, _, scale, digits in PAPER_COLUMNS:
        cell = Cell(values.get((task, metric)), None, None, scale, digits)
        bert = metric == "bertscore_f1"
        cells.append(f"{cell.text()} (not comparable)" if bert and not comparable else cell)
    return cells


PAPER_BERT_NOTE = (
    " The published BERT values are marked (not comparable): the runs beside them were scored with another "
    f"backbone than the reference scripts' ({DEFAULT_MODEL} L5, no idf), and BERTScore's scale moves with it."
)


CI_BRACKETS = "brackets: 95% CI from a cluster bootstrap over conversations"
"""The legend of the CIs in brackets (the terminal, which shows no brackets unless asked, says where they
are instead)."""
LEADER_KEYS = ("Model", "Source", "Status", "Valid (%)")
"""The leaderboard's columns before the metrics."""


def validity_cell(run: RunData) -> Cell | None:
    """The share of the run's instances with a valid answer, in % (``None`` when not recorded)."""
    share = measured.validity(run)
    return None if share is None else Cell(share, scale=100.0, digits=1)


def leaderboard(runs: Sequence[RunData], *, with_paper: bool = False) -> Table:
    """Table 5: one row per run (both scenarios pooled) with its status and validity, the Average rows, then
    the published rows when asked for; the subtitle says what the runs measured."""
    names = display_names(runs)
    rows: list[tuple[Value, ...]] = [
        (name, "this toolkit", measured.state(run), validity_cell(run), *_metric_row(run.score_record, "all"))
        for name, run in zip(names, runs, strict=True)
    ]
    found = averages.groups(runs)
    for group in found:
        label = group.label(names, len(found) > 1)
        rows.append((label, "mean of runs", "", None, *average_row([runs[i] for i in group.members], "all")))
    comparable = paper_bert_comparable(runs)
    if with_paper:
        rows += published_table_rows(comparable)
    note = (
        f"{task_names(percent_tasks(), ', ')} in %; {task_names(judged_tasks(), ' and ')} LLM on 1-5; "
        f"{bert_note(names, runs)} {CI_BRACKETS[0].upper()}{CI_BRACKETS[1:]}. '–': not "
        f"computed (e.g. the run was not judged). {VALIDITY_NOTE}"
    )
    note += averages.note(runs, found, names)
    marks = status_note([str(row[2]) for row in rows])
    note += f" {marks}" if marks else ""
    if with_paper:
        note += " " + measured.published_caveat(runs)
        note += "" if comparable else PAPER_BERT_NOTE
    return Table(
        "leaderboard",
        "Leaderboard (paper Table 5 layout)",
        (*LEADER_KEYS, *(c[2] for c in PAPER_COLUMNS)),
        tuple(rows),
        note,
        subtitle=measured.heading(runs) + (f"\n{measured.published_heading(runs)}" if with_paper else ""),
    )


VALIDITY_NOTE = "Valid: the share of instances with a valid answer (invalid answers are scored as misses)."


def status_note(states: Sequence[str]) -> str:
    """What the marks among ``states`` (the Status column) mean; empty when every run finished cleanly."""
    out = []
    if any(s.startswith(measured.PARTIAL) for s in states):
        out.append(
            f"{measured.PARTIAL} (done/planned instances): the run did not finish; its values cover what was "
            "done and are not final."
        )
    if measured.DEGRADED in states:
        out.append(f"{measured.DEGRADED}: the share of invalid answers passed the run's threshold.")
    return " ".join(out)


def published_table_rows(comparable: bool = True) -> list[tuple[Value, ...]]:
    """The paper's Table 5 rows in the leaderboard layout, marked (published); their BERT values marked (not
    comparable) when the runs beside them used another backbone."""
    return [
        (f"{model} (published)", SOURCE, "published", None, *published_cells(values, comparable))
        for model, values in published_rows()
    ]


def per_scenario(runs: Sequence[RunData]) -> Table:
    """Table 11: the Table 5 columns per scenario (Couple, Family, Both) and run, then the Average rows."""
    rows: list[tuple[Value, ...]] = []
    names = display_names(runs)
    for name, run in zip(names, runs, strict=True):
        for scope in ("couple", "family", "all"):
            if any(scope in scored_tasks(run).get(task, {}) for task, *_ in PAPER_COLUMNS):
                rows.append((name, SCOPE_NAMES[scope], *_metric_row(run.score_record, scope)))
    found = averages.groups(runs)
    for group in found:
        members, label = [runs[i] for i in group.members], group.label(names, len(found) > 1)
        for scope in ("couple", "family", "all"):
            rows.append((label, SCOPE_NAMES[scope], *average_row(members, scope)))
    return Table(
        "per_scenario",
        "Per-scenario results (paper Table 11 layout)",
        ("Model", "Scen.", *(c[2] for c in PAPER_COLUMNS)),
        tuple(rows),
        "Both pools the instances of the two scenarios (micro average). "
        + bert_note(names, runs)
        + averages.note(runs, found, names),
    )


def average_row(runs: Sequence[RunData], scope: str) -> list[Value]:
    """The paper's Average row over ``runs`` (:mod:`rescue_bench.report.averages`), without CIs."""
    return [
        Cell(averages.mean_value(runs, task, scope, metric), None, None, scale, digits)
        for task, metric, _, scale, digits in PAPER_COLUMNS
    ]


def per_label(runs: Sequence[RunData]) -> Table:
    """Per-label RPP top-1 accuracy per run and scenario (paper App. E.2), then the Average rows."""
    names = display_names(runs)
    rows: list[tuple[Value, ...]] = [
        (name, item["scenario"], item["label"], item["n"], Cell(item["accuracy"], scale=100.0, digits=2))
        for name, run in zip(names, runs, strict=True)
        for item in analysis.per_label_accuracy(run.prediction_lines)
    ]
    found = averages.groups(runs)
    for group in found:
        label = group.label(names, len(found) > 1)
        for item in averages.mean_per_label([runs[i] for i in group.members]):
            cell = Cell(item["accuracy"], scale=100.0, digits=2)
            rows.append((label, item["scenario"], item["label"], item["n"], cell))
    return Table(
        "per_label",
        "RPP accuracy per gold label",
        ("Model", "Scenario", "Label", "n", "Acc. (%)"),
        tuple(rows),
        "Top-1 accuracy over the instances whose gold is the label; invalid answers count as misses."
        + (averages.NOTE if found else ""),
    )


def label_distributions(runs: Sequence[RunData]) -> Table:
    """Gold label counts and shares (RPP patterns, SSP strategies, STP target kinds) of each run."""
    rows = [
        (
            name,
            d["task"].upper(),
            d["scenario"],
            d["label"],
            d["count"],
            Cell(d["share"], scale=100.0, digits=1),
        )
        for name, run in zip(display_names(runs), runs, strict=True)
        for d in analysis.label_distribution(run.prediction_lines)
    ]
    return Table(
        "label_distribution",
        "Gold label distributions",
        ("Model", "Task", "Scenario", "Label", "Count", "Share (%)"),
        tuple(rows),
    )


def scored_tasks(run: RunData) -> dict[str, dict[str, dict[str, Json]]]:
    """``scores.json``'s task entries (``{}`` for a run without scores)."""
    return run.score_record.tasks if run.score_record is not None else {}
