"""A reasoning run's budget guard reserves the output cap the request is sent with (the task's cap plus the
effort's headroom), so a reasoning model cannot spend past ``--budget`` by thinking."""

from __future__ import annotations

import asyncio

import pytest
from tests.fakes.openai_server import FakeOpenAIServer

from rescue_bench.engine.execute import Engine, EngineOptions
from rescue_bench.models.base import REASONING_HEADROOM, Generation
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import get_preset
from rescue_bench.records import Request, Usage

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


class RecordingGuard:
    def __init__(self) -> None:
        self.caps: list[int | None] = []

    def reserve(self, request: Request, output_cap: int | None = None) -> float:
        self.caps.append(output_cap)
        return 0.0

    def settle(self, reserved: float, usage: Usage) -> None:
        return None


@pytest.mark.parametrize("effort", ["none", "low", "high"])
def test_the_reservation_covers_the_reasoning_headroom(effort: str) -> None:
    guard = RecordingGuard()
    request = Request("t", ({"role": "user", "content": "hi"},), SCHEMA, ("i0",), max_tokens=100)

    async def ask(base_url: str) -> None:
        provider = OpenAICompatProvider("m", preset=get_preset("vllm"), base_url=base_url, api_key="sk-x")
        params = Generation(reasoning_effort=effort)  # type: ignore[arg-type]
        engine = Engine(provider, params, EngineOptions(use_cache=False), budget=guard)
        await engine.ask(request)
        await provider.aclose()

    with FakeOpenAIServer() as server:
        asyncio.run(ask(server.base_url))
    assert guard.caps == [100 + REASONING_HEADROOM[effort]]
