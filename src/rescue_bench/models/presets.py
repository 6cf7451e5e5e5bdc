"""OpenAI-compatible services by name: base URL, key variables, structured-output support, thinking switch.

``openai/<model>`` with ``--base-url`` reaches any compatible endpoint; the presets only save typing and know
each service's quirks. ``--base-url`` and ``--api-key-env`` override any preset. Each preset is one
:class:`Preset` record in :data:`PRESETS`; the tables of docs/reasoning.md (endpoints, keys, formats, what
``--disable-thinking`` and each ``reasoning_effort`` send) are generated from them
(:mod:`rescue_bench.models.preset_docs`).

When an endpoint rejects the format it is offered, the provider steps down (json_schema, json_object, text)
and remembers that for the endpoint.

``reasoning_effort`` (none, minimal, low, medium, high, max) is sent as each service takes it
(:func:`reasoning_fields`); ``none`` sends nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import REASONING_HEADROOM, ReasoningEffort, ResponseFormat
from rescue_bench.models.factories import find_other
from rescue_bench.records import Json, Request
from rescue_bench.redaction import public_url

TokenField = Literal["max_tokens", "max_completion_tokens"]
ReasoningStyle = Literal[
    "openai", "effort", "openrouter", "together", "dashscope", "deepseek", "vllm", "template"
]
"""How a service takes a reasoning effort (:func:`reasoning_fields`)."""
FORMAT_LADDER: tuple[ResponseFormat, ...] = ("json_schema", "json_object", "text")
"""Response formats from richest to plainest: an endpoint that rejects one is offered the next."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """One OpenAI-compatible service, constructed by keyword."""

    name: str
    """The model-name prefix (``name/<model>``)."""
    base_url: str
    key_envs: tuple[str, ...]
    """Variables that may hold the key, first found wins."""
    base_url_envs: tuple[str, ...]
    """Variables that may hold another base URL."""
    key_required: bool
    """The default endpoint refuses requests without a key (a local server takes any)."""
    best_format: ResponseFormat
    json_object_schema: bool = False
    """Send the schema inside ``json_object`` (llama.cpp makes it a grammar); others reject the field."""
    thinking_off: dict[str, Json] | None
    """What ``--disable-thinking`` adds to the body."""
    token_field: TokenField = "max_tokens"
    reasoning: ReasoningStyle
    """How the service takes a reasoning effort (:func:`reasoning_fields`)."""


_LOCAL_KEY = "sk-no-key-required"
"""Sent to local servers without a key: the SDK insists on a non-empty one, the servers ignore it."""

_THINK_TEMPLATE: dict[str, Json] = {"chat_template_kwargs": {"enable_thinking": False}}
_ALL: tuple[Preset, ...] = (
    Preset(
        name="openai",
        base_url="https://api.openai.com/v1",
        key_envs=("OPENAI_API_KEY",),
        base_url_envs=("OPENAI_BASE_URL", "OPENAI_API_BASE"),
        key_required=True,
        best_format="json_schema",
        thinking_off={"reasoning_effort": "none"},
        token_field="max_completion_tokens",
        reasoning="openai",
    ),
    Preset(
        name="deepseek",
        base_url="https://api.deepseek.com/v1",
        key_envs=("DEEPSEEK_API_KEY",),
        base_url_envs=("DEEPSEEK_BASE_URL",),
        key_required=True,
        best_format="json_object",
        thinking_off={"thinking": {"type": "disabled"}},
        reasoning="deepseek",
    ),
    Preset(
        name="dashscope",
        base_url="https://dashscope.aliyuncs.com/compatible-mode/v1",
        key_envs=("DASHSCOPE_API_KEY", "BAILIAN_API_KEY"),
        base_url_envs=("DASHSCOPE_API_BASE", "BAILIAN_API_BASE"),
        key_required=True,
        best_format="json_schema",
        thinking_off={"enable_thinking": False},
        reasoning="dashscope",
    ),
    Preset(
        name="openrouter",
        base_url="https://openrouter.ai/api/v1",
        key_envs=("OPENROUTER_API_KEY",),
        base_url_envs=("OPENROUTER_BASE_URL",),
        key_required=True,
        best_format="json_schema",
        thinking_off={"reasoning": {"enabled": False}},
        reasoning="openrouter",
    ),
    Preset(
        name="together",
        base_url="https://api.together.xyz/v1",
        key_envs=("TOGETHER_API_KEY",),
        base_url_envs=("TOGETHER_BASE_URL",),
        key_required=True,
        best_format="json_schema",
        thinking_off={"reasoning": {"enabled": False}},
        reasoning="together",
    ),
    Preset(
        name="vllm",
        base_url="http://localhost:8000/v1",
        key_envs=("VLLM_API_KEY",),
        base_url_envs=("VLLM_BASE_URL",),
        key_required=False,
        best_format="json_schema",
        thinking_off=_THINK_TEMPLATE,
        reasoning="vllm",
    ),
    Preset(
        name="ollama",
        base_url="http://localhost:11434/v1",
        key_envs=("OLLAMA_API_KEY",),
        base_url_envs=("OLLAMA_BASE_URL",),
        key_required=False,
        best_format="json_schema",
        thinking_off={"reasoning_effort": "none"},
        reasoning="effort",
    ),
    Preset(
        name="llamacpp-server",
        base_url="http://localhost:8080/v1",
        key_envs=("LLAMACPP_API_KEY",),
        base_url_envs=("LLAMACPP_BASE_URL",),
        key_required=False,
        best_format="json_object",
        json_object_schema=True,
        thinking_off=_THINK_TEMPLATE,
        reasoning="template",
    ),
)

PRESETS: Mapping[str, Preset] = MappingProxyType({preset.name: preset for preset in _ALL})
"""Preset name -> :class:`Preset`, in the order the docs list them."""
LOCAL_PLACEHOLDER_KEY = _LOCAL_KEY


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(
            f"unknown provider {name!r}; OpenAI-compatible presets: {', '.join(PRESETS)}"
        ) from None


def normalize_base_url(url: str) -> str:
    """Strip a trailing slash; a bare ``host[:port]`` gets ``/v1`` (the path every compatible server uses).

    >>> normalize_base_url("http://127.0.0.1:8000"), normalize_base_url("https://x.org/api/v1/")
    ('http://127.0.0.1:8000/v1', 'https://x.org/api/v1')
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--base-url {public_url(url)!r} is not an http(s) URL")
    if parts.username is not None or parts.password is not None:
        # The HTTP client cannot send them (every request would fail), and the URL is recorded.
        raise ConfigError(
            "--base-url holds credentials (user:password@), which are never sent; put the key in a variable "
            "and name it with --api-key-env"
        )
    try:
        parts.port  # noqa: B018 -- a port that is not a number raises here, not in every request
    except ValueError:
        raise ConfigError(f"--base-url {public_url(url)!r}: the port is not a number") from None
    path = parts.path.rstrip("/") or "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def lower_format(a: ResponseFormat, b: ResponseFormat) -> ResponseFormat:
    """The poorer of two formats.

    >>> lower_format("json_schema", "json_object"), lower_format("text", "json_schema")
    ('json_object', 'text')
    """
    return FORMAT_LADDER[max(FORMAT_LADDER.index(a), FORMAT_LADDER.index(b))]


