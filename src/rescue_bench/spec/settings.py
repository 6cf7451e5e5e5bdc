"""The parts of a run spec: the model under test and its judges, the engine's pace, the budget, video mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import (
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    Strict,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from rescue_bench.models.base import GenerationParams, ReasoningEffort, ResponseFormat
from rescue_bench.models.presets import reasoning_problem

Finite = Annotated[float, Strict(), AllowInfNan(False)]
"""A number of a spec: an int or a float as typed (``"0.5"`` and ``true`` are refused, never coerced), and
finite (no ``inf`` or ``nan``). The spec's integers and booleans are pydantic's ``StrictInt`` and
``StrictBool``."""
MAX_SEED: Final = 2**63 - 1
"""The largest seed: a request's ``seed`` is a 64-bit signed integer at OpenAI's API, and numpy takes no
negative one (the baselines)."""
OWNED_FIELDS: Final = {
    "model": "the model's name",
    "messages": "the task",
    "stream": "the engine (it reads whole replies)",
    "stream_options": "the engine (it reads whole replies)",
    "n": "the engine (one answer per request; use repeats)",
    "temperature": "the model's temperature key",
    "top_p": "the model's top_p key",
    "seed": "the model's seed key",
    "max_tokens": "the model's max_tokens key",
    "max_completion_tokens": "the model's max_tokens key",
    "response_format": "the model's response_format key",
}
"""Request fields the tool sets itself, and what sets them: ``extra_body`` may not replace them (a replaced
``model`` or ``messages`` would ask another question under this run's name)."""


class SpecTable(BaseModel):
    """A table of the spec: frozen, and an unknown key is refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelSpec(SpecTable):
    """The model under test and how it generates."""

    name: str = Field(description="provider/model, e.g. openai/gpt-4o, local/gemma-3-270m.")
    base_url: str | None = Field(None, description="Endpoint of an OpenAI-compatible server.")
    api_key_env: str | None = Field(None, description="Name of the variable that holds the API key.")
    temperature: Finite = Field(0.0, ge=0.0, description="Sampling temperature.")
    seed: StrictInt | None = Field(
        None, ge=0, le=MAX_SEED, description="Sent to the model as its seed; seeds baselines."
    )
    response_format: ResponseFormat = Field("json_schema", description="How the answer's shape is asked for.")
    disable_thinking: StrictBool = Field(
        False, description="Send the endpoint's switch to turn off thinking."
    )
    top_p: Finite | None = Field(None, gt=0.0, le=1.0, description="Nucleus sampling: top_p sent as is.")
    max_tokens: StrictInt | None = Field(
        None,
        ge=1,
        description="Output cap of every task (default: each task's own cap, with headroom when reasoning).",
    )
    reasoning_effort: ReasoningEffort = Field(
        "none",
        description="none | minimal | low | medium | high | max: mapped to what the endpoint takes "
        "(docs/reasoning.md); none keeps the endpoint's default.",
    )
    extra_body: dict[str, JsonValue] = Field(
        default_factory=dict, description="Fields added to every request body as they are."
    )
    concurrency: StrictInt | None = Field(
        None,
        ge=1,
        description="Requests in flight for this model (default: engine.concurrency).",
    )

    @field_validator("name")
    @classmethod
    def _provider_model(cls, name: str) -> str:
        provider, sep, model = name.partition("/")
        if not sep or not provider or not model:
            raise ValueError(f"{name!r} is not of the form provider/model (e.g. openai/gpt-4o)")
        return name

    @field_validator("extra_body")
    @classmethod
    def _own_fields(cls, extra: dict[str, JsonValue]) -> dict[str, JsonValue]:
        owned = [key for key in extra if key in OWNED_FIELDS]
        if owned:
            key = owned[0]
            raise ValueError(f"{key!r} is set by {OWNED_FIELDS[key]}, not by extra_body")
        try:
            json.dumps(extra, allow_nan=False)
        except ValueError:
            raise ValueError("inf and nan are not JSON: no request can carry them") from None
        return extra

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
            raise ValueError(f"reasoning_effort {self.reasoning_effort!r}: {problem}")
        return self

    def generation_params(self, max_tokens: int | None = None) -> GenerationParams:
        """How this model (or judge) generates; ``max_tokens`` is the cap of a request that names none."""
        return GenerationParams(
            temperature=self.temperature,
            seed=self.seed,
            response_format=self.response_format,
            disable_thinking=self.disable_thinking,
            extra=dict(self.extra_body),
            top_p=self.top_p,
            output_cap=self.max_tokens,
            reasoning_effort=self.reasoning_effort,
            **({} if max_tokens is None else {"max_tokens": max_tokens}),
        )


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


class EngineSpec(SpecTable):
    """How fast and how robustly the run goes; never what it asks."""

    concurrency: StrictInt = Field(16, ge=1, description="Requests in flight at most.")
    rpm: Finite | None = Field(None, gt=0, description="Requests per minute at most.")
    tpm: Finite | None = Field(None, gt=0, description="Tokens per minute at most.")
    timeout: Finite = Field(120.0, gt=0, description="Seconds per request attempt.")
    max_retries: StrictInt = Field(5, ge=0, description="Retries of 429/5xx/timeouts.")
    cache: StrictBool = Field(True, description="Read and write the response cache.")
    retry_failed: StrictBool = Field(False, description="Ask invalid instances again.")


class BudgetSpec(SpecTable):
    """A spending limit and the prices it is counted with."""

    usd: Finite | None = Field(None, gt=0, description="Stop before spending more USD.")
    price_in: Finite | None = Field(None, ge=0, description="USD per million prompt tokens.")
    price_out: Finite | None = Field(None, ge=0, description="USD per million completion tokens.")
    prices: Path | None = Field(None, description="JSON file of prices (per model or one entry).")

    @model_validator(mode="after")
    def _one_source(self) -> BudgetSpec:
        if self.prices is not None and (self.price_in is not None or self.price_out is not None):
            raise ValueError("give either prices or price_in/price_out, not both")
        if (self.price_in is None) != (self.price_out is None):
            raise ValueError("price_in and price_out go together")
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
