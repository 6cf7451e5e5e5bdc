"""Typed per-task counts of ``run.json``: instances, answers and why they failed, requests, tokens.

The engine writes them (``rescue_bench.engine.counts``); ``run``, ``sweep``, the report and the viewer read
them. A key a run directory does not hold reads as 0 and is not written back (:meth:`Counts.to_json`); a
reader that must tell "none" from "not recorded" asks :meth:`Counts.has`. Keys of other writers (an older
``cost_usd``) are kept as they are.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from rescue_bench.records import Json

__all__ = ["Counts", "TokenCounts", "total"]


class TokenCounts(BaseModel):
    """Tokens of the requests that were paid for (not answered from the cache)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0


class Counts(BaseModel):
    """One task's counts in ``run.json``."""

    model_config = ConfigDict(extra="allow", frozen=True)

    instances: int = 0
    """Instances planned (every repeat counted)."""
    repeats: int = 1
    done: int = 0
    """Instances with a prediction line (an answer, a failed answer, or a request that got none)."""
    valid: int = 0
    invalid: int = 0
    request_failures: int = 0
    """Instances whose request got no answer: unfinished work, never a score."""
    parse_failures: int = 0
    invalid_labels: int = 0
    requests: int = 0
    single_retries: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    refusals: int = 0
    masked: int = 0
    tokens: TokenCounts = TokenCounts()
    truncated: int = 0
    """Replies cut off at the output cap."""
    empty_after_reasoning: int = 0
    video_unusable: int = 0
    """Video mode: instances whose task needs a clip they lack."""
    missing_clips: int = 0
    response_formats: dict[str, int] = {}
    """Answers by the response format they were asked in (a step-down of the endpoint shows here)."""
    served_models: dict[str, int] = {}
    """Answers by the model the endpoint said served them (``model`` of the reply), when it said."""

    @property
    def failed_answers(self) -> int:
        """Answers that came back but failed (parse failures, invalid labels): scored as misses.

        >>> Counts(instances=4, invalid=3, request_failures=1).failed_answers
        2
        """
        return self.invalid - self.request_failures

    def has(self, name: str) -> bool:
        """Whether the file recorded ``name`` (a directory written before it was counted did not)."""
        return name in self.model_fields_set

    def to_json(self) -> dict[str, Json]:
        """The keys the file had (or the engine set), so counts read back as they were written."""
        return self.model_dump(mode="json", exclude_unset=True)


def total(counts: Iterable[Counts], name: str) -> int:
    """``name`` summed over several tasks' counts.

    >>> total([Counts(valid=2), Counts(valid=3)], "valid")
    5
    """
    found = (getattr(c, name) for c in counts)
    return sum(v for v in found if isinstance(v, int))
