"""execute_requests: the engine entry point that judge and annotation layers reuse."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.engine.conftest import provider_on
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, server_error

from rescue_bench.engine.execute import EngineOptions, execute_requests
from rescue_bench.models.base import Generation
from rescue_bench.records import Request
from rescue_bench.rundir.cache import ResponseCache


def request(text: str) -> Request:
    return Request(
        task="judge",
        messages=({"role": "user", "content": text},),
        response_schema={},
        instance_ids=(text,),
        max_tokens=50,
    )


def test_replies_come_back_in_order_with_failures_in_place(tmp_path: Path) -> None:
    def handler(req: ChatRequest) -> object:
        return server_error() if "broken" in req.text else f'{{"echo": "{req.text}"}}'

    texts = [f"item {i}" for i in range(20)] + ["broken one"]
    options = EngineOptions(concurrency=4, adaptive=False, max_retries=1, retry_base=0.01, retry_cap=0.02)
    with FakeOpenAIServer(handler, latency=0.02) as server, ResponseCache(tmp_path / "c.sqlite3") as cache:
        provider = provider_on(server)
        replies = asyncio.run(
            execute_requests(
                [request(t) for t in texts], provider, Generation(), engine_options=options, cache=cache
            )
        )
        assert [r.text for r in replies[:20]] == [f'{{"echo": "{t}"}}' for t in texts[:20]]
        assert not replies[20].ok and replies[20].attempts == 2 and "HTTP 500" in (replies[20].error or "")
        assert server.max_in_flight <= 4
        again = asyncio.run(
            execute_requests(
                [request(t) for t in texts[:20]],
                provider_on(server),
                Generation(),
                engine_options=options,
                cache=cache,
            )
        )
        assert all(r.cached for r in again) and server.count == 20 + 2
