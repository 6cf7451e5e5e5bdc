"""The request path (``models.http_pool``): every task's request reaches the server as the provider's JSON
body (the one a Batch API line carries), with the client's key as a bearer token, whatever the settings."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import openai
import pytest
from tests.fakes.openai_server import FakeOpenAIServer, schema_answer

from rescue_bench.data.load import load_samples
from rescue_bench.engine.plans import build_plans, select_samples
from rescue_bench.models import http_pool
from rescue_bench.models.base import Generation
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import get_preset
from rescue_bench.records import Request
from rescue_bench.spec import RunSpec

KEY = "sk-seam-0123456789abcdef"
PARAMS = (
    Generation(),
    Generation(temperature=0.7, top_p=0.9, seed=3, extra_body={"repetition_penalty": 1.1}),
    Generation(reasoning_effort="low", disable_thinking=True),
)


def task_requests() -> list[Request]:
    """The first request of every task on the demo data."""
    config = RunSpec(model="vllm/m", data="demo", limit_samples=1)
    plans = build_plans(select_samples(load_samples("demo"), config), config)
    return [plan.task.render(plan.batches[0], plan.cfg) for plan in plans]


@pytest.mark.parametrize("preset", ["vllm", "openai", "dashscope", "ollama"])
def test_the_server_receives_the_providers_body(preset: str) -> None:
    requests = task_requests()
    assert len(requests) == 6

    async def ask(provider: OpenAICompatProvider) -> list[dict[str, Any]]:
        expected = []
        try:
            for params in PARAMS:
                for request in requests:
                    expected.append(provider.body(request, params, provider.effective_format(params)))
                    assert (await provider.complete(request, params)).ok
        finally:
            await provider.aclose()
        return expected

    with FakeOpenAIServer(schema_answer) as server:
        provider = OpenAICompatProvider("m", preset=get_preset(preset), base_url=server.base_url, api_key=KEY)
        expected = asyncio.run(ask(provider))
        received = [(r.body, r.headers.get("authorization", "")) for r in server.requests]
    assert [body for body, _ in received] == expected
    assert {auth for _, auth in received} == {f"Bearer {KEY}"}


def test_the_pool_keeps_the_runs_requests_in_flight_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    """aiohttp's own limit (100) rises to the concurrency; httpx2's client keeps that many alive too."""
    monkeypatch.setattr(http_pool, "uses_aiohttp", lambda: True)
    assert isinstance(http_pool.make_http_client(8), openai.DefaultAioHttpClient)
    monkeypatch.setattr(http_pool, "uses_aiohttp", lambda: False)
    client = http_pool.make_http_client(8)
    assert isinstance(client, httpx2.AsyncClient) and not isinstance(client, openai.DefaultAioHttpClient)
