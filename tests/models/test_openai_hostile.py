"""Hostile servers on loopback (issue 13): a reply that drips, one of megabytes, a gateway echoing the key.

Real HTTP through the fake server of ``tests/fakes/openai_server.py``, the SDK and httpx2's own transport.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, drip, echo_key, huge, truncated_stream, unauthorized

from rescue_bench.errors import ProviderError, RetryableError
from rescue_bench.models import http_pool
from rescue_bench.models.base import Generation
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import PRESETS, get_preset
from rescue_bench.models.registry import get_model
from rescue_bench.records import Reply, Request

KEY = "sk-hostile-0123456789abcdef"
REQUEST = Request(
    task="itp",
    messages=({"role": "user", "content": "Reply in JSON."},),
    response_schema={"type": "object"},
    instance_ids=("a",),
    max_tokens=50,
)
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


@pytest.fixture(autouse=True, params=["aiohttp", "httpx2"])
def _no_proxy_no_keys(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every test on both transports of ``models.http_pool`` (httpx2's without aiohttp, or behind a proxy)."""
    monkeypatch.setattr(http_pool, "uses_aiohttp", lambda: request.param == "aiohttp")
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    for preset in PRESETS.values():
        for var in (*preset.key_envs, *preset.base_url_envs):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray ./.env


def ask(provider: OpenAICompatProvider) -> Reply:
    async def once() -> Reply:
        try:
            return await provider.complete(REQUEST, Generation())
        finally:
            await provider.aclose()

    return asyncio.run(once())


def on(server: FakeOpenAIServer, *, timeout: float = 10.0, **cap: int) -> OpenAICompatProvider:
    """A provider for ``server``; ``cap`` may set ``max_reply_bytes`` (left out, the default applies)."""
    return OpenAICompatProvider(
        "m", preset=get_preset("vllm"), base_url=server.base_url, api_key=KEY, timeout=timeout, **cap
    )


@pytest.mark.slow  # waits out a real 1.5 s timeout
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_dripping_reply_is_cut_by_the_timeout(chunked: bool) -> None:
    # 230-odd bytes at one every 0.2 s would take about 45 s; each read alone is far quicker than the timeout.
    with FakeOpenAIServer(lambda r: drip(0.2, chunked=chunked)) as server:
        started = time.perf_counter()
        with pytest.raises(RetryableError, match=r"timed out after 1\.5 s"):
            ask(on(server, timeout=1.5))
        elapsed = time.perf_counter() - started
    assert 1.4 < elapsed < 4.0


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_reply_of_megabytes_is_a_failure_not_stored(chunked: bool) -> None:
    with FakeOpenAIServer(lambda r: huge(6, chunked=chunked)) as server:
        reply = ask(on(server))
    assert not reply.ok and reply.text == ""
    assert (reply.error or "").startswith("vllm/m: reply of ")  # the provider's name, then the size
    assert "exceeds max_reply_bytes=4,194,304" in (reply.error or "")


def test_the_reply_cap_is_configurable() -> None:
    with FakeOpenAIServer(lambda r: huge(0.5)) as server:
        assert ask(on(server)).ok
        reply = ask(on(server, max_reply_bytes=100_000))
    assert not reply.ok and "max_reply_bytes=100,000" in (reply.error or "")


def test_an_echoed_key_is_redacted_from_answer_and_reasoning() -> None:
    with FakeOpenAIServer(echo_key) as server:
        reply = ask(on(server))
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # the key was sent
    assert KEY not in reply.text and KEY not in (reply.reasoning or "")
    assert json.loads(reply.text) == {"answer": "your key is [redacted]"}
    assert reply.reasoning == "Key [redacted] seen."


def test_the_401_hint_names_the_variable_the_key_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_GATEWAY_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-this-one-0000")
    with FakeOpenAIServer(lambda r: unauthorized(), require_key="sk-something-else") as server:
        provider = get_model("openai/gpt-x", base_url=server.base_url, api_key_env="MY_GATEWAY_KEY")
        assert isinstance(provider, OpenAICompatProvider)
        with pytest.raises(ProviderError) as caught:
            ask(provider)
        message = str(caught.value)
        assert "HTTP 401" in message and "check the key in MY_GATEWAY_KEY" in message
        assert "OPENAI_API_KEY" not in message and KEY not in message

        provider = get_model("openai/gpt-x", base_url=server.base_url)
        assert isinstance(provider, OpenAICompatProvider)
        with pytest.raises(ProviderError, match=r"check the key in OPENAI_API_KEY\)"):
            ask(provider)


def test_a_body_cut_short_on_the_wire_is_retryable() -> None:
    with (
        FakeOpenAIServer(lambda r: truncated_stream('{"answer": "yes"}')) as server,
        pytest.raises(RetryableError, match="connection error"),
    ):
        ask(on(server))
