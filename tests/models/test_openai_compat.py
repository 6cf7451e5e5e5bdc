"""The OpenAI-compatible provider through the real SDK, on httpx2's MockTransport: bodies, replies, errors."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Any

import httpx2
import openai
import pytest
from tests.fakes.openai_server import FakeOpenAIServer, Script, llamacpp_python_format

from rescue_bench.errors import ModerationRefusal, ProviderError, RetryableError
from rescue_bench.models import http_pool
from rescue_bench.models.base import Generation
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import PRESETS, get_preset, step_down_note
from rescue_bench.records import Reply, Request

KEY = "sk-test-key-0123456789"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}
REQUEST = Request(
    task="itp",
    messages=({"role": "user", "content": "Reply in JSON."},),
    response_schema=SCHEMA,
    instance_ids=("a",),
    max_tokens=321,
)
Handler = Callable[[httpx2.Request], httpx2.Response]


def completion(
    content: str | None = '{"answer": "yes"}', finish_reason: str = "stop", **message: Any
) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": 11,
            "completion_tokens": 7,
            "total_tokens": 18,
            "completion_tokens_details": {"reasoning_tokens": 5},
        },
    }


def provider(handler: Handler, preset: str = "openai", timeout: float = 5.0) -> OpenAICompatProvider:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return OpenAICompatProvider(
        "m",
        preset=get_preset(preset),
        base_url="https://api.example.org/v1",
        api_key=KEY,
        timeout=timeout,
        http_client=client,
    )


def call(p: OpenAICompatProvider, params: Generation | None = None) -> Any:
    return asyncio.run(p.complete(REQUEST, params or Generation()))


def capture(bodies: list[dict[str, Any]], answer: dict[str, Any] | None = None) -> Handler:
    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        assert request.headers["authorization"] == f"Bearer {KEY}"
        return httpx2.Response(200, json=answer or completion())

    return handler


def test_body_of_a_json_schema_request() -> None:
    bodies: list[dict[str, Any]] = []
    reply = call(provider(capture(bodies)), Generation(seed=7))
    (body,) = bodies
    assert body["model"] == "m" and body["temperature"] == 0.0 and body["seed"] == 7
    assert body["max_completion_tokens"] == 321 and "max_tokens" not in body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "itp_answer", "schema": SCHEMA, "strict": False},
    }
    assert body["messages"] == [{"role": "user", "content": "Reply in JSON."}]
    # What was sent is what a Batch API line carries.
    assert body == provider(capture([])).body(REQUEST, Generation(seed=7), "json_schema")
    assert reply.text == '{"answer": "yes"}' and reply.ok and reply.finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.reasoning_tokens) == (
        11,
        7,
        5,
    )


def test_reasoning_is_kept_apart() -> None:
    for field in ("reasoning_content", "reasoning"):
        reply = call(provider(capture([], completion('{"a": 1}', **{field: "Let me think."}))))
        assert reply.text == '{"a": 1}' and reply.reasoning == "Let me think."


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_disable_thinking_sends_the_presets_switch(name: str) -> None:
    bodies: list[dict[str, Any]] = []
    call(provider(capture(bodies), preset=name), Generation(disable_thinking=True))
    call(provider(capture(bodies), preset=name), Generation())
    switch = PRESETS[name].thinking_off or {}
    assert switch and all(bodies[0][k] == v for k, v in switch.items())
    assert not any(k in bodies[1] for k in switch)


def test_llamacpp_server_gets_the_schema_inside_json_object() -> None:
    bodies: list[dict[str, Any]] = []
    call(provider(capture(bodies), preset="llamacpp-server"))
    assert bodies[0]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert bodies[0]["max_tokens"] == 321


def test_text_format_sends_no_response_format() -> None:
    bodies: list[dict[str, Any]] = []
    call(provider(capture(bodies)), Generation(response_format="text"))
    assert "response_format" not in bodies[0]


def test_format_fallback_steps_down_and_is_remembered() -> None:
    seen: list[str | None] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        fmt = (json.loads(request.content).get("response_format") or {}).get("type")
        seen.append(fmt)
        if fmt is not None:
            return httpx2.Response(
                400, json={"error": {"message": f"response_format {fmt} is not supported"}}
            )
        return httpx2.Response(200, json=completion())

    p = provider(handler)
    assert call(p).ok and call(p).ok
    assert seen == ["json_schema", "json_object", None, None]
    assert p.format_ceiling == "text"


def test_llama_cpp_python_style_500_about_the_format_also_falls_back() -> None:
    seen: list[str | None] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        fmt = (json.loads(request.content).get("response_format") or {}).get("type")
        seen.append(fmt)
        if fmt == "json_schema":
            return httpx2.Response(
                500, json={"error": {"message": "Input should be 'text' or 'json_object'"}}
            )
        return httpx2.Response(200, json=completion())

    assert call(provider(handler)).ok
    assert seen == ["json_schema", "json_object"]


def respond(status: int, body: Any = None, headers: dict[str, str] | None = None) -> Handler:
    return lambda request: httpx2.Response(
        status, json=body if body is not None else {"error": {"message": "x"}}, headers=headers
    )


def test_retryable_statuses() -> None:
    with pytest.raises(RetryableError) as caught:
        call(provider(respond(429, headers={"retry-after": "7"})))
    assert caught.value.retry_after == 7.0
    for status in (408, 500, 502, 503, 529):
        with pytest.raises(RetryableError, match=f"HTTP {status}"):
            call(provider(respond(status)))


def test_transport_faults_are_retryable() -> None:
    def timeout(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("slow", request=request)

    def refused(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused", request=request)

    def truncated(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, content=b'{"id": "x", "choices": [{"mess', headers={"content-type": "application/json"}
        )

    with pytest.raises(RetryableError, match="timed out after 5 s"):
        call(provider(timeout))
    with pytest.raises(RetryableError, match="connection error"):
        call(provider(refused))
    with pytest.raises(RetryableError, match="unreadable response body"):
        call(provider(truncated))


def test_fatal_statuses_raise_without_the_key() -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
    with pytest.raises(ProviderError) as caught:
        call(provider(respond(401, echo)))
    assert (
        "HTTP 401" in str(caught.value)
        and KEY not in str(caught.value)
        and "(check the API key)" in str(caught.value)
        and "OPENAI_API_KEY" not in str(caught.value)  # the key did not come from there
    )
    with pytest.raises(ProviderError, match=r"HTTP 404.*check the model name"):
        call(provider(respond(404, {"error": {"message": "model not found"}})))


def test_other_4xx_is_a_failed_reply_not_a_retry() -> None:
    reply = call(provider(respond(400, {"error": {"message": "context length exceeded"}})))
    assert not reply.ok and "HTTP 400" in (reply.error or "") and "context length" in (reply.error or "")


def test_moderation_refusals() -> None:
    dashscope = {
        "error": {
            "code": "data_inspection_failed",
            "message": "Input data may contain inappropriate content.",
        }
    }
    with pytest.raises(ModerationRefusal):
        call(
            provider(
                respond(
                    400,
                    dashscope,
                )
            )
        )
    with pytest.raises(ModerationRefusal):
        call(provider(capture([], completion(None, finish_reason="content_filter"))))


def test_identity_has_no_secret() -> None:
    p = provider(capture([]))
    assert p.identity() == {"provider": "openai", "model": "m", "base_url": "https://api.example.org/v1"}
    assert KEY not in json.dumps(p.identity())


def loopback_provider(server: FakeOpenAIServer) -> OpenAICompatProvider:
    return OpenAICompatProvider("m", preset=get_preset("vllm"), base_url=server.base_url, api_key=KEY)


def numbered(n: int) -> Request:
    return Request(
        task="itp",
        messages=({"role": "user", "content": f"question {n} " + "x" * 3000},),
        response_schema=SCHEMA,
        instance_ids=(str(n),),
    )


def test_proxy_variables_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as closed:  # a loopback port nobody listens on: the proxy is down
        closed.bind(("127.0.0.1", 0))
        dead = closed.getsockname()[1]
    for var in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{dead}")
    with FakeOpenAIServer(lambda r: "{}") as server:
        p = loopback_provider(server)
        with pytest.raises(RetryableError, match="connection error"):
            asyncio.run(p.complete(numbered(0), Generation()))
        assert server.count == 0


def test_a_kept_alive_connection_the_server_closed_is_not_reused() -> None:
    answer = json.dumps(completion()).encode()

    async def serve_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(
            next(x for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")).split(b":")[1]
        )
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(answer) + answer)
        await writer.drain()
        writer.close()  # after the answer, without saying so: the client must notice before reusing it

    async def scenario() -> list[Reply]:
        server = await asyncio.start_server(serve_once, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        p = OpenAICompatProvider(
            "m", preset=get_preset("vllm"), base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY
        )
        first = await p.complete(REQUEST, Generation())
        await asyncio.sleep(0.05)
        second = await p.complete(REQUEST, Generation())
        await p.aclose()
        server.close()
        return [first, second]

    assert [r.text for r in asyncio.run(scenario())] == ['{"answer": "yes"}'] * 2


PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


@pytest.mark.parametrize("aiohttp", [True, False], ids=["aiohttp", "httpx2"])
def test_more_requests_in_flight_than_aiohttps_default_limit_all_go_out_at_once(
    monkeypatch: pytest.MonkeyPatch, aiohttp: bool
) -> None:
    """150 requests in flight: aiohttp's own limit (100) would hold 50 back; the pool is sized by the run, on
    either transport (httpx2's is the one without aiohttp installed, or behind a proxy)."""
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    assert http_pool.uses_aiohttp()
    monkeypatch.setattr(http_pool, "uses_aiohttp", lambda: aiohttp)
    n = 150

    async def scenario(p: OpenAICompatProvider) -> list[Reply]:
        try:
            asked = (p.complete(numbered(i), Generation()) for i in range(n))
            return list(await asyncio.gather(*asked))
        finally:
            await p.aclose()

    with FakeOpenAIServer(lambda r: '{"answer": "ok"}', latency=0.5) as server:
        p = OpenAICompatProvider(
            "m", preset=get_preset("vllm"), base_url=server.base_url, api_key=KEY, concurrency=n
        )
        replies = asyncio.run(scenario(p))
        assert server.max_in_flight == n
    assert all(r.ok for r in replies) and len(replies) == n


def test_the_aiohttp_transport_gives_way_to_the_httpx2_client_behind_a_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    assert http_pool.uses_aiohttp()
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert not http_pool.uses_aiohttp()
    assert not isinstance(http_pool.make_http_client(8), openai.DefaultAioHttpClient)


# --- the format the answers were asked in, and the model that answered (issue 39) -------------------------


async def ask(p: OpenAICompatProvider, n: int) -> list[Reply]:
    """``n`` requests one after the other on one event loop (the SDK client lives on it), then close."""
    try:
        return [await p.complete(REQUEST, Generation()) for _ in range(n)]
    finally:
        await p.aclose()


def test_a_step_down_is_said_once_and_each_reply_records_its_format(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING")
    with FakeOpenAIServer(llamacpp_python_format(lambda r: '{"answer": "yes"}')) as server:

        def on(preset: str) -> OpenAICompatProvider:
            return OpenAICompatProvider(
                "gemma", preset=get_preset(preset), base_url=server.base_url, api_key=KEY, timeout=5.0
            )

        replies = asyncio.run(ask(on("openai"), 3))
        [kept] = asyncio.run(ask(on("llamacpp-server"), 1))
    assert [r.response_format for r in replies] == ["json_object"] * 3
    assert kept.ok and kept.response_format == "json_object+schema"
    said = [r.getMessage() for r in caplog.records if "response_format" in r.getMessage()]
    assert len(said) == 1  # once, not once per request
    assert "refused response_format json_schema (HTTP 500: " in said[0]
    assert "Input should be 'text' or 'json_object'" in said[0]
    assert "asked in json_object from now on, without the answer's schema" in said[0]
    assert "llamacpp-server/" in said[0]
    assert KEY not in said[0]


def test_a_step_down_that_keeps_the_schema_says_so() -> None:
    note = step_down_note("llamacpp-server/g", "json_object", "HTTP 400", "text", PRESETS["llamacpp-server"])
    assert (
        "asked in text from now on, without the answer's schema" in note
        and "llamacpp-server/ with" not in note
    )
    kept = step_down_note("vllm/g", "json_schema", "HTTP 400", "json_object", PRESETS["llamacpp-server"])
    assert kept.endswith("with the answer's schema inside it")


def test_the_served_model_and_fingerprint_are_kept_and_a_change_is_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("WARNING")
    snapshots = iter(["gpt-4o-2024-08-06", "gpt-4o-2024-08-06", "gpt-4o-2024-11-20", "gpt-4o-2024-11-20"])

    def handler(request: Any) -> Script:
        return Script(content='{"answer": "yes"}', model=next(snapshots), system_fingerprint="fp_44709d6fcb")

    with FakeOpenAIServer(handler) as server:
        p = OpenAICompatProvider(
            "gpt-4o", preset=get_preset("openai"), base_url=server.base_url, api_key=KEY, timeout=5.0
        )
        replies = asyncio.run(ask(p, 4))
    assert [r.model for r in replies] == ["gpt-4o-2024-08-06"] * 2 + ["gpt-4o-2024-11-20"] * 2
    assert {r.system_fingerprint for r in replies} == {"fp_44709d6fcb"}
    said = [r.getMessage() for r in caplog.records if "changed within the run" in r.getMessage()]
    assert said == [
        "warning: openai/gpt-4o: the endpoint's model changed within the run, from gpt-4o-2024-08-06 to "
        "gpt-4o-2024-11-20; the run.json counts name the model of each reply"
    ]