def format_label(fmt: ResponseFormat, preset: Preset) -> str:
    """How a request of ``fmt`` is asked on ``preset``, as recorded: ``json_object+schema`` when the schema
    goes inside ``json_object`` (llama.cpp makes it a grammar).

    >>> llama, vllm = PRESETS["llamacpp-server"], PRESETS["vllm"]
    >>> format_label("json_object", llama), format_label("json_object", vllm)
    ('json_object+schema', 'json_object')
    """
    return "json_object+schema" if fmt == "json_object" and preset.json_object_schema else fmt


def keeps_schema(label: str) -> bool:
    """Whether answers asked as ``label`` (:func:`format_label`) are held to the answer's schema.

    >>> keeps_schema("json_object+schema"), keeps_schema("json_object"), keeps_schema("text")
    (True, False, False)
    """
    return label in ("json_schema", "json_object+schema")


SCHEMA_KEEPER = (
    "for a llama.cpp server (llama-server or llama-cpp-python), --model llamacpp-server/<model> with the "
    "same --base-url sends the schema inside json_object, which the server turns into a grammar"
)
"""The preset that keeps the schema where a plain ``json_object`` drops it (docs/serving.md)."""


def step_down_note(name: str, refused: ResponseFormat, why: str, now: ResponseFormat, preset: Preset) -> str:
    """The one warning of a step-down: what was refused, what is sent now, whether the schema still goes.

    >>> note = step_down_note("openai/g", "json_schema", "HTTP 500", "json_object", PRESETS["openai"])
    >>> print(note[:98])
    openai/g refused response_format json_schema (HTTP 500); the answers are asked in json_object from
    """
    label = format_label(now, preset)
    head = f"{name} refused response_format {refused} ({why}); the answers are asked in {now} from now on"
    if keeps_schema(label):
        return f"{head}, with the answer's schema inside it"
    lost = ", without the answer's schema (the model sees it only in the prompt, so more answers may fail)"
    return head + lost + ("" if preset.json_object_schema else f"; {SCHEMA_KEEPER}")


