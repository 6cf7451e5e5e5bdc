"""The parts of a run spec: the model under test and its judges, the engine's pace, the budget, video mode."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator

from rescue_bench.models.base import Finite, Generation
from rescue_bench.models.presets import reasoning_problem


class SpecTable(BaseModel):
    """A table of the spec: frozen, and an unknown key is refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelEndpoint(SpecTable):
    """Which model answers, and where: the first keys of a model's table."""

    name: str = Field(description="provider/model, e.g. openai/gpt-4o, local/gemma-3-270m.")
    base_url: str | None = Field(None, description="Endpoint of an OpenAI-compatible server.")
    api_key_env: str | None = Field(None, description="Name of the variable that holds the API key.")

    @field_validator("name")
    @classmethod
    def _provider_model(cls, name: str) -> str:
        provider, sep, model = name.partition("/")
        if not sep or not provider or not model:
            raise ValueError(f"{name!r} is not of the form provider/model (e.g. openai/gpt-4o)")
        return name


class ModelSpec(Generation, ModelEndpoint):
    """The model under test and how it generates: its name and endpoint, then every :class:`Generation`
    setting as a key of its own (a spec's ``[model]`` table stays flat)."""

    concurrency: StrictInt | None = Field(
        None,
        ge=1,
        description="Requests in flight for this model (default: engine.concurrency).",
    )

    @model_validator(mode="after")
    def _reasoning(self) -> ModelSpec:
        problem = reasoning_problem(
            self.name.partition("/")[0],
            self.reasoning_effort,
            disable_thinking=self.disable_thinking,
            # top_p 1.0 is the service's default: no sampling setting to lose (the study example).
            sampled=self.temperature > 0 or (self.top_p is not None and self.top_p < 1.0),
        )
        if problem is not None:
            raise ValueError(f"`reasoning_effort` {self.reasoning_effort!r}: {problem}")
        return self


class JudgeSpec(ModelSpec):
    """One judge of the free-text tasks, asked after the run: the same keys as a model, its own settings."""

    name: str = Field(
        description="Judge model for ER/VP, asked after the run (repeatable); the paper's judge is GPT-5.4."
    )
    base_url: str | None = Field(
        None,
        description="Endpoint of the judges (default: --base-url when a judge shares the model's provider or "
        "the model is a baseline; else the judge provider's own).",
    )
    api_key_env: str | None = Field(
        None, description="Variable holding the judges' key (default: as the endpoint)."
    )
    temperature: Finite = Field(0.0, ge=0.0, description="The judges' sampling temperature.")
    price_in: Finite | None = Field(
        None, ge=0, description="This judge's USD per million prompt tokens (default: the price table)."
    )
    price_out: Finite | None = Field(
        None, ge=0, description="This judge's USD per million completion tokens (with price_in)."
    )

    @model_validator(mode="after")
    def _prices_together(self) -> JudgeSpec:
        if (self.price_in is None) != (self.price_out is None):
            raise ValueError("price_in and price_out go together")
        return self


class EngineSpec(SpecTable):
    """How fast and how robustly the run goes; never what it asks."""

    concurrency: StrictInt = Field(16, ge=1, description="Requests in flight at most.")
    fixed_concurrency: StrictBool = Field(
        False, description="Keep --concurrency requests in flight; default: adapt to the server, up to it."
    )
    rpm: Finite | None = Field(None, gt=0, description="Requests per minute at most.")
    tpm: Finite | None = Field(None, gt=0, description="Tokens per minute at most.")
    timeout: Finite = Field(120.0, gt=0, description="Seconds per request attempt.")
    max_retries: StrictInt = Field(5, ge=0, description="Retries of 429/5xx/timeouts.")
    cache: StrictBool = Field(True, description="Read and write the response cache.")
    retry_failed: StrictBool = Field(False, description="Ask invalid instances again.")
    judge_concurrency: StrictInt | None = Field(
        None, ge=1, description="Requests in flight per judge (default: a judge's own, else concurrency)."
    )
    judge_rpm: Finite | None = Field(None, gt=0, description="Requests per minute per judge (default: rpm).")
    judge_tpm: Finite | None = Field(None, gt=0, description="Tokens per minute per judge (default: tpm).")


class BudgetSpec(SpecTable):
    """A spending limit and the prices it is counted with."""

    usd: Finite | None = Field(None, gt=0, description="Stop before spending more USD.")
    price_in: Finite | None = Field(
        None, ge=0, description="USD per million prompt tokens of the model (never its judges')."
    )
    price_out: Finite | None = Field(
        None, ge=0, description="USD per million completion tokens of the model (never its judges')."
    )
    prices: Path | None = Field(None, description="JSON file of prices (per model or one entry).")

    @model_validator(mode="after")
    def _one_source(self) -> BudgetSpec:
        if self.prices is not None and (self.price_in is not None or self.price_out is not None):
            raise ValueError("give either `prices` or `price_in` and `price_out`, not both")
        if (self.price_in is None) != (self.price_out is None):
            raise ValueError("`price_in` and `price_out` go together: give both")
        return self


class VideoSpec(SpecTable):
    """Clip settings of video mode (they change what the model is sent)."""

    clips: tuple[str, ...] = Field(
        (), description="Video mode: an annotate work directory or review assets (repeatable)."
    )
    form: Literal["video", "frames"] = Field(
        "video", description="Video mode: send clips as video, or as still frames."
    )
    frames: StrictInt = Field(4, ge=1, description="Video mode: frames per clip (frames form).")
    clip_url_base: str | None = Field(
        None, description="Video mode: URL the clips are served under (default: data URLs)."
    )
    fps: Finite | None = Field(
        None,
        gt=0,
        description="Video mode: 'fps' sent with each clip (DashScope).",
    )
