"""Fixtures of the adapter tests: a hashed fake endpoint and the same replies through ``rescue-bench run``."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.adapters.hashed_answers import HashedAnswers
from tests.fakes.openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from rescue_bench.adapters.plan import TaskArgs, plan
from rescue_bench.cli.main import app

ALL = ("itp", "rpp", "stp", "ssp", "er", "vp")
LIMIT = 6
"""The whole demo: four couple and two family conversations, so both scopes are measured."""


@dataclass(frozen=True)
class Served:
    server: FakeOpenAIServer
    handler: HashedAnswers


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """One fake server for the module, answering our tasks' prompts (first samples of the demo data)."""
    requests = [r for name in ALL for r in plan(TaskArgs(name, limit_samples=LIMIT)).requests]
    handler = HashedAnswers(requests)
    with FakeOpenAIServer(handler) as server:
        yield Served(server, handler)


def run_cli(out: Path, base_url: str, tasks: Sequence[str], *extra: str) -> dict[str, Any]:
    """``rescue-bench run`` against the fake server; its ``scores.json``."""
    args = [
        "run",
        "--model",
        "vllm/fake",
        "--base-url",
        base_url,
        "--data",
        "demo",
        "--tasks",
        ",".join(tasks),
    ]
    args += ["--limit-samples", str(LIMIT), "--out", str(out), "--no-cache", "--no-bertscore", "-q", *extra]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    scores: dict[str, Any] = json.loads((out / "scores.json").read_text())
    return scores


@pytest.fixture(scope="module")
def served_run(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run directory of all six tasks, ER and VP judged by the fake grader."""
    out = tmp_path_factory.mktemp("run") / "run"
    run_cli(out, served.server.base_url, ALL, "--judge", "vllm/judge")
    return out


@pytest.fixture(scope="module")
def run_scores(served_run: Path) -> dict[str, Any]:
    """The run's scores of all six tasks."""
    scores: dict[str, Any] = json.loads((served_run / "scores.json").read_text())
    return scores
