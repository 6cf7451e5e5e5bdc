"""Driving ``rescue-bench run`` processes against the chaos server, and reading what they left behind."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.chaos_server import ChaosServer, Entry

from rescue_bench.models.base import Generation
from rescue_bench.records import Request
from rescue_bench.rundir import read_jsonl
from rescue_bench.rundir.cache import cache_key

MODEL = "vllm/chaos-model"


def cli() -> list[str]:
    """The installed ``rescue-bench`` console script of this interpreter (or an equivalent ``-c`` call)."""
    script = Path(sys.executable).with_name("rescue-bench")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from rescue_bench.cli.main import main; main()"]


@dataclass(frozen=True)
class Client:
    """One configuration of ``rescue-bench run``: the same command is re-run to resume."""

    base_url: str
    data: Path
    out: Path
    cache_dir: Path
    timeout: float
    concurrency: int = 16
    max_retries: int = 5
    hash_seed: str | None = None
    """``PYTHONHASHSEED`` of the client processes; ``None``: each process draws its own, as in real use."""

    def command(self) -> list[str]:
        return [
            *cli(),
            "run",
            "--model",
            MODEL,
            "--base-url",
            self.base_url,
            "--data",
            str(self.data),
            "--tasks",
            "all",
            "--out",
            str(self.out),
            "--concurrency",
            str(self.concurrency),
            "--timeout",
            f"{self.timeout:g}",
            "--max-retries",
            str(self.max_retries),
            "--quiet",
        ]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "OPENAI_"))}
        env.update(RESCUE_BENCH_CACHE_DIR=str(self.cache_dir), PYTHONUNBUFFERED="1", NO_COLOR="1")
        if self.hash_seed is not None:
            env["PYTHONHASHSEED"] = self.hash_seed
        return env

    def spawn(self) -> subprocess.Popen[str]:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        return subprocess.Popen(
            self.command(),
            env=self.env(),
            cwd=self.out.parent,  # no project .env file is picked up
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def finish(self, timeout: float) -> subprocess.CompletedProcess[str]:
        """Run to the end; fail with the process output if it does not exit with 0."""
        proc = self.spawn()
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            raise AssertionError(f"run did not finish within {timeout:g} s\n{stderr[-3000:]}") from None
        assert proc.returncode == 0, f"run exited with {proc.returncode}\n{stdout[-2000:]}\n{stderr[-3000:]}"
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def kill_at_request(server: ChaosServer, client: Client, n: int, timeout: float) -> None:
    """Start ``client`` and SIGKILL it the moment the ``n``-th request of the session reaches the server."""
    holder: dict[str, int] = {}
    server.hook_at(n, lambda: os.kill(holder["pid"], signal.SIGKILL))
    proc = client.spawn()
    holder["pid"] = proc.pid  # set long before the child can send n requests (it still imports)
    _expect_killed(proc, timeout, f"request {n}")


def kill_when_settled(
    server: ChaosServer,
    client: Client,
    n: int,
    *,
    settle: float,
    idle: float,
    timeout: float,
    when: Callable[[Entry], bool] | None = None,
) -> float:
    """Start ``client``, freeze every response from request ``n`` on, let the client settle, SIGKILL it.

    ``when`` delays the freeze to the first such request it accepts (see :meth:`ChaosServer.freeze_at`).
    Settled means: at least ``settle`` seconds of freeze and no new request for ``idle`` seconds, so every
    response delivered before the freeze has been processed. Returns how long the freeze lasted.
    """
    server.freeze_at(n, when)
    proc = client.spawn()
    deadline = time.monotonic() + timeout
    while server.frozen_since is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, stderr = proc.communicate()
            raise AssertionError(f"the client ended before its freeze at request {n}\n{stderr[-3000:]}")
        time.sleep(0.01)
    frozen = server.frozen_since or 0.0
    while time.monotonic() - frozen < settle or server.idle_for() < idle:
        time.sleep(0.02)
    lasted = time.monotonic() - frozen
    assert proc.poll() is None, "the client ended during the freeze"
    proc.send_signal(signal.SIGKILL)
    _expect_killed(proc, timeout, "the freeze")
    return lasted


def _expect_killed(proc: subprocess.Popen[str], timeout: float, moment: str) -> None:
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        raise AssertionError(f"the client was not killed at {moment} within {timeout:g} s") from None
    assert proc.returncode == -signal.SIGKILL, (
        f"the client exited with {proc.returncode} before it could be killed at {moment}\n{stderr[-3000:]}"
    )


@dataclass(frozen=True)
class Snapshot:
    """The run directory and the cache as a killed (or finished) session left them."""

    records: list[dict[str, Any]]
    predictions: list[dict[str, Any]]
    cache_keys: set[str] = field(default_factory=set)

    @classmethod
    def take(cls, client: Client) -> Snapshot:
        return cls(
            list(read_jsonl(client.out / "requests.jsonl")),
            list(read_jsonl(client.out / "predictions.jsonl")),
            committed_cache_keys(client.cache_dir / "responses.sqlite3"),
        )


def committed_cache_keys(path: Path) -> set[str]:
    """Keys the response cache holds on disk (what a killed process had committed)."""
    if not path.exists():
        return set()
    db = sqlite3.connect(path)
    try:
        return {row[0] for row in db.execute("SELECT key FROM responses")}
    finally:
        db.close()


def cache_keys_of(requests: Mapping[str, Request], manifest: Mapping[str, Any]) -> dict[str, str]:
    """Request key -> response-cache key, with the model identity and parameters the run recorded."""
    identity = dict(manifest["model"])
    params = Generation(**manifest["generation"])
    return {key: cache_key(identity, request, params) for key, request in requests.items()}


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
