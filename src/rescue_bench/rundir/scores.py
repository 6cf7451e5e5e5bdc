"""Typed ``scores.json``: per task and scope (``couple``, ``family``, ``all``) an entry of metrics, n and CIs.

A task's entry holds its own metric keys beside the common ones (``n``, ``ci``, the counts), so
:class:`ScoreEntry` keeps the keys it does not name (``extra="allow"``) and gives them through
:meth:`ScoreEntry.metric`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.records import Json
from rescue_bench.rundir.judging import BertScoreSetting
from rescue_bench.rundir.lines import Line

__all__ = ["RESERVED_KEYS", "CircularScore", "RepeatSpread", "ScoreEntry", "Scores", "ScoresMeta"]

Bounds = list[float | None]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


class RepeatSpread(BaseModel):
    """A repeated task's ``repeats`` entry (:func:`rescue_bench.metrics.repeats.summarize_repeated_scope`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    k: int
    asks: int
    per_repeat: list[dict[str, float | None]]
    sd: dict[str, float | None]
    range: dict[str, Bounds | None]


class CircularScore(BaseModel):
    """CircularEval's ``circular`` entry: correct under every rotation of the label list."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accuracy: float
    ci: Bounds
    n: int


class ScoreEntry(BaseModel):
    """One task's summary of one scope (``couple``, ``family``, ``all``) in ``scores.json``."""

    model_config = ConfigDict(extra="allow", frozen=True)

    n: Json = None
    valid: Json = None
    parse_failures: Json = None
    invalid_labels: Json = None
    n_unscored: Json = None
    n_judged: Json = None
    """Judged tasks: the instances the judge means cover."""
    ci: dict[str, Bounds | None] = Field(default_factory=dict)
    repeats: RepeatSpread | None = None
    circular: CircularScore | None = None

    @classmethod
    def of_json(cls, entry: Mapping[str, Json]) -> ScoreEntry:
        return cls.model_validate(entry)

    @classmethod
    def of(cls, scores: Scores | None, task: str, scope: str) -> ScoreEntry:
        """``scores``' entry of ``task`` and ``scope`` (empty without scores)."""
        return scores.entry(task, scope) if scores is not None else cls()

    def metric(self, name: str) -> float | None:
        """A headline metric's value (``None`` when absent or not a number)."""
        return _number((self.model_extra or {}).get(name))

    def bounds(self, name: str) -> Bounds:
        return self.ci.get(name) or [None, None]

    def count(self, name: str) -> int:
        """``n``, ``valid``, ``parse_failures``, ``invalid_labels``, ``n_unscored`` or ``n_judged`` as a whole
        number (0 when absent)."""
        return _count(getattr(self, name))

    @property
    def empty(self) -> bool:
        """The file holds nothing for this task and scope."""
        return not (self.model_fields_set or self.model_extra)

    @property
    def unjudged(self) -> int:
        """Instances the judge means leave out (``n - n_judged``), 0 when every one was judged or the task is
        not judged.

        >>> ScoreEntry(n=5, n_judged=3, llm=4.0).unjudged, ScoreEntry(n=5).unjudged
        (2, 0)
        """
        if self.metric("llm") is None or not isinstance(self.n_judged, int) or not isinstance(self.n, int):
            return 0
        return max(0, self.n - self.n_judged)


class ScoresMeta(BaseModel):
    """``scores.json``'s ``_meta``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ci: dict[str, Json] = Field(default_factory=dict)
    pooling: Json = None
    judges: list[str] = Field(default_factory=list)
    bertscore: BertScoreSetting | None = None
    judge_agreement: dict[str, Json] | None = None
    scoring_rules: dict[str, dict[str, str]] | None = None
    """Judged task -> metric -> how it is computed (the VP 1-5 mapping, what BERTScore compares)."""


RESERVED_KEYS = frozenset({"_meta", "_relational"})
"""Keys of ``scores.json`` that are not tasks."""


class Scores(Line):
    """``scores.json``: per task and scope (``couple``, ``family``, ``all``) the metrics, n and CIs."""

    tasks: dict[str, dict[str, dict[str, Json]]] = Field(default_factory=dict)
    meta: ScoresMeta = Field(default=ScoresMeta(), alias="_meta")
    relational: dict[str, Json] | None = Field(default=None, alias="_relational")
    """Relation-aware analyses (``metrics.relational.relational_analyses``); absent in older files."""

    @classmethod
    def of(cls, obj: dict[str, Json], where: str = "scores.json") -> Scores:
        """Read the file's object, whose task entries sit beside ``_meta`` (and ``_relational``)."""
        tasks = {k: v for k, v in obj.items() if k not in RESERVED_KEYS}
        reserved = {k: v for k, v in obj.items() if k in RESERVED_KEYS and v is not None}
        return cls.from_json({"tasks": tasks, **reserved}, where)

    def to_json(self) -> dict[str, Json]:
        out = {**self.tasks, "_meta": self.meta.model_dump(mode="json", exclude_unset=True)}
        if self.relational is not None:
            out["_relational"] = self.relational
        return out

    def entry(self, task: str, scope: str = "all") -> ScoreEntry:
        """One task's summary of one scope, typed (empty when the file has none).

        >>> Scores.of({"itp": {"all": {"n": 4, "f1": 0.5}}}).entry("itp").metric("f1")
        0.5
        """
        return ScoreEntry.of_json(self.tasks.get(task, {}).get(scope, {}))
