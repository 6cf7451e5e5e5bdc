"""An endpoint that dies in the middle of a run, and of a judge pass, then comes back.

The first command ends ``incomplete`` with exit code 4 and prints the command that resumes; that same
command, once the endpoint is back, asks only what got no answer and finishes; and ``scores.json`` is byte
for byte the one an undisturbed run writes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.chaos.harness import cli
from tests.engine.test_run_judge import grade
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, Script, reset, schema_answer

pytestmark = pytest.mark.slow
DATA = ("--data", "demo", "--limit-samples", "2", "--no-bertscore", "--no-cache", "--quiet")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rescue_bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "OPENAI_"))}
    env.update(RESCUE_BENCH_CACHE_DIR=str(tmp_path / "cache"), NO_COLOR="1")
    return subprocess.run(
        [*cli(), *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )


def dying(answer: Callable[[ChatRequest], Any], after: int, server: list[FakeOpenAIServer]) -> Any:
    """A handler that answers ``after`` requests, then takes its own server down (connections refused)."""
    lock = threading.Lock()
    seen = [0]

    def handler(request: ChatRequest) -> Any:
        with lock:
            seen[0] += 1
            if seen[0] == after + 1:
                threading.Thread(target=server[0].stop, daemon=True).start()
        return answer(request) if seen[0] <= after else reset()

    return handler


def outage(
    tmp_path: Path, answer: Callable[[ChatRequest], Any], after: int, args: tuple[str, ...]
) -> subprocess.CompletedProcess[str]:
    """Run ``args`` undisturbed, then against an endpoint that dies after ``after`` requests and comes back;
    both end with the same ``scores.json``. Returns the disturbed first command."""
    with FakeOpenAIServer(answer) as calm:
        clean = rescue_bench(tmp_path, *args, "--base-url", calm.base_url, "--out", str(tmp_path / "clean"))
    assert clean.returncode == 0, clean.stderr
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    command = (*args, "--base-url", url, "--out", str(tmp_path / "hit"))
    holder: list[FakeOpenAIServer] = []
    holder.append(FakeOpenAIServer(dying(answer, after, holder), port=port).start())
    try:
        first = rescue_bench(tmp_path, *command)
    finally:
        holder[0].stop()
    hit = tmp_path / "hit"
    assert first.returncode == 4, first.stdout + first.stderr
    assert json.loads((hit / "run.json").read_text())["status"] == "incomplete"
    assert "got no answer" in first.stderr and "rescue-bench run " in first.stderr
    resume = next(line for line in first.stderr.splitlines() if line.startswith("resume"))
    assert f"--base-url {url}" in resume and "--out" in resume
    with FakeOpenAIServer(answer, port=port) as back:
        again = rescue_bench(tmp_path, *command)
        asked_again = back.count
    assert again.returncode == 0, again.stdout + again.stderr
    assert asked_again > 0
    assert json.loads((hit / "run.json").read_text())["status"] == "finished"
    assert (hit / "scores.json").read_bytes() == (tmp_path / "clean" / "scores.json").read_bytes()
    return first


def test_the_model_endpoint_dies_mid_run_and_comes_back(tmp_path: Path) -> None:
    args = ("run", "--model", "vllm/m", "--tasks", "itp,ssp", *DATA, "--concurrency", "2")
    outage(tmp_path, schema_answer, 6, (*args, "--max-retries", "1", "--timeout", "5"))
    # Only what got no answer was asked again: every instance has one line, and the answered ones kept theirs.
    lines = (tmp_path / "hit" / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == len({json.loads(line)["instance_id"] for line in lines})


def test_the_judge_dies_mid_pass_and_comes_back(tmp_path: Path) -> None:
    def judge(request: ChatRequest) -> Script | dict[str, Any]:
        return grade(request)

    args = (
        "run",
        "--model",
        "baseline/random",
        "--seed",
        "4",
        "--tasks",
        "er,vp",
        *DATA,
        "--judge",
        "vllm/j",
    )
    first = outage(tmp_path, judge, 3, (*args, "--max-retries", "1", "--timeout", "5", "--concurrency", "1"))
    assert "RESCUE-Bench" not in first.stdout  # no table of numbers for an unfinished run
    judging = json.loads((tmp_path / "hit" / "judging.json").read_text())
    assert [s["status"] for s in judging["sessions"]] == ["incomplete", "finished"]
