"""Run directories for the viewer's tests, made by the real CLI: two baselines on the demo data, and a run of
a fake OpenAI endpoint whose replies carry HTML and script (hostile text the viewer must show as text)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, schema_answer
from typer.testing import CliRunner

from rescue_bench.cli.main import app

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


def _run(out: Path, *args: str) -> Path:
    result = CliRunner().invoke(
        app, ["run", "--data", "demo", "--out", str(out), "--no-bertscore", *args], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return out


def hostile_answer(request: ChatRequest) -> str:
    """A schema-shaped answer with hostile free-text fields, followed by hostile text outside the JSON."""
    answer = schema_answer(request).replace('"x"', json.dumps(HOSTILE))
    return f"{answer}\n{HOSTILE}"


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """``random`` and ``majority`` (baselines, all tasks), ``hostile`` (ITP, RPP, ER via a fake endpoint)."""
    root = tmp_path_factory.mktemp("view-runs")
    made = {
        "random": _run(root / "random", "--model", "baseline/random"),
        "majority": _run(root / "majority", "--model", "baseline/majority"),
    }
    with FakeOpenAIServer(hostile_answer) as server:
        made["hostile"] = _run(
            root / "hostile", "--model", "vllm/fake", "--base-url", server.base_url, "--tasks", "itp,rpp,er"
        )
    yield made


def records(run: Path) -> list[dict[str, object]]:
    """The latest prediction line per instance, read without the viewer's code."""
    latest: dict[str, dict[str, object]] = {}
    for line in (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        latest[str(record["instance_id"])] = record
    return list(latest.values())
