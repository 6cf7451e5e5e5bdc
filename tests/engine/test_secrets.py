"""Secret test: a recognisable fake API key is used, yet never lands in the run dir, cache or output.

The run is judged too (the judge shares the model's endpoint and key), so judge requests and
``judgments.jsonl`` are covered.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, Script, schema_answer

pytestmark = pytest.mark.subprocess

SECRET = "sk-RESCUEBENCH-SECRET-0123456789abcdef"


def rescue_bench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = "from rescue_bench.cli.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120
    )


def files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_key_never_written_or_printed(tmp_path: Path) -> None:
    cache_dir = Path(os.environ["RESCUE_BENCH_CACHE_DIR"])
    env = {**os.environ, "MY_ENDPOINT_KEY": SECRET, "OPENAI_API_KEY": SECRET}
    out = tmp_path / "run"
    with FakeOpenAIServer(schema_answer, require_key=SECRET) as server:
        done = rescue_bench(
            "run",
            "--model",
            "openai/fake",
            "--base-url",
            server.base_url,
            "--api-key-env",
            "MY_ENDPOINT_KEY",
            "--data",
            "demo",
            "--tasks",
            "itp,er",
            "--limit-samples",
            "1",
            "--out",
            str(out),
            "--judge",
            "openai/fake-judge",
            "--no-bertscore",
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert server.count > 0 and any(r.model == "fake-judge" for r in server.requests)
        assert (out / "judgments.jsonl").stat().st_size > 0
        assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.requests)

    # The server echoes the key it got in a 401, as OpenAI does; the error line must not repeat it.
    def echo_key(req: ChatRequest) -> Script:
        given = req.headers.get("authorization", "").removeprefix("Bearer ")
        return Script(
            status=401, error={"message": f"Incorrect API key provided: {given}", "code": "invalid_api_key"}
        )

    with FakeOpenAIServer(echo_key) as server:
        refused = rescue_bench(
            "run",
            "--model",
            "openai/fake",
            "--base-url",
            server.base_url,
            "--data",
            "demo",
            "--tasks",
            "itp",
            "--limit-samples",
            "1",
            "--out",
            str(tmp_path / "refused"),
            "--no-cache",
            env=env,
        )
    assert refused.returncode == 1
    assert "HTTP 401" in refused.stderr and "[redacted]" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr  # one line, no traceback

    for result in (done, refused):
        assert SECRET not in result.stdout and SECRET not in result.stderr
    assert list(out.iterdir()) and list(cache_dir.iterdir())
    for root in (out, tmp_path / "refused", cache_dir):
        assert files_containing(root, SECRET.encode()) == []
