"""Kill test of ``run --batch``: SIGKILL while polling, then the same command polls the same batch again.

The fake server counts uploads and created batches: the resumed run must not upload or submit anything.
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
from tests.conftest import REPO_ROOT
from tests.fakes.batch_server import BatchPlan, FakeBatchServer

from rescue_bench.batch.ledger import BatchLedger
from rescue_bench.rundir import read_jsonl

pytestmark = pytest.mark.subprocess

ENDLESS = BatchPlan(states=("validating", *("in_progress",) * 10_000, "completed"))


def command(base_url: str, out: Path) -> list[str]:
    flags = ["--model", "openai/fake", "--base-url", base_url, "--data", "demo", "--tasks", "itp,ssp"]
    flags += ["--limit-samples", "1", "--out", str(out), "--batch", "--batch-poll", "0.05", "--quiet"]
    return [sys.executable, "-c", "from rescue_bench.cli.main import main; main()", "run", *flags]


def environment() -> dict[str, str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


def wait_for(condition: object, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def test_a_killed_batch_run_resumes_polling_the_same_batch(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeBatchServer(plans=[ENDLESS]) as server:
        process = subprocess.Popen(command(server.base_url, out), env=environment())
        try:
            wait_for(lambda: server.retrieves >= 3 or process.poll() is not None)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(30)
        assert process.returncode == -signal.SIGKILL
        assert server.uploads == 1 and len(server.created) == 1
        batch_id = server.created[0]
        assert [e.batch_id for e in BatchLedger(out).batches()] == [batch_id]
        assert not (out / "predictions.jsonl").exists() or not (out / "predictions.jsonl").read_text()

        # The batch finishes while nobody watches; the same command finds it and only polls it.
        batch = server.batches[batch_id]
        batch.plan, batch.step = BatchPlan(states=("in_progress", "completed")), 0
        polls = server.retrieves
        done = subprocess.run(command(server.base_url, out), env=environment(), timeout=300, check=False)
        assert done.returncode == 0
        assert server.uploads == 1 and server.created == [batch_id] and server.retrieves > polls
        sent = len(server.batch_lines)
    preds = list(read_jsonl(out / "predictions.jsonl"))
    run = json.loads((out / "run.json").read_text())
    instances = sum(c["instances"] for c in run["counts"].values())
    assert len(preds) == len({p["instance_id"] for p in preds}) == instances
    assert run["status"] == "finished" and run["options"]["batch"]["batches"] == 1
    assert run["options"]["batch"]["requests_sent"] == sent
