"""What the engine needs from a model.

Two kinds of answerers exist:

* a :class:`Provider` is a chat model: it answers a rendered :class:`Request` with a :class:`Reply` (text that
  the task
  parses). OpenAI-compatible endpoints, the local llama.cpp model and ``replay/`` are providers.
* a :class:`Predictor` answers instances directly, without prompts: the ``baseline/`` reference rows.

Model names have the form ``provider/model`` and are parsed once by :func:`parse_model_name`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol, runtime_checkable

from rescue_bench.errors import ConfigError
from rescue_bench.records import Instance, Json, Prediction, Reply, Request

ResponseFormat = Literal["json_schema", "json_object", "text"]


@dataclass(frozen=True, slots=True)
class GenerationParams:
    """Generation settings; every field is part of the response-cache key."""

    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = None
    response_format: ResponseFormat = "json_schema"
    disable_thinking: bool = False
    extra: dict[str, Json] = field(default_factory=dict)


@runtime_checkable
class Provider(Protocol):
    """A chat model behind some endpoint."""

    name: str
    """The full ``provider/model`` name."""

    def identity(self) -> dict[str, Json]:
        """Provider, model and endpoint (never a secret): recorded in runs and part of the cache key."""
        ...

    async def complete(self, request: Request, params: GenerationParams) -> Reply:
        """Answer one request.

        Raise :class:`rescue_bench.engine.limits.RetryableError` for faults worth retrying;
        return ``Reply.failure`` (or raise ``ProviderError``) for faults that are not."""
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class Predictor(Protocol):
    """Answers instances without a model (baselines)."""

    name: str

    def identity(self) -> dict[str, Json]: ...

    def predict(self, instances: Sequence[Instance]) -> list[Prediction]: ...


@dataclass(frozen=True, slots=True)
class ModelName:
    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"


IN_PROCESS_PROVIDERS: Final = ("local",)
"""Providers that run the model in this process and keep its KV cache between requests."""


def reuses_prompt_prefix(model: str) -> bool:
    """Whether consecutive requests to ``model`` re-use the work on their common prompt prefix for free.

    >>> reuses_prompt_prefix("local/gemma-3-270m"), reuses_prompt_prefix("openai/gpt-4o")
    (True, False)
    """
    return model.partition("/")[0] in IN_PROCESS_PROVIDERS


def parse_model_name(text: str) -> ModelName:
    """Split ``provider/model`` on the first slash.

    >>> parse_model_name("openai/gpt-4o")
    ModelName(provider='openai', model='gpt-4o')
    >>> str(parse_model_name("replay/runs/a"))
    'replay/runs/a'
    """
    provider, sep, model = text.partition("/")
    if not sep or not provider or not model:
        raise ConfigError(
            f"model {text!r} is not of the form provider/model (e.g. openai/gpt-4o, local/gemma-3-270m)"
        )
    return ModelName(provider, model)
