"""Dataset statistics: the paper's Table 3, label distributions and the Figure-3 transition matrix.

Everything here is a pure function of loaded samples. Rendering (tables, CSV, heatmaps) lives in
:mod:`rescue_bench.data.stats_output`.

Scopes are ``couple``, ``family`` and ``all`` (both pooled). :data:`DEFINITIONS` states how each figure is
computed; the renderers print it with the figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

from rescue_bench.data.schema import Sample
from rescue_bench.taxonomy import (
    NON_CLIENT_SPEAKERS,
    SCENARIOS,
    UTTERANCE_TYPES,
    Scenario,
    relation_labels,
    strategy_labels,
)

Scope = Literal["couple", "family", "all"]
SCOPES: tuple[Scope, ...] = ("couple", "family", "all")
RelationField = Literal["relation_cycle_state", "relation_pattern"]

DEFINITIONS: dict[str, str] = {
    "samples": "conversations (one JSONL line or one JSON file each)",
    "turns": "annotated rows",
    "duration": "per sample, the last row's end_time minus the first row's start_time; totals in minutes",
    "avg_speakers": "distinct non-empty primary_speaker values per sample, Therapist included",
    "therapist_share": "rows whose primary_speaker is Therapist, as a fraction of all rows",
    "relation_patterns": "gold field as in RPP: relation_cycle_state, or relation_pattern for a sample that "
    "has no relation_cycle_state labels; non-empty labels",
    "strategies": "strategy_type of every support_strategy entry",
    "support_targets": "target of every support_strategy entry: one participant (individual), the "
    "Couple/Family label (group), two or more people (multi_person, which STP scores as the group label), "
    "or none",
    "transitions": "consecutive non-empty in-taxonomy relation-pattern labels within a sample, "
    "self-transitions excluded; rows are the current label, columns the next, shares are row-normalised",
}
DISTRIBUTIONS = ("relation_patterns", "strategies", "utterance_types", "support_targets")
TARGET_KINDS = ("individual", "group", "multi_person", "none")


@dataclass(frozen=True, slots=True)
class Table3:
    """The paper's Table 3 for one scope."""

    samples: int
    turns: int
    duration_sec: float
    therapist_turns: int
    speakers: int
    """Sum over samples of the distinct speakers per sample."""

    @property
    def duration_min(self) -> float:
        return self.duration_sec / 60

    @property
    def avg_duration_min(self) -> float | None:
        return self.duration_min / self.samples if self.samples else None

    @property
    def avg_turns(self) -> float | None:
        return self.turns / self.samples if self.samples else None

    @property
    def avg_speakers(self) -> float | None:
        return self.speakers / self.samples if self.samples else None

    @property
    def therapist_share(self) -> float | None:
        return self.therapist_turns / self.turns if self.turns else None

    def to_json(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "turns": self.turns,
            "duration_sec": self.duration_sec,
            "duration_min": self.duration_min,
            "avg_duration_min": self.avg_duration_min,
            "avg_turns": self.avg_turns,
            "avg_speakers": self.avg_speakers,
            "therapist_turns": self.therapist_turns,
            "therapist_share": self.therapist_share,
        }


@dataclass(frozen=True, slots=True)
class Transitions:
    """Counts of one label followed by a different one: ``counts[i][j]`` is labels[i] -> labels[j]."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    @property
    def total(self) -> int:
        return sum(map(sum, self.counts))

    @property
    def shares(self) -> tuple[tuple[float, ...], ...]:
        """Row-normalised counts (a row with no outgoing transition is all zeros)."""
        return tuple(tuple(c / sum(row) if sum(row) else 0.0 for c in row) for row in self.counts)

    def pairs(self) -> dict[str, int]:
        """Non-zero cells as ``{"a->b": count}``, in matrix order."""
        return {
            f"{a}->{b}": n
            for a, row in zip(self.labels, self.counts, strict=True)
            for b, n in zip(self.labels, row, strict=True)
            if n
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "labels": list(self.labels),
            "counts": [list(r) for r in self.counts],
            "row_normalised": [list(r) for r in self.shares],
            "pairs": self.pairs(),
            "total": self.total,
        }


@dataclass(frozen=True, slots=True)
class ScopeStats:
    """Everything computed for one scope."""

    table: Table3
    distributions: dict[str, dict[str, int]] = field(default_factory=dict)
    transitions: Transitions = field(default_factory=lambda: Transitions((), ()))

    def to_json(self) -> dict[str, Any]:
        return {
            **self.table.to_json(),
            "distributions": self.distributions,
            "transitions": self.transitions.to_json(),
        }


@dataclass(frozen=True, slots=True)
class DatasetStats:
    """Statistics of a whole source, per scope."""

    scopes: dict[Scope, ScopeStats]

    def to_json(self) -> dict[str, Any]:
        """``{"couple": {...}, "family": {...}, "all": {...}}``."""
        return {scope: self.scopes[scope].to_json() for scope in SCOPES}


def compute_stats(samples: Iterable[Sample]) -> DatasetStats:
    """Table 3, distributions and transitions for each scope.

    >>> from rescue_bench.data.schema import Row, Sample
    >>> rows = tuple(Row(row_index=i + 1, start_time=10.0 * i, end_time=10.0 * i + 9, primary_speaker=s)
    ...              for i, s in enumerate(["Ann", "Therapist", "Bo", "Ann"]))
    >>> sample = Sample(sample_id="s", scenario="couple", participants=("Ann", "Bo"), rows=rows)
    >>> stats = compute_stats([sample])
    >>> table = stats.scopes["couple"].table
    >>> table.turns, table.duration_sec, table.avg_speakers, table.therapist_share
    (4, 39.0, 3.0, 0.25)
    >>> stats.scopes["family"].table.avg_turns is None
    True
    """
    by_scenario: dict[Scenario, list[Sample]] = {s: [] for s in SCENARIOS}
    for sample in samples:
        by_scenario[sample.scenario].append(sample)
    everything = [s for scenario in SCENARIOS for s in by_scenario[scenario]]
    scopes: dict[Scope, ScopeStats] = {}
    for scope in SCOPES:
        members = everything if scope == "all" else by_scenario[scope]
        labels = _scope_relation_labels(scope)
        scopes[scope] = ScopeStats(
            table3(members), label_distributions(members, scope), transitions(members, labels)
        )
    return DatasetStats(scopes)


def table3(samples: Sequence[Sample]) -> Table3:
    """The paper's Table 3 figures for a group of samples."""
    return Table3(
        samples=len(samples),
        turns=sum(len(s.rows) for s in samples),
        duration_sec=sum(s.duration_sec for s in samples),
        therapist_turns=sum(row.is_therapist for s in samples for row in s.rows),
        speakers=sum(len({row.speaker for row in s.rows} - {""}) for s in samples),
    )


