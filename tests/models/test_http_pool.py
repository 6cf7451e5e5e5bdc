"""The request path's seam (``models.http_pool``): the JSON body posted with ``AsyncOpenAI.post`` reaches the
server exactly as the typed ``chat.completions.create`` sends it, for every task's requests and every preset
field, with the same authentication."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, schema_answer

from rescue_bench.data.load import load_samples
from rescue_bench.engine.plans import build_plans, select_samples
from rescue_bench.models import http_pool
from rescue_bench.models.base import GenerationParams
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import get_preset
from rescue_bench.records import Request
from rescue_bench.spec import RunSpec

KEY = "sk-seam-0123456789abcdef"
PARAMS = (
    GenerationParams(),
    GenerationParams(temperature=0.7, top_p=0.9, seed=3, extra={"repetition_penalty": 1.1}),
    GenerationParams(reasoning_effort="low", disable_thinking=True),
)


def task_requests() -> list[Request]:
    """The first request of every task on the demo data."""
    config = RunSpec(model="vllm/m", data="demo", limit_samples=1)
    plans = build_plans(select_samples(load_samples("demo"), config), config)
    return [plan.task.render(plan.batches[0], plan.cfg) for plan in plans]


def sent(
    monkeypatch: pytest.MonkeyPatch, plain: bool, preset: str, requests: Sequence[Request]
) -> list[tuple[dict[str, Any], str]]:
    """The bodies and Authorization headers the server received for ``requests`` under each parameter set."""
    monkeypatch.setenv(http_pool.PLAIN_HTTP_ENV, "1" if plain else "0")
    assert http_pool.posts_json_body() is not plain

    async def ask(provider: OpenAICompatProvider) -> None:
        try:
            for params in PARAMS:
                for request in requests:
                    assert (await provider.complete(request, params)).ok
        finally:
            await provider.aclose()

    with FakeOpenAIServer(schema_answer) as server:
        provider = OpenAICompatProvider("m", preset=get_preset(preset), base_url=server.base_url, api_key=KEY)
        asyncio.run(ask(provider))
        return [(r.body, r.headers.get("authorization", "")) for r in server.requests]


@pytest.mark.parametrize("preset", ["vllm", "openai", "dashscope", "ollama"])
def test_the_posted_body_is_the_typed_calls_body(monkeypatch: pytest.MonkeyPatch, preset: str) -> None:
    requests = task_requests()
    assert len(requests) == 6
    posted = sent(monkeypatch, False, preset, requests)
    typed = sent(monkeypatch, True, preset, requests)
    assert len(posted) == len(typed) == len(PARAMS) * len(requests)
    assert posted == typed
    assert {auth for _, auth in posted} == {f"Bearer {KEY}"}
