"""Kill test: ``rescue-bench run`` in a subprocess is SIGKILLed mid-way, then the same command resumes.

Every instance must end up in ``predictions.jsonl`` exactly once, and no request whose outcome had been
recorded before the kill may reach the (counting) fake server again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer

from rescue_bench.records import Request
from rescue_bench.rundir import read_jsonl


def command(base_url: str, out: Path) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from rescue_bench.cli.main import main; main()",
        "run",
        "--model",
        "openai/fake",
        "--base-url",
        base_url,
        "--data",
        "demo",
        "--tasks",
        "all",
        "--out",
        str(out),
        "--concurrency",
        "4",
        "--no-cache",
        "--quiet",
    ]


def request_key(req: ChatRequest) -> str:
    """The content key the run records for a request, rebuilt from what the server received."""
    body = req.body
    fmt = body.get("response_format") or {}
    schema = (
        fmt.get("json_schema", {}).get("schema") if fmt.get("type") == "json_schema" else fmt.get("schema")
    )
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    return Request(
        task="",
        messages=tuple(body["messages"]),
        response_schema=schema or {},
        instance_ids=(),
        max_tokens=max_tokens,
    ).content_key()


@pytest.mark.slow
def test_sigkill_then_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with FakeOpenAIServer(latency=0.05) as server:
        proc = subprocess.Popen(
            command(server.base_url, out), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(list(read_jsonl(out / "predictions.jsonl"))) >= 60 or proc.poll() is not None:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_at = server.count
        recorded = {r["request_key"] for r in read_jsonl(out / "requests.jsonl")}
        finished = {r["instance_id"] for r in read_jsonl(out / "predictions.jsonl")}
        assert json.loads((out / "run.json").read_text())["status"] == "running"

        resumed = subprocess.run(
            command(server.base_url, out), env=env, capture_output=True, text=True, timeout=120
        )
        assert resumed.returncode == 0, resumed.stderr
        after = server.requests[killed_at:]

    assert finished and recorded
    assert not recorded & {request_key(r) for r in after}, "a recorded request was sent again"
    lines = list(read_jsonl(out / "predictions.jsonl"))
    ids = [r["instance_id"] for r in lines]
    assert len(ids) == len(set(ids))
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["status"] == "finished"
    assert len(ids) == sum(c["instances"] for c in manifest["counts"].values())
    assert finished <= set(ids)
    assert manifest["timings"]["sessions"] == 2
    assert "run directory:" in resumed.stdout


@pytest.mark.slow
def test_sigterm_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeOpenAIServer(latency=0.05) as server:
        proc = subprocess.Popen(
            command(server.base_url, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 60
        while len(list(read_jsonl(out / "predictions.jsonl"))) < 30 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "re-run the same command to resume" in err
        manifest = json.loads((out / "run.json").read_text())
        assert manifest["status"] == "stopped" and manifest["timings"]["requests_s"] > 0
        resumed = subprocess.run(command(server.base_url, out), capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    ids = [r["instance_id"] for r in read_jsonl(out / "predictions.jsonl")]
    assert (
        len(ids)
        == len(set(ids))
        == sum(c["instances"] for c in json.loads((out / "run.json").read_text())["counts"].values())
    )