def relation_gold_field(sample: Sample) -> RelationField:
    """The field that holds a sample's gold relation pattern (the RPP rule).

    >>> from rescue_bench.data.schema import Row, Sample
    >>> row = Row(row_index=1, relation_cycle_state="", relation_pattern="attack_attack")
    >>> relation_gold_field(Sample(sample_id="s", scenario="couple", participants=(), rows=(row,)))
    'relation_pattern'
    """
    has_cycle = any((row.relation_cycle_state or "").strip() for row in sample.rows)
    return "relation_cycle_state" if has_cycle else "relation_pattern"


def relation_gold(sample: Sample) -> tuple[str, ...]:
    """The cleaned gold relation label of every row (``""`` where there is none), by the RPP rule."""
    name = relation_gold_field(sample)
    return tuple((getattr(row, name) or "").strip() for row in sample.rows)


def label_distributions(samples: Sequence[Sample], scope: Scope) -> dict[str, dict[str, int]]:
    """Label counts per kind; taxonomy labels come first (zeros included), then any others seen."""
    relations: Counter[str] = Counter()
    strategies: Counter[str] = Counter()
    utterances: Counter[str] = Counter()
    targets: Counter[str] = Counter()
    for sample in samples:
        relations.update(label for label in relation_gold(sample) if label)
        for row in sample.rows:
            utterances.update([(row.utterance_type or "").strip()])
            for strategy in row.support_strategy:
                strategies.update([(strategy.strategy_type or "").strip()])
                targets[support_target_kind(strategy.target)] += 1
    return {
        "relation_patterns": _ordered(relations, _scope_relation_labels(scope)),
        "strategies": _ordered(strategies, _scope_strategy_labels(scope)),
        "utterance_types": _ordered(utterances, UTTERANCE_TYPES),
        "support_targets": _ordered(targets, TARGET_KINDS),
    }


def support_target_kind(names: Iterable[str]) -> str:
    """Classify a support target list; ``Therapist`` and blanks are ignored, as in STP.

    >>> [support_target_kind(t) for t in (["Ann"], ["Couple"], ["Ann", "Bo"], ["Therapist"])]
    ['individual', 'group', 'multi_person', 'none']
    """
    clean = [n.strip() for n in names if n.strip() and n.strip() != "Therapist"]
    if not clean:
        return "none"
    if len(clean) > 1:
        return "multi_person"
    return "group" if clean[0] in NON_CLIENT_SPEAKERS else "individual"


def transitions(samples: Iterable[Sample], labels: Sequence[str]) -> Transitions:
    """Count changes between consecutive labels within each sample (the paper's Figure 3).

    Only labels that are in ``labels`` and in the sample's own scenario taxonomy take part, so the ``all``
    scope is exactly the couple and family counts pooled.

    >>> from rescue_bench.data.schema import Row, Sample
    >>> gold = ["pursue_withdraw", "", "pursue_withdraw", "nonsense", "repair_softening", "pursue_withdraw"]
    >>> rows = tuple(Row(row_index=i + 1, relation_cycle_state=g) for i, g in enumerate(gold))
    >>> sample = Sample(sample_id="s", scenario="couple", participants=(), rows=rows)
    >>> t = transitions([sample], relation_labels("couple"))
    >>> t.pairs()
    {'pursue_withdraw->repair_softening': 1, 'repair_softening->pursue_withdraw': 1}
    """
    position = {label: i for i, label in enumerate(labels)}
    counts = [[0] * len(labels) for _ in labels]
    for sample in samples:
        allowed = set(relation_labels(sample.scenario)) & position.keys()
        sequence = [position[g] for g in relation_gold(sample) if g in allowed]
        for a, b in pairwise(sequence):
            if a != b:
                counts[a][b] += 1
    return Transitions(tuple(labels), tuple(tuple(row) for row in counts))


def _scope_relation_labels(scope: Scope) -> tuple[str, ...]:
    if scope == "all":
        return _union(relation_labels("couple"), relation_labels("family"))
    return relation_labels(scope)


def _scope_strategy_labels(scope: Scope) -> tuple[str, ...]:
    if scope == "all":
        return _union(strategy_labels("couple"), strategy_labels("family"))
    return strategy_labels(scope)


def _union(first: Sequence[str], second: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*first, *second)))


def _ordered(counts: Counter[str], known: Sequence[str]) -> dict[str, int]:
    counts.pop("", None)
    out = {label: counts.get(label, 0) for label in known}
    out.update(sorted((label, n) for label, n in counts.items() if label not in out))
    return out
