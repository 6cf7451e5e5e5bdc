"""A three-model sweep is SIGKILLed mid-way and resumed: its results are byte-identical to an uninterrupted
sweep's, every instance is recorded once per model, and no recorded request reaches a server again."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from tests.engine.test_kill import request_key
from tests.fakes.openai_server import FakeOpenAIServer
from tests.study.helpers import flipped, instance_ids, study_json, study_toml, sweep_command

from rescue_bench.rundir import read_jsonl

DIRS = ("vllm-a", "vllm-b", "vllm-c")


def _run(study: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        sweep_command(study, "--quiet"), env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_sigkill_then_resume_is_byte_identical(tmp_path: Path) -> None:
    servers = [
        FakeOpenAIServer(latency=0.02),
        FakeOpenAIServer(flipped, latency=0.02),
        FakeOpenAIServer(latency=0.02),
    ]
    for server in servers:
        server.start()
    try:
        urls = [
            ("vllm/a", servers[0].base_url),
            ("vllm/b", servers[1].base_url),
            ("vllm/c", servers[2].base_url),
        ]
        clean, killed = tmp_path / "clean", tmp_path / "killed"
        for out in (clean, killed):
            text = study_toml(out, urls, tasks="all", extra="bertscore = false")
            (tmp_path / f"{out.name}.toml").write_text(text)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "RESCUE_BENCH_CACHE_DIR": str(tmp_path / "cache-clean")}
        done = _run(tmp_path / "clean.toml", env)
        assert done.returncode == 0, done.stderr
        planned = [s.count for s in servers]
        for server in servers:
            server.reset_log()

        env["RESCUE_BENCH_CACHE_DIR"] = str(tmp_path / "cache-killed")
        proc = subprocess.Popen(
            sweep_command(tmp_path / "killed.toml", "--quiet"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 120
        while sum(s.count for s in servers) < sum(planned) // 2 and time.monotonic() < deadline:
            assert proc.poll() is None, "the sweep ended before it could be killed"
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        at_kill = [s.count for s in servers]
        recorded = [{r["request_key"] for r in read_jsonl(killed / d / "requests.jsonl")} for d in DIRS]
        assert 0 < sum(at_kill) < sum(planned)

        resumed = _run(tmp_path / "killed.toml", env)
        assert resumed.returncode == 0, resumed.stderr
        for server, keys, before in zip(servers, recorded, at_kill, strict=True):
            again = {request_key(r) for r in server.requests[before:]}
            assert not keys & again, "a recorded request was sent again"
    finally:
        for server in servers:
            server.stop()
    assert [r["status"] for r in study_json(killed)["runs"]] == ["finished"] * 3
    for folder in DIRS:
        ids = instance_ids(killed / folder)
        assert len(ids) == len(set(ids)) == len(instance_ids(clean / folder))
        for name in ("predictions.jsonl", "scores.json"):
            assert (killed / folder / name).read_bytes() == (clean / folder / name).read_bytes(), name
    assert (killed / "leaderboard.csv").read_text() == (clean / "leaderboard.csv").read_text()
