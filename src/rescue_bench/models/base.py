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
from dataclasses import asdict, dataclass, field
from typing import Final, Literal, Protocol, runtime_checkable

from rescue_bench.errors import ConfigError
from rescue_bench.records import Instance, Json, Reply, Request

ResponseFormat = Literal["json_schema", "json_object", "text"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "max"]
"""How hard a reasoning model thinks; ``none`` sends nothing (the endpoint's default, today's behaviour)."""
REASONING_HEADROOM: Final[dict[ReasoningEffort, int]] = {
    "none": 0,
    "minimal": 1024,
    "low": 4096,
    "medium": 8192,
    "high": 16384,
    "max": 32768,
}
"""Output tokens added to a task's cap for the reasoning of each effort (docs/reasoning.md), unless a
``max_tokens`` is given: a model that thinks for 3,000 tokens must not hit a 1,800-token answer cap."""


@dataclass(frozen=True, slots=True)
class GenerationParams:
    """Generation settings; every field is part of the response-cache key (:meth:`key_fields`)."""

    temperature: float = 0.0
    max_tokens: int = 1024
    """The cap of a request that names none (``Request.max_tokens`` decides); ``local/``'s ceiling."""
    seed: int | None = None
    response_format: ResponseFormat = "json_schema"
    disable_thinking: bool = False
    extra: dict[str, Json] = field(default_factory=dict)
    """Fields added to every request body as they are (``extra_body``); they win over the preset's."""
    top_p: float | None = None
    output_cap: int | None = None
    """Every request's output cap (``ModelSpec.max_tokens``), in place of the task's cap and its headroom."""
    reasoning_effort: ReasoningEffort = "none"

    def cap(self, task_cap: int) -> int:
        """The output cap a request with the task's ``task_cap`` is sent with.

        >>> GenerationParams().cap(1800), GenerationParams(reasoning_effort="low").cap(1800)
        (1800, 5896)
        >>> GenerationParams(reasoning_effort="high", output_cap=4000).cap(1800)
        4000
        """
        if self.output_cap is not None:
            return self.output_cap
        return task_cap + REASONING_HEADROOM[self.reasoning_effort]

    def key_fields(self) -> dict[str, Json]:
        """The fields as the cache key hashes them: a field added after key version 3 only when it is set,
        so that a request with every new field at its default keeps the key (and the cache entry) it had.

        >>> sorted(GenerationParams().key_fields())
        ['disable_thinking', 'extra', 'max_tokens', 'response_format', 'seed', 'temperature']
        >>> GenerationParams(top_p=0.9).key_fields()["top_p"]
        0.9
        """
        fields: dict[str, Json] = asdict(self)
        for name, default in _ADDED_FIELDS.items():
            if fields[name] == default:
                del fields[name]
        return fields


_ADDED_FIELDS: Final[dict[str, Json]] = {"top_p": None, "output_cap": None, "reasoning_effort": "none"}
"""Fields of :class:`GenerationParams` newer than cache key version 3, with their defaults."""


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
    billed: bool = False
    """Requests cost money: ``--budget`` guards them at the run's prices and stops the run before it is
    spent. A provider that does not say so is free, and a budget then guards only its judges."""
    reasoning_switch: bool = True
    """Takes a reasoning effort (``GenerationParams.reasoning_effort``); without a switch, an effort other
    than ``none`` is refused when the spec is read."""


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
