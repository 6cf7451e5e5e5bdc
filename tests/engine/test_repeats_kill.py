"""A run with repeats, SIGKILLed mid-way and resumed: every (instance, repeat) ends in ``predictions.jsonl``
once, and no request recorded before the kill reaches the (counting) fake server again."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.engine.test_kill import command, request_key
from tests.fakes.openai_server import FakeOpenAIServer

from rescue_bench.rundir import read_jsonl

REPEATS = 3


def asked(request_key_: str, repeat: int) -> tuple[str, int | None]:
    """What the server sees of a recorded request: its content and its seed (none for repeat 0)."""
    return request_key_, None if repeat == 0 else repeat


@pytest.mark.slow
def test_sigkill_then_resume_asks_each_instance_repeat_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with FakeOpenAIServer(latency=0.05) as server:
        args = [*command(server.base_url, out), "--tasks", "itp,stp", "--repeats", str(REPEATS)]
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(list(read_jsonl(out / "predictions.jsonl"))) >= 250 or proc.poll() is not None:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_at = server.count
        recorded = {asked(r["request_key"], r.get("repeat", 0)) for r in read_jsonl(out / "requests.jsonl")}
        done = {(p["instance_id"], p.get("repeat", 0)) for p in read_jsonl(out / "predictions.jsonl")}
        assert 0 < len(done) < (138 + 66) * REPEATS
        again = subprocess.run(args, env=env, capture_output=True, timeout=300, check=False)
        assert again.returncode == 0, again.stderr.decode()[-2000:]
        resent = [(request_key(r), r.body.get("seed")) for r in server.requests[killed_at:]]
    assert not recorded & set(resent), "a request recorded before the kill was sent again"
    lines = list(read_jsonl(out / "predictions.jsonl"))
    keys = Counter((p["instance_id"], p.get("repeat", 0)) for p in lines)
    assert set(keys.values()) == {1}
    assert Counter(r for _, r in keys) == {r: 138 + 66 for r in range(REPEATS)}
    assert done <= set(keys)
