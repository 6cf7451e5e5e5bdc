"""What the engine needs from a model: one kind of answerer, the :class:`Provider`.

A provider answers a rendered :class:`Request` with a :class:`Reply`: text that the task parses, or, for
the ``baseline/`` reference rows, predictions already in the task's shape (``Reply.predictions``).
OpenAI-compatible endpoints, the local llama.cpp model, ``replay/`` and the baselines are providers; what
each can do (be cached, take an endpoint, be exported for a Batch API, re-use a prompt prefix) is declared
in its :class:`Capabilities`.

Model names have the form ``provider/model`` and are parsed once by :func:`parse_model_name`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from rescue_bench.errors import ConfigError
from rescue_bench.records import Instance, Json, Reply, Request

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


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a provider can do, declared instead of guessed from its name or attributes."""

    cacheable: bool = True
    """Replies may go to, and come from, the response cache."""
    has_endpoint: bool = True
    """An HTTP endpoint (``--base-url`` applies)."""
    reads_prompts: bool = True
    """A language model that reads the rendered messages (a judge must be one); baselines and replays answer
    from the instances instead."""
    batch_export: bool = True
    """Requests can be exported for a Batch API."""
    reuses_prompt_prefix: bool = False
    """An in-process KV cache re-uses what consecutive prompts share: one full-history item per request."""


@runtime_checkable
class Provider(Protocol):
    """A model the engine asks: a chat model behind some endpoint, in this process, or a baseline."""

    name: str
    """The full ``provider/model`` name."""
    capabilities: Capabilities

    def identity(self) -> dict[str, Json]:
        """Provider, model and endpoint (never a secret): recorded in runs and part of the cache key."""
        ...

    def prepare(self, instances: Sequence[Instance]) -> None:
        """Every instance of the run, once, before the first request (a baseline computes its prior here)."""
        ...

    async def complete(self, request: Request, params: GenerationParams) -> Reply:
        """Answer one request.

        Raise :class:`rescue_bench.errors.RetryableError` for faults worth retrying; return ``Reply.failure``
        (or raise ``ProviderError``) for faults that are not.
        """
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ModelName:
    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"


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
