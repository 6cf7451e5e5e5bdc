"""Pure analyses of a run's prediction records for the report.

Confusion matrices, per-label RPP accuracy, label distributions, RPP accuracy by relative position (paper
Fig. 4, 5) and the gold transition matrix (Fig. 3).

Everything here reads ``predictions.jsonl`` records (docs/design.md) and returns plain data; nothing draws or
writes. An invalid prediction counts as ``<invalid>`` (a miss), never as a dropped instance.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from rescue_bench.data.schema import Row, Sample
from rescue_bench.data.stats import Transitions, transitions
from rescue_bench.errors import ConfigError
from rescue_bench.metrics.classification import INVALID, accuracy_by_position
from rescue_bench.metrics.plan import top1
from rescue_bench.records import Json
from rescue_bench.rundir import PredictionLine, Scores
from rescue_bench.tasks import task_info, task_infos
from rescue_bench.taxonomy import NON_CLIENT_SPEAKERS, SCENARIOS, Scenario

N_BINS = 10
KIND_GOLD = ("group", "individual")
"""Gold kinds of a task whose answers are people (:func:`target_kind`)."""
KIND_PRED = ("group", "same person", "other person", INVALID)


@dataclass(frozen=True, slots=True)
class Confusion:
    """Counts of gold (rows) against predicted top-1 (columns)."""

    title: str
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]
    task: str = ""
    scenario: str | None = None
    """The scenario counted, ``None`` for both."""

    @property
    def total(self) -> int:
        return sum(map(sum, self.counts))


def of_task(
    records: Iterable[PredictionLine], task: str, scenario: str | None = None
) -> list[PredictionLine]:
    return [r for r in records if r.task == task and (scenario is None or r.scenario == scenario)]


def _labels(task: str, scenario: Scenario) -> tuple[str, ...]:
    labels = task_info(task).gold_labels
    return labels(scenario) if labels is not None else ()


def label_tasks() -> tuple[str, ...]:
    """Tasks with a closed gold label set per scenario (RPP, SSP): confusions and label shares."""
    return tuple(info.name for info in task_infos() if info.gold_labels is not None)


def target_kind_tasks() -> tuple[str, ...]:
    """Tasks whose gold answers are people (STP): confusions and shares by target kind."""
    return tuple(info.name for info in task_infos() if info.target_kinds)


def pattern_task() -> str:
    """The task the pattern analyses are about (RPP): per-label accuracy, position bins, transitions."""
    chosen = [info.name for info in task_infos() if info.pattern_analyses]
    if len(chosen) != 1:
        raise ConfigError(f"exactly one task must have pattern_analyses; found {chosen or 'none'}")
    return chosen[0]


def label_confusion(records: Sequence[PredictionLine], task: str, scenario: Scenario) -> Confusion:
    """RPP or SSP confusion of one scenario over its taxonomy; off-taxonomy golds are listed after it.

    >>> hit = PredictionLine(instance_id="i", task="rpp", scenario="couple", gold="attack_attack",
    ...                      valid=True, prediction=["attack_attack"])
    >>> c = label_confusion([hit, hit.model_copy(update={"valid": False})], "rpp", "couple")
    >>> c.counts[c.rows.index("attack_attack")][c.columns.index("attack_attack")], c.columns[-1], c.total
    (1, '<invalid>', 2)
    """
    members = of_task(records, task, scenario)
    known = _labels(task, scenario)
    extra = sorted({str(r.gold) for r in members} - set(known))
    rows = (*known, *extra)
    columns = (*rows, INVALID)
    counts = Counter((str(r.gold), top1(r) if top1(r) in rows else INVALID) for r in members)
    table = tuple(tuple(counts[(g, p)] for p in columns) for g in rows)
    return Confusion(f"{task.upper()} confusion ({scenario})", rows, columns, table, task, scenario)


def target_kind(gold: str, predicted: str) -> tuple[str, str]:
    """Gold and prediction of a task whose answers are people (STP) as kinds, since names differ between
    conversations.

    >>> target_kind("Couple", "Ann"), target_kind("Ann", "Ann"), target_kind("Ann", "Bo")
    (('group', 'other person'), ('individual', 'same person'), ('individual', 'other person'))
    >>> target_kind("Ann", "<invalid>")
    ('individual', '<invalid>')
    """
    gold_kind = "group" if gold in NON_CLIENT_SPEAKERS else "individual"
    if predicted == INVALID:
        return gold_kind, INVALID
    if predicted in NON_CLIENT_SPEAKERS:
        return gold_kind, "group"
    return gold_kind, "same person" if predicted == gold else "other person"


def target_confusion(
    records: Sequence[PredictionLine], scenario: str | None = None, task: str = ""
) -> Confusion:
    """Confusion by target kind of a task with people as answers (default: the first, STP)."""
    task = task or target_kind_tasks()[0]
    members = of_task(records, task, scenario)
    counts = Counter(target_kind(str(r.gold), top1(r)) for r in members)
    table = tuple(tuple(counts[(g, p)] for p in KIND_PRED) for g in KIND_GOLD)
    title = f"{task.upper()} confusion by target kind ({scenario or 'all'})"
    return Confusion(title, KIND_GOLD, KIND_PRED, table, task, scenario)


def confusions(records: Sequence[PredictionLine]) -> list[Confusion]:
    """Every confusion matrix the run has data for: label tasks (RPP, SSP) per scenario, STP pooled."""
    out = [
        label_confusion(records, task, scenario)
        for task in label_tasks()
        for scenario in SCENARIOS
        if of_task(records, task, scenario)
    ]
    out += [target_confusion(records, task=task) for task in target_kind_tasks() if of_task(records, task)]
    return out


def per_label_accuracy(records: Sequence[PredictionLine]) -> list[dict[str, Any]]:
    """RPP top-1 accuracy per scenario and gold label (paper App. E.2), taxonomy order."""
    task = pattern_task()
    out = []
    for scenario in SCENARIOS:
        members = of_task(records, task, scenario)
        golds = Counter(str(r.gold) for r in members)
        known = _labels(task, scenario)
        for label in [*known, *sorted(set(golds) - set(known))]:
            if golds[label]:
                hits = sum(top1(r) == label for r in members if r.gold == label)
                out.append(
                    {"scenario": scenario, "label": label, "n": golds[label], "accuracy": hits / golds[label]}
                )
    return out


def label_distribution(records: Sequence[PredictionLine]) -> list[dict[str, Any]]:
    """Gold label counts and shares per task and scenario: RPP patterns, SSP strategies, STP target kinds."""
    out: list[dict[str, Any]] = []
    kinds = target_kind_tasks()
    for task in (*label_tasks(), *kinds):
        for scenario in SCENARIOS:
            members = of_task(records, task, scenario)
            if not members:
                continue
            if task in kinds:
                golds = Counter(target_kind(str(r.gold), INVALID)[0] for r in members)
                order: Sequence[str] = KIND_GOLD
            else:
                golds = Counter(str(r.gold) for r in members)
                order = [*_labels(task, scenario), *sorted(set(golds) - set(_labels(task, scenario)))]
            out += [
                {
                    "task": task,
                    "scenario": scenario,
                    "label": label,
                    "count": golds[label],
                    "share": golds[label] / len(members),
                }
                for label in order
            ]
    return out


def relative_position(record: PredictionLine) -> float | None:
    """The instance's relative position in its conversation, from ``meta`` (``relative_position`` or
    ``position``), or ``None``.

    >>> line = PredictionLine(instance_id="i", task="rpp", meta={"position": 0.25})
    >>> relative_position(line), relative_position(line.model_copy(update={"meta": None}))
    (0.25, None)
    """
    meta = record.meta or {}
    for key in ("relative_position", "position"):
        value = meta.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
            return float(value)
    return None


def position_bins(
    records: Sequence[PredictionLine], scenario: str | None = None, n_bins: int = N_BINS
) -> list[dict[str, Any]]:
    """RPP top-1 accuracy, its binomial standard error and gold counts per relative-position bin."""
    members = of_task(records, pattern_task(), scenario)
    placed = [(p, r) for r in members if (p := relative_position(r)) is not None]
    return accuracy_by_position(
        [p for p, _ in placed],
        [float(top1(r) == r.gold) for _, r in placed],
        [str(r.gold) for _, r in placed],
        n_bins,
    )


def gold_transitions(records: Sequence[PredictionLine], scenario: str | None = None) -> Transitions:
    """Transitions between consecutive RPP gold labels within each conversation (paper Fig. 3), counted by
    :func:`rescue_bench.data.stats.transitions` over the gold sequence the run holds."""
    task = pattern_task()
    by_sample: dict[str, list[PredictionLine]] = {}
    for r in of_task(records, task, scenario):
        by_sample.setdefault(r.sample_id, []).append(r)
    samples = [
        Sample(
            sample_id=sid,
            scenario=cast(Scenario, rs[0].scenario),
            participants=(),
            rows=tuple(
                Row(row_index=r.row_index, relation_cycle_state=str(r.gold))
                for r in sorted(rs, key=lambda r: r.row_index)
            ),
        )
        for sid, rs in by_sample.items()
    ]
    present = [s for s in SCENARIOS if scenario in (None, s) and any(x.scenario == s for x in samples)]
    labels = list(dict.fromkeys(label for s in present for label in _labels(task, s)))
    return transitions(samples, labels)


# -- relation-aware analyses and the paper's task grouping (docs/robustness.md) -----------------------------
LOCAL_CUES = "local cues"
RELATION_INTENSIVE = "relation-intensive"
JUDGE_SCALE = 5.0
"""The judge scores of ER and VP (``llm``) run from 1 to 5; the profile shows them as a share of 5."""


def task_groups() -> dict[str, str]:
    """Each task's group in the paper's reading (Sec. 5.3), from ``TaskInfo.relation_intensive``, local cues
    first."""
    infos = sorted(task_infos(), key=lambda info: info.relation_intensive)
    return {info.name: RELATION_INTENSIVE if info.relation_intensive else LOCAL_CUES for info in infos}


def profile_metric(task: str) -> str:
    """The metric a task shows in the profile: F1 for a binary task, else its first paper column."""
    info = task_info(task)
    if "f1" in info.headline:
        return "f1"
    return info.paper_columns[0].metric if info.paper_columns else info.headline[0]


def task_profile(scores: Mapping[str, Json] | None) -> dict[str, float | None]:
    """A run's pooled score per task on a 0-100 scale (percent metrics x 100, judge scores as % of 5), in
    :func:`task_groups` order; ``None`` where the run has no value (an unjudged ER or VP).

    ``scores`` is ``scores.json``'s object, read as :class:`Scores`."""
    record = Scores.of(dict(scores or {}))
    out: dict[str, float | None] = {}
    for task in task_groups():
        value = record.entry(task).metric(profile_metric(task))
        if value is None:
            out[task] = None
        else:
            out[task] = 100.0 * value if task_info(task).percent else 100.0 * value / JUDGE_SCALE
    return out


def group_means(profile: Mapping[str, float | None]) -> dict[str, float | None]:
    """Mean profile value per task group, over the tasks that have a value."""
    groups = task_groups()
    out: dict[str, float | None] = {}
    for group in dict.fromkeys(groups.values()):
        values = [v for t, v in profile.items() if groups.get(t) == group and v is not None]
        out[group] = sum(values) / len(values) if values else None
    return out


@dataclass(frozen=True, slots=True)
class TransitionGrid:
    """RPP accuracy per gold transition of one scenario: ``accuracy[i][j]`` for labels[i] -> labels[j]
    (``None`` where no instance made that transition), with counts. Row 0 may be ``start``."""

    scenario: str
    labels: tuple[str, ...]
    sources: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]
    accuracy: tuple[tuple[float | None, ...], ...]
