"""What aggregation needs to know about a task's metrics, as plain data the task hands down.

The metrics package sits below the tasks (it may not import them), so a task's metric facts travel as a
:class:`MetricSpec`: each task module names its spec in its ``INFO`` (a ``tasks.base.TaskInfo``), and callers
that know the task registry pass the specs in (``rescue_bench.tasks.metric_specs()``).

The specs here are defined by what they measure (binary, multiclass, ranking, the two generation scores), not
by task: a new task reuses one or brings its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from rescue_bench.metrics.generation import EMOTION, VIEWPOINT, GenerationMetrics
from rescue_bench.records import TaskKind


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """A task's metrics: its kind, the headline metrics (each with a CI), and whether McNemar applies."""

    kind: TaskKind
    headline: tuple[str, ...]
    """Metrics reported with a CI, in ``scores.json`` order."""
    mcnemar: bool
    """Top-1 correctness is defined, so a paired comparison adds McNemar's test."""
    generation: GenerationMetrics | None = None
    """Set exactly for ``kind == "generation"``."""
    binary_labels: tuple[str, str] | None = None
    """The (positive, negative) gold labels of a binary task; other gold values are bad data."""

    def __post_init__(self) -> None:
        if (self.kind == "generation") != (self.generation is not None):
            raise ValueError("a generation MetricSpec needs GenerationMetrics, and only it")
        if (self.kind == "binary") != (self.binary_labels is not None):
            raise ValueError("a binary MetricSpec needs its two labels, and only it")


BINARY_YES_NO = MetricSpec(
    "binary",
    ("precision", "recall", "f1", "accuracy", "balanced_accuracy"),
    mcnemar=True,
    binary_labels=("yes", "no"),
)
"""Binary ``yes``/``no``; precision, recall and F1 of ``yes``."""
MULTICLASS_TOP3 = MetricSpec(
    "multiclass", ("accuracy", "macro_f1", "recall_at_2", "recall_at_3", "mrr"), mcnemar=True
)
"""A closed label set answered as a ranked top 3: top-1 accuracy, macro-F1 and the ranking metrics."""
RANKING_TOP3 = MetricSpec("ranking", ("recall_at_1", "mrr", "recall_at_2", "recall_at_3"), mcnemar=True)
"""A ranked top 3 over the instance's candidates."""
EMOTION_SCORES = MetricSpec(
    "generation",
    ("llm", "s_emo", "s_int", "bertscore_f1"),
    mcnemar=False,
    generation=EMOTION,
)
"""An emotion phrase with an intensity: judge S_emo, formula S_int, their mean S_ER (``llm``), BERTScore."""
VIEWPOINT_SCORES = MetricSpec(
    "generation",
    ("llm", "total_0_6", "pairing", "viewpoint", "bertscore_f1"),
    mcnemar=False,
    generation=VIEWPOINT,
)
"""Viewpoint lists: judge pairing 0-2 and viewpoint 0-4, their total mapped onto 1-5 (``llm``), BERTScore."""