def response_format_field(fmt: ResponseFormat, request: Request, preset: Preset) -> dict[str, Json] | None:
    if fmt == "text":
        return None
    if fmt == "json_object":
        out: dict[str, Json] = {"type": "json_object"}
        if preset.json_object_schema and request.response_schema:
            out["schema"] = request.response_schema
        return out
    name = f"{request.task or 'answer'}_answer"
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": request.response_schema, "strict": False},
    }


_EFFORT_LEVELS: dict[ReasoningEffort, str] = {
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "max": "high",
}
"""OpenAI's ``reasoning_effort`` values (o-series and gpt-5): ``max`` is its highest, ``high``."""
_THREE_LEVELS: dict[ReasoningEffort, str] = {**_EFFORT_LEVELS, "minimal": "low"}
"""Services whose effort has only low, medium and high."""


def reasoning_fields(preset: Preset, effort: ReasoningEffort) -> dict[str, Json]:
    """What the request body gets for ``effort`` on ``preset`` (nothing for ``none``).

    >>> reasoning_fields(PRESETS["openrouter"], "max"), reasoning_fields(PRESETS["openai"], "none")
    ({'reasoning': {'effort': 'high'}}, {})
    >>> reasoning_fields(PRESETS["dashscope"], "low")
    {'enable_thinking': True, 'thinking_budget': 4096}
    """
    if effort == "none":
        return {}
    style = preset.reasoning
    if style == "openai":
        return {"reasoning_effort": _EFFORT_LEVELS[effort]}
    if style == "effort":
        return {"reasoning_effort": _THREE_LEVELS[effort]}
    if style == "openrouter":
        return {"reasoning": {"effort": _EFFORT_LEVELS[effort]}}
    if style == "together":
        return {"reasoning": {"enabled": True}, "reasoning_effort": _THREE_LEVELS[effort]}
    if style == "dashscope":
        return {"enable_thinking": True, "thinking_budget": REASONING_HEADROOM[effort]}
    if style == "deepseek":
        return {"thinking": {"type": "enabled"}}
    thinking: dict[str, Json] = {"chat_template_kwargs": {"enable_thinking": True}}
    return thinking if style == "template" else {**thinking, "reasoning_effort": _THREE_LEVELS[effort]}


def sends_sampling(preset: Preset, effort: ReasoningEffort) -> bool:
    """Whether ``temperature`` and ``top_p`` go with the request: OpenAI's reasoning models refuse any but
    their defaults, so with reasoning on they are left out there.

    >>> sends_sampling(PRESETS["openai"], "low"), sends_sampling(PRESETS["openai"], "none")
    (False, True)
    """
    return effort == "none" or preset.reasoning != "openai"


def reasoning_problem(
    provider: str, effort: ReasoningEffort, *, disable_thinking: bool = False, sampled: bool = False
) -> str | None:
    """Why ``effort`` cannot be asked of a model of ``provider`` (``None``: it can, or the provider is not
    known). A provider that is not a preset declares whether it takes a reasoning effort (``reasoning_effort``
    in its ``Capabilities.settings``); a plugin's that does gets the effort in its :class:`Generation`.
    ``sampled``: a temperature above 0 or a ``top_p`` is set, which OpenAI's reasoning models would not take.

    >>> reasoning_problem("local", "low")
    'local/ models have no reasoning switch; use none'
    >>> reasoning_problem("openai", "high", sampled=True) is None
    False
    >>> reasoning_problem("vllm", "high", sampled=True) is None
    True
    """
    if effort == "none":
        return None
    if disable_thinking:
        return "contradicts `disable_thinking` (give one of them)"
    preset = PRESETS.get(provider)
    if preset is None:
        other = find_other(provider)
        switch = other is None or "reasoning_effort" in other.capabilities.settings
        return None if switch else f"{provider}/ models have no reasoning switch; use none"
    if sampled and not sends_sampling(preset, effort):
        return f"{provider}/ reasoning models take no temperature or top_p (docs/reasoning.md)"
    return None
