"""What the engine needs from a model: one kind of answerer, the :class:`Provider`.

A provider answers a rendered :class:`Request` with a :class:`Reply`: text that the task parses, or, for
the ``baseline/`` reference rows, predictions already in the task's shape (``Reply.predictions``).
OpenAI-compatible endpoints, the local llama.cpp model, ``replay/`` and the baselines are providers; what
each can do (be cached, take an endpoint, be exported for a Batch API, re-use a prompt prefix) is declared
in its :class:`Capabilities`.

Model names have the form ``provider/model`` and are parsed once by :func:`parse_model_name`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Final, Literal, Protocol, runtime_checkable

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
)

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


Finite = Annotated[float, Strict(), AllowInfNan(False)]
"""A number of a setting: an int or a float as typed (``"0.5"`` and ``true`` are refused, never coerced), and
finite (no ``inf`` or ``nan``)."""
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


class Generation(BaseModel):
    """How a model generates: the settings a provider receives with every request.

    Each field is one setting, declared once: the model's spec takes it (:class:`rescue_bench.spec.ModelSpec`
    inherits these fields), ``run`` has a flag for it (``--<field>``, from the field's name, type and
    description), and the response-cache key and ``run.json``'s config hold it when it is not at its
    default (:meth:`settings`). A provider names the settings it honours in its :class:`Capabilities`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

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
        "(see the rescue-bench docs, reasoning); none keeps the endpoint's default.",
    )
    extra_body: dict[str, JsonValue] = Field(
        default_factory=dict, description="Fields added to every request body as they are."
    )

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

    def cap(self, task_cap: int) -> int:
        """The output cap a request with the task's ``task_cap`` is sent with.

        >>> Generation().cap(1800), Generation(reasoning_effort="low").cap(1800)
        (1800, 5896)
        >>> Generation(reasoning_effort="high", max_tokens=4000).cap(1800)
        4000
        """
        if self.max_tokens is not None:
            return self.max_tokens
        return task_cap + REASONING_HEADROOM[self.reasoning_effort]

    def generation(self) -> Generation:
        """These settings alone (a model's spec, which adds its name and endpoint, gives its own)."""
        return Generation.model_validate({name: getattr(self, name) for name in Generation.model_fields})

    def settings(self) -> dict[str, Json]:
        """The settings not at their defaults, as JSON: what the cache key and ``run.json``'s config hold, so
        a setting added later leaves every key and config made without it as it was.

        >>> Generation().settings(), Generation(top_p=0.9, seed=3).settings()
        ({}, {'seed': 3, 'top_p': 0.9})
        """
        fields = set(Generation.model_fields)
        dumped: dict[str, Json] = self.model_dump(mode="json", exclude_defaults=True, include=fields)
        return dumped

    def given(self) -> frozenset[str]:
        """The names of the settings not at their defaults.

        >>> sorted(Generation(temperature=0.5, extra_body={"top_k": 2}).given())
        ['extra_body', 'temperature']
        """
        return frozenset(self.settings())


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
    settings: frozenset[str] = frozenset(Generation.model_fields)
    """The :class:`Generation` settings the provider honours; one it does not, given, is refused before
    anything is sent (:func:`check_settings`)."""


def check_settings(provider: Provider, generation: Generation) -> None:
    """Refuse settings the provider would ignore: a run must not record a setting that was never applied.

    Raises:
        ConfigError: naming the first such setting, the provider, and what to do.
    """
    ignored = sorted(generation.given() - provider.capabilities.settings)
    if ignored:
        raise ConfigError(
            f"{provider.name} does not honour {ignored[0]} (set to {generation.settings()[ignored[0]]!r}): "
            f"leave it at its default for this model, or use a provider that takes it"
        )


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

    async def complete(self, request: Request, params: Generation) -> Reply:
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
