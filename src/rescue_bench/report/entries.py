"""Typed views of the ``scores.json`` and ``run.json`` entries that the report tables read.

``scores.json`` entries hold a task's own metric keys beside the common ones (``n``, ``ci``, the counts), so a
scope entry keeps the keys it does not name (``extra="allow"``) and gives them through :meth:`metric`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.records import Json
from rescue_bench.rundir import Scores

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


class ScopeEntry(BaseModel):
    """One task's summary of one scope (``couple``, ``family``, ``all``) in ``scores.json``."""

    model_config = ConfigDict(extra="allow", frozen=True)

    n: Json = None
    valid: Json = None
    parse_failures: Json = None
    invalid_labels: Json = None
    n_unscored: Json = None
    ci: dict[str, Bounds | None] = Field(default_factory=dict)
    repeats: RepeatSpread | None = None
    circular: CircularScore | None = None

    @classmethod
    def of(cls, scores: Scores | None, task: str, scope: str) -> ScopeEntry:
        return cls.model_validate(scores.entry(task, scope) if scores is not None else {})

    def metric(self, name: str) -> float | None:
        """A headline metric's value (``None`` when absent or not a number)."""
        return _number((self.model_extra or {}).get(name))

    def bounds(self, name: str) -> Bounds:
        return self.ci.get(name) or [None, None]

    def count(self, name: str) -> int:
        """``n``, ``valid``, ``parse_failures`` or ``invalid_labels`` as a whole number (0 when absent)."""
        return _count(getattr(self, name))


class Agreement(BaseModel):
    """One task's entry of ``_meta.judge_agreement``."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    n_items: Json = None
    alpha_ordinal: float | None = None
    exact_agreement: float | None = None
    mae: float | None = None


class Tokens(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    prompt_tokens: Json = None
    completion_tokens: Json = None
    reasoning_tokens: Json = None


class UsageEntry(BaseModel):
    """A task's ``counts`` entry in ``run.json``, or a judge's pass (``judging.json``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    requests: Json = None
    tokens: Tokens | None = None
    usage: Tokens | None = None
    truncated: Json = None
    """Replies cut off at the output cap (a task's, since reasoning runs were counted)."""
    empty_after_reasoning: Json = None
    cost_usd: Json = None
    cost: Json = None

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> UsageEntry:
        return cls.model_validate(entry)

    @property
    def counted(self) -> Tokens:
        """The token counts: ``tokens`` (a task's), else ``usage`` (a judge pass's)."""
        return self.tokens or self.usage or Tokens()

    def recorded_cost(self) -> float | None:
        """The recorded cost (``cost_usd``, else ``cost``)."""
        return _number(self.cost_usd if "cost_usd" in self.model_fields_set else self.cost)


class MetricDiff(BaseModel):
    """One metric of a paired comparison (:func:`rescue_bench.metrics.compare.compare_scope`)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    a: Json = None
    b: Json = None
    diff: Json = None
    ci: Bounds | None = None


class ComparedScope(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    n: Json = None
    metrics: dict[str, MetricDiff] = Field(default_factory=dict)
    mcnemar: dict[str, Json] | None = None


class ComparisonMeta(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    tasks_only_a: list[str] = Field(default_factory=list)
    tasks_only_b: list[str] = Field(default_factory=list)
