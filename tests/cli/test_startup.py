"""Starting the CLI loads what ``run`` needs and nothing heavy that only another command (or extra) uses.

Every command pays the imports of ``rescue_bench.cli.main``, and ``run``'s CPU per request is measured
whole-process against the peers (``benchmarks/bench_peers.py``): ``scipy.stats`` alone took about a second,
and so does the ``openai`` SDK, which a provider imports only when it sends its first request
(``models/openai_sdk.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, schema_answer

pytestmark = pytest.mark.subprocess

HEAVY = (
    "scipy",
    "sklearn",
    "torch",
    "matplotlib",
    "fastapi",
    "sqlalchemy",
    "playwright",
    "llama_cpp",
    "markdown_it",  # rich's Markdown, for the study summary only
)
SDK = ("openai", "httpx2", "aiohttp")


def test_the_cli_starts_without_the_heavy_libraries() -> None:
    probe = (
        "import json, sys; import rescue_bench.cli.main; "
        f"print(json.dumps(sorted(m for m in {HEAVY + SDK!r} if m in sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def _run_cli(args: list[str], env: dict[str, str]) -> list[str]:
    """``rescue-bench run ...`` in a fresh interpreter: which of :data:`SDK` it had loaded when it ended."""
    probe = (
        "import json, sys; from rescue_bench.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        f"print(json.dumps(sorted(m for m in {SDK!r} if m in sys.modules)))"
    )
    argv = [sys.executable, "-c", probe, "run", *args]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_a_fully_cached_run_never_loads_the_sdk(tmp_path: Path) -> None:
    env = {**os.environ, "RESCUE_BENCH_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer(schema_answer) as server:
        flags = ["--model", "vllm/fake", "--base-url", server.base_url, "--data", "demo"]
        flags += ["--tasks", "itp,rpp", "--limit-samples", "1", "--quiet", "--no-bertscore"]
        assert "openai" in _run_cli([*flags, "--out", str(tmp_path / "asked")], env)
        asked = server.count
    # The server is gone: only the cache can answer, and the run never needs the SDK.
    assert _run_cli([*flags, "--out", str(tmp_path / "cached")], env) == []
    assert asked > 0
    scores = [json.loads((tmp_path / d / "scores.json").read_text()) for d in ("asked", "cached")]
    assert scores[0] == scores[1]
