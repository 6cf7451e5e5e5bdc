"""The paper's "Average" rows: each column's mean over the finished, comparable model runs of a report.

The paper's Tables 5 and 11 end with an "Average" row, the plain mean of each column over the ten models.
Here a run takes part when it finished (``run.json`` status ``finished``: not partial, stopped or degraded),
has scores, and is a model (not a ``baseline/`` row). Runs are comparable when they answered the same
questions the same way: the same protocol version, data (content hash), tasks, mode, context and batch sizes,
task options, sample selection, perturbation and repeats; each group of two or more such runs gets its own
average. A column is averaged only when every run of the group has a value (a run that was not judged leaves
the LLM column empty), and only when nothing that changes its numbers differs within the group, by the rules
``compare`` follows (:mod:`rescue_bench.report.likeness`): generation settings that change answers
(temperature, reasoning effort, ...) blank every column, judges or judge repeats the LLM columns, the
BERTScore backbone the BERT columns. :func:`note` says which, beside the table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rescue_bench.judge.bertscore import backbone_label
from rescue_bench.report import likeness
from rescue_bench.report.analysis import per_label_accuracy
from rescue_bench.report.entries import ScopeEntry
from rescue_bench.report.likeness import Affects
from rescue_bench.rundir import RunData
from rescue_bench.tasks import metric_specs

COMPARED: tuple[str, ...] = (
    "protocol",
    "tasks",
    "mode",
    "context_size",
    "batch_size",
    "limit_samples",
    "sample_ids",
    "task_options",
    "video",
    "perturbation",
    "repeats",
)
"""``run.json`` config keys that must agree for two runs to be averaged together."""
NOT_A_MODEL = ("baseline/",)


@dataclass(frozen=True, slots=True)
class Group:
    """Runs averaged together: their positions in the report's run list."""

    members: tuple[int, ...]

    def label(self, names: Sequence[str], numbered: bool) -> str:
        """``Average (3 runs)``; with several groups, the runs are named."""
        head = f"Average ({len(self.members)} runs"
        return head + (": " + ", ".join(names[i] for i in self.members) + ")" if numbered else ")")


def takes_part(run: RunData) -> bool:
    """Whether a run enters an average: finished, scored, and a model rather than a baseline.

    >>> from pathlib import Path
    >>> takes_part(RunData.of(Path("r"), {"status": "running", "config": {"model": "openai/x"}}, []))
    False
    """
    name = run.manifest.facts.model or run.manifest.candidate or ""
    finished = run.manifest.status == "finished" and run.score_record is not None
    return finished and not name.startswith(NOT_A_MODEL)


def comparable_key(run: RunData) -> str:
    """What must agree between averaged runs (:data:`COMPARED`, the data's hash, the protocol version)."""
    config = run.manifest.config
    shown = {key: config.get(key) for key in COMPARED}
    shown["protocol"] = run.manifest.protocol
    shown["dataset"] = run.manifest.dataset.hash
    return json.dumps(shown, sort_keys=True, default=str)


def groups(runs: Sequence[RunData]) -> list[Group]:
    """The groups of two or more comparable runs that take part, in the order of their first run."""
    by_key: dict[str, list[int]] = {}
    for index, run in enumerate(runs):
        if takes_part(run):
            by_key.setdefault(comparable_key(run), []).append(index)
    return [Group(tuple(members)) for members in by_key.values() if len(members) > 1]


def changes(task: str, metric: str) -> frozenset[Affects]:
    """Which kinds of difference (:class:`likeness.Difference` ``affects``) change ``metric`` of ``task``.

    >>> sorted(changes("er", "llm")), sorted(changes("vp", "bertscore_f1")), sorted(changes("itp", "f1"))
    (['all', 'judged'], ['all', 'bertscore'], ['all'])
    """
    generation = metric_specs()[task].generation
    if metric == "bertscore_f1":
        return frozenset({"all", "bertscore"})
    if generation is not None and metric in generation.judge_metrics:
        return frozenset({"all", "judged"})
    return frozenset({"all"})


def blocked_by(runs: Sequence[RunData], task: str, metric: str) -> list[likeness.Difference]:
    """The differences between ``runs`` that keep ``metric`` of ``task`` from being averaged."""
    kinds = changes(task, metric)
    return [found for found in likeness.differences(runs) if found.affects in kinds]


def mean_value(runs: Sequence[RunData], task: str, scope: str, metric: str) -> float | None:
    """The plain mean of one metric over ``runs``: ``None`` unless every run has it and nothing that
    changes it differs between them (:func:`blocked_by`; for BERT columns also the backbone's layer)."""
    values = [ScopeEntry.of(run.score_record, task, scope).metric(metric) for run in runs]
    if not values or any(v is None for v in values) or blocked_by(runs, task, metric):
        return None
    if metric == "bertscore_f1" and len({_backbone(run) for run in runs}) != 1:
        return None
    return sum(v for v in values if v is not None) / len(values)


KIND_COLUMNS: dict[Affects, str] = {
    "all": "every column",
    "judged": "the LLM columns",
    "bertscore": "the BERT columns",
}


def note(runs: Sequence[RunData], found: Sequence[Group], names: Sequence[str]) -> str:
    """:data:`NOTE` (empty without groups), then for each group whose runs differ in what changes numbers,
    which columns are '–' and why, as ``compare`` names it.

    >>> note([], [], [])
    ''
    """
    if not found:
        return ""
    reasons = []
    for group in found:
        members = [runs[i] for i in group.members]
        for difference in likeness.differences(members):
            where = KIND_COLUMNS[difference.affects]
            label = group.label(names, len(found) > 1)
            reasons.append(f"{label}: {where} '–', {difference.describe([names[i] for i in group.members])}")
    return NOTE + (" " + "; ".join(reasons) + "." if reasons else "")


def mean_per_label(runs: Sequence[RunData]) -> list[dict[str, Any]]:
    """RPP top-1 accuracy per scenario and gold label averaged over ``runs`` (the paper's App. E.2 averages):
    the labels every run has, in the first run's order, with the first run's ``n`` (the runs are comparable,
    so they share their instances)."""
    tables = [
        {(d["scenario"], d["label"]): d for d in per_label_accuracy(run.prediction_lines)} for run in runs
    ]
    if not tables:
        return []
    shared = [key for key in tables[0] if all(key in table for table in tables)]
    return [
        {**tables[0][key], "accuracy": sum(table[key]["accuracy"] for table in tables) / len(tables)}
        for key in shared
    ]


def _backbone(run: RunData) -> str | None:
    meta = run.score_record.meta if run.score_record is not None else None
    return backbone_label(meta.bertscore if meta is not None else None)


NOTE = (
    " Average rows: the plain mean of each column over the finished model runs (no baselines) that answered "
    "the same questions the same way; '–' where a run lacks the value, or where the runs differ in what "
    "changes it (generation settings, judges, BERT backbone)."
)
