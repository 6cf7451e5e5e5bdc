"""The paper's "Average" rows: each column's mean over the finished, comparable model runs of a report.

The paper's Tables 5 and 11 end with an "Average" row, the plain mean of each column over the ten models.
Here a run takes part when it finished (``run.json`` status ``finished``: not partial, stopped or degraded),
has scores, and is a model (not a ``baseline/`` row). Runs are comparable when they answered the same
questions the same way: the same protocol version, data (content hash), tasks, mode, context and batch sizes,
task options, sample selection, perturbation and repeats; each group of two or more such runs gets its own
average. A column is averaged only when every run of the group has a value (a run that was not judged leaves
the LLM column empty), and a BERT column only when every run used one BERTScore backbone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rescue_bench.judge.bertscore import backbone_label
from rescue_bench.report.analysis import per_label_accuracy
from rescue_bench.report.entries import ScopeEntry
from rescue_bench.rundir import RunData

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


def mean_value(runs: Sequence[RunData], task: str, scope: str, metric: str) -> float | None:
    """The plain mean of one metric over ``runs`` (``None`` unless every run has it, and for BERT columns
    unless every run used one backbone)."""
    values = [ScopeEntry.of(run.score_record, task, scope).metric(metric) for run in runs]
    if not values or any(v is None for v in values):
        return None
    if metric == "bertscore_f1" and len({_backbone(run) for run in runs}) != 1:
        return None
    return sum(v for v in values if v is not None) / len(values)


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
    "the same questions the same way; '–' where a run lacks the value or the BERT backbones differ."
)
