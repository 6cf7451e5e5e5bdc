"""Studies against several fake OpenAI-compatible servers (one per endpoint), and reading what they wrote."""

from __future__ import annotations

import csv
import json
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, Script, schema_answer, server_error

from rescue_bench.rundir import read_jsonl


def flipped(request: ChatRequest) -> str:
    """A schema-shaped answer with every yes turned into no: a second model that answers otherwise."""
    return schema_answer(request).replace('"yes"', '"no"')


def study_toml(
    out: Path, servers: list[tuple[str, str]], *, tasks: str = "itp,rpp,stp", extra: str = ""
) -> str:
    """A study file of demo data, 2 samples, one model per (name, base URL)."""
    lines = [
        'data = "demo"',
        f"tasks = {json.dumps(tasks.split(','))}",
        "limit_samples = 2",
        f'out = "{out}"',
        extra,
        "[engine]",
        "concurrency = 4",
        "max_retries = 0",
    ]
    for name, url in servers:
        lines += ["[[models]]", f'name = "{name}"', f'base_url = "{url}"']
    return "\n".join(lines) + "\n"


def sweep_command(study: Path, *more: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from rescue_bench.cli.main import main; main()",
        "sweep",
        str(study),
        *more,
    ]


def study_json(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "study.json").read_text()))


def instance_ids(run: Path) -> list[str]:
    return [str(r["instance_id"]) for r in read_jsonl(run / "predictions.jsonl")]


def leaderboard_csv(out: Path) -> list[dict[str, str]]:
    with (out / "leaderboard.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


TEN_NAMES = (
    "openrouter/meta-llama/llama-3.1-405b-instruct",
    "openai/gpt-4o-mini",
    "vllm/deepseek-ai/DeepSeek-V3-0324",
    "dashscope/qwen-plus",
    "together/mistralai/Mixtral-8x22B-Instruct-v0.1",
    "vllm/Qwen2.5-7B-Instruct",
    "ollama/llama3.2:3b",
    "openai/gpt-4.1-nano",
    "vllm/partly-failing-endpoint",
    "vllm/nonsense-answers",
)
"""Ten models with names as long as real ones: eight answer (two ways), one's requests partly fail (its run
stays incomplete), one answers nonsense (degraded)."""


def some_fail(request: ChatRequest) -> str | Script:
    """Every fifth request (by its text) fails: with no retries, the run stays incomplete."""
    return server_error() if zlib.crc32(request.text.encode()) % 5 == 0 else schema_answer(request)


@contextmanager
def ten_servers() -> Iterator[list[tuple[str, str]]]:
    """A fake server for each of :data:`TEN_NAMES`: (name, base URL) pairs for :func:`study_toml`."""
    handlers = [schema_answer, flipped] * 4 + [some_fail, lambda _: "nonsense"]
    servers = [FakeOpenAIServer(handler) for handler in handlers]
    for server in servers:
        server.start()
    try:
        yield list(zip(TEN_NAMES, [s.base_url for s in servers], strict=True))
    finally:
        for server in servers:
            server.stop()
