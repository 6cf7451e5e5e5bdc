"""Reasoning effort and the other generation settings: what each preset's request body gets, the output cap,
and that every setting at its default leaves bodies and cache keys as they were before they existed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest
from tests.fakes.openai_server import FakeOpenAIServer

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Generation, ReasoningEffort
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import PRESETS, get_preset
from rescue_bench.records import Request
from rescue_bench.spec import JudgeSpec, ModelSpec, validate_spec

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}
REQUEST = Request(
    task="itp",
    messages=({"role": "user", "content": "Reply in JSON."},),
    response_schema=SCHEMA,
    instance_ids=("a",),
    max_tokens=321,
)
ANSWER = {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]}
_FORMAT = (
    '"response_format":{"type":"json_schema","json_schema":{"name":"itp_answer","schema":{"type":"object",'
    '"properties":{"answer":{"type":"string"}}},"strict":false}}'
)
_HEAD = '{"model":"m","messages":[{"role":"user","content":"Reply in JSON."}],'
# The raw bytes that the code before these settings (main at 3af0954) sent for REQUEST, captured on a mock
# transport: the same settings must still send exactly these (key order included: a Batch API line's body).
BEFORE = [
    ("openai", Generation(), _HEAD + f'"max_completion_tokens":321,{_FORMAT},"temperature":0.0}}'),
    (
        "dashscope",
        Generation(disable_thinking=True, seed=7),
        _HEAD + f'"max_tokens":321,{_FORMAT},"seed":7,"temperature":0.0,"enable_thinking":false}}',
    ),
    (
        "vllm",
        Generation(temperature=0.3, response_format="json_object"),
        _HEAD + '"max_tokens":321,"response_format":{"type":"json_object"},"temperature":0.3}',
    ),
    (
        "deepseek",
        Generation(),
        _HEAD + '"max_tokens":321,"response_format":{"type":"json_object"},"temperature":0.0}',
    ),
]


def raw_body(preset: str, params: Generation) -> str:
    """The bytes the provider sends for REQUEST, through the real SDK on a mock transport."""
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.content.decode())
        return httpx2.Response(200, json=ANSWER)

    provider = OpenAICompatProvider(
        "m",
        preset=get_preset(preset),
        base_url="https://api.example.org/v1",
        api_key="sk-x",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )
    asyncio.run(provider.complete(REQUEST, params))
    return seen[0]


@pytest.mark.parametrize(("preset", "params", "before"), BEFORE)
def test_default_settings_send_the_bytes_sent_before(preset: str, params: Generation, before: str) -> None:
    assert raw_body(preset, params) == before


def test_the_spec_defaults_are_the_settings_defaults() -> None:
    """A model and a judge named alone generate with every setting at its default."""
    assert ModelSpec(name="openai/m").generation() == Generation()
    assert JudgeSpec(name="openai/m").generation() == Generation()
    assert type(ModelSpec(name="openai/m").generation()) is Generation  # its name and endpoint left out


# What docs/reasoning.md promises each preset gets, written out by hand.
EXPECTED: dict[str, dict[ReasoningEffort, dict[str, Any]]] = {
    "openai": {
        "minimal": {"reasoning_effort": "minimal"},
        "medium": {"reasoning_effort": "medium"},
        "max": {"reasoning_effort": "high"},
    },
    "openrouter": {"minimal": {"reasoning": {"effort": "minimal"}}, "max": {"reasoning": {"effort": "high"}}},
    "together": {
        "minimal": {"reasoning": {"enabled": True}, "reasoning_effort": "low"},
        "high": {"reasoning": {"enabled": True}, "reasoning_effort": "high"},
    },
    "dashscope": {
        "low": {"enable_thinking": True, "thinking_budget": 4096},
        "max": {"enable_thinking": True, "thinking_budget": 32768},
    },
    "deepseek": {"low": {"thinking": {"type": "enabled"}}, "max": {"thinking": {"type": "enabled"}}},
    "vllm": {
        "medium": {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "medium"},
        "minimal": {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "low"},
    },
    "ollama": {"minimal": {"reasoning_effort": "low"}, "max": {"reasoning_effort": "high"}},
    "llamacpp-server": {"high": {"chat_template_kwargs": {"enable_thinking": True}}},
}
HEADROOM = {"minimal": 1024, "low": 4096, "medium": 8192, "high": 16384, "max": 32768}
NEW_KEYS = {"reasoning_effort", "reasoning", "enable_thinking", "thinking_budget", "thinking"}
NEW_KEYS |= {"chat_template_kwargs", "top_p"}


def test_every_preset_has_an_expected_row() -> None:
    assert set(EXPECTED) == set(PRESETS)


@pytest.mark.parametrize("preset", list(EXPECTED))
def test_reasoning_fields_reach_the_server_as_each_preset_expects(preset: str) -> None:
    with FakeOpenAIServer(lambda _: '{"answer": "x"}') as server:
        provider = OpenAICompatProvider(
            "m", preset=get_preset(preset), base_url=server.base_url, api_key="sk-test"
        )

        async def ask_all() -> None:
            await provider.complete(REQUEST, Generation())
            for effort in EXPECTED[preset]:
                await provider.complete(REQUEST, Generation(reasoning_effort=effort))
            await provider.aclose()

        asyncio.run(ask_all())
        bodies = [r.body for r in server.requests]
    token_field = get_preset(preset).token_field
    plain = bodies[0]
    assert not NEW_KEYS & set(plain) and plain[token_field] == 321
    for body, (effort, fields) in zip(bodies[1:], EXPECTED[preset].items(), strict=True):
        assert {k: body[k] for k in fields} == fields, effort
        assert set(body) - set(plain) == set(fields)  # nothing else new (OpenAI: temperature goes)
        assert body[token_field] == 321 + HEADROOM[effort]


def test_openai_reasoning_leaves_out_sampling_others_keep_it() -> None:
    reasoning = Generation(reasoning_effort="high", top_p=0.5, temperature=0.0)
    openai_body = json.loads(raw_body("openai", reasoning))
    assert "temperature" not in openai_body and "top_p" not in openai_body
    vllm_body = json.loads(raw_body("vllm", reasoning))
    assert vllm_body["temperature"] == 0.0 and vllm_body["top_p"] == 0.5


def test_max_tokens_replaces_the_cap_and_extra_body_wins() -> None:
    params = Generation(
        reasoning_effort="low",
        max_tokens=777,
        extra_body={"thinking_budget": 100, "top_k": 20, "chat_template_kwargs": {"x": 1}},
    )
    body = json.loads(raw_body("dashscope", params))
    assert body["max_tokens"] == 777
    assert body["thinking_budget"] == 100 and body["top_k"] == 20 and body["enable_thinking"] is True
    assert json.loads(raw_body("openai", Generation(max_tokens=50)))["max_completion_tokens"] == 50


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ({"name": "local/gemma-3-270m", "reasoning_effort": "low"}, "local/ models have no reasoning switch"),
        ({"name": "baseline/random", "reasoning_effort": "max"}, "baseline/ models have no reasoning"),
        ({"name": "vllm/q", "reasoning_effort": "low", "disable_thinking": True}, "contradicts disable"),
        ({"name": "openai/o3", "reasoning_effort": "low", "temperature": 0.5}, "take no temperature"),
        ({"name": "openai/o3", "reasoning_effort": "low", "top_p": 0.9}, "take no temperature or top_p"),
        ({"name": "openai/o3", "reasoning_effort": "extreme"}, "reasoning_effort"),
    ],
)
def test_impossible_reasoning_settings_are_one_line_errors(model: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        validate_spec({"model": model, "tasks": ["itp"]}, where="s.toml")
    text = str(caught.value)
    assert message in text and "\n" not in text and "model" in text


def test_possible_reasoning_settings_pass() -> None:
    spec = validate_spec({"model": {"name": "openai/o3", "reasoning_effort": "max"}})
    assert spec.generation().reasoning_effort == "max"
    sampled = validate_spec({"model": {"name": "vllm/q", "reasoning_effort": "low", "temperature": 0.6}})
    assert sampled.generation().temperature == 0.6
