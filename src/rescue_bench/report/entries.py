"""Typed views of the ``scores.json`` and ``run.json`` entries that the report tables read.

A scope entry of ``scores.json`` is the run directory's own :class:`~rescue_bench.rundir.ScoreEntry`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.records import Json
from rescue_bench.rundir.scores import Bounds, CircularScore, RepeatSpread, ScoreEntry

__all__ = [
    "Agreement",
    "Bounds",
    "CircularScore",
    "ComparedScope",
    "ComparisonMeta",
    "MetricDiff",
    "RepeatSpread",
    "ScopeEntry",
    "Tokens",
    "UsageEntry",
]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


ScopeEntry = ScoreEntry
"""A task's summary of one scope in ``scores.json``: :class:`rescue_bench.rundir.ScoreEntry`."""


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
