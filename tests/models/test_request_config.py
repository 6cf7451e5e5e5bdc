"""A request that cannot be built (a key no header can carry, credentials or a bad port in the URL, a body
that is not JSON) is a configuration error, said in one line before anything is sent or written: never
retried as an "unreadable response body", never a run that ends with every instance failed."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import FakeOpenAIServer

from rescue_bench.errors import ConfigError, ProviderError
from rescue_bench.models.base import Generation
from rescue_bench.models.env import KeyOrigin
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import get_preset
from rescue_bench.records import Request

REQUEST = Request(
    task="itp", messages=({"role": "user", "content": "hi"},), response_schema={}, instance_ids=("a",)
)


def run_cli(tmp_path: Path, base_url: str, key: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "K": key, "RESCUE_BENCH_CACHE_DIR": str(tmp_path / "cache")}
    command = [
        sys.executable, "-c", "from rescue_bench.cli.main import main; main()",
        "run", "--model", "vllm/x", "--base-url", base_url, "--api-key-env", "K", "--tasks", "itp",
        "--limit-samples", "1", "--out", str(tmp_path / "run"), "-q",
    ]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize(
    ("key", "url", "error"),
    [
        ("sk-abc\n", None, "error: the key in K holds a newline, which no HTTP header can carry"),
        ("sk-a bc", None, "error: the key in K holds a space, which no HTTP header can carry"),
        ("sk-äbc", None, "error: the key in K holds a non-ASCII or control character"),
        ("sk-1", "http://user:pw@{host}/v1", "error: --base-url holds credentials (user:password@)"),
        ("sk-1", "http://{host}x/v1", "error: --base-url 'http://127.0.0.1"),
    ],
)
@pytest.mark.subprocess
def test_a_request_that_cannot_be_built_stops_before_anything_is_sent(
    tmp_path: Path, key: str, url: str | None, error: str
) -> None:
    with FakeOpenAIServer() as server:
        host = server.base_url.split("://")[1].removesuffix("/v1")
        done = run_cli(tmp_path, (url or server.base_url).format(host=host), key)
        assert server.requests == []
    assert done.returncode == 2 and done.stderr.startswith(error), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "pw" not in done.stderr and "bc" not in done.stderr.replace("OpenAI", "")
    assert not (tmp_path / "run").exists()


def provider(key: str = "sk-1", variable: str | None = "K") -> OpenAICompatProvider:
    preset = get_preset("vllm")
    origin = KeyOrigin(variable)
    return OpenAICompatProvider(
        "x", preset=preset, base_url="http://127.0.0.1:9/v1", api_key=key, key_origin=origin
    )


def test_the_key_is_never_named_and_its_origin_is() -> None:
    with pytest.raises(ConfigError) as caught:
        provider("sk-secret\r\n", None)
    assert str(caught.value) == (
        "the API key holds a newline, which no HTTP header can carry; check the variable"
    )


def test_a_body_that_is_not_json_stops_the_run_without_a_request() -> None:
    params = Generation.model_construct(extra_body={"top_k": float("inf")})  # past the spec's own check
    model = provider()
    with pytest.raises(ProviderError, match=r"^vllm/x: the request body cannot be sent as JSON \("):
        asyncio.run(model.complete(REQUEST, params))
