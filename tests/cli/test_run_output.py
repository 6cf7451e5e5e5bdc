"""What `run` prints about itself: the judge pass starting is a note, not a warning."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_run_judge import grade
from tests.fakes.openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from rescue_bench.cli.main import app


def test_the_judge_pass_is_announced_as_a_note(tmp_path: Path) -> None:
    args = ["run", "--data", "demo", "--model", "baseline/random", "--tasks", "er", "--limit-samples", "1"]
    with FakeOpenAIServer(grade) as fake:
        more = [
            "--judge",
            "vllm/j",
            "--base-url",
            fake.base_url,
            "--no-bertscore",
            "--out",
            str(tmp_path / "r"),
        ]
        result = CliRunner().invoke(app, [*args, *more])
    assert result.exit_code == 0, result.output
    assert "note: judging ER/VP with vllm/j" in result.stderr
    assert "warning: judging" not in result.output
