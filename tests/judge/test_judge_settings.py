"""Judges with their own settings: two judges behind two fake servers in one run, each asked only at its own
endpoint, with its own key, generation settings and concurrency; a judge named alone is as before."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from tests.fakes.openai_server import FakeOpenAIServer
from tests.judge.test_score_cli import grade
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.judge.after_run import judge_params
from rescue_bench.judge.rubric import JUDGE_MAX_TOKENS
from rescue_bench.models.base import Generation
from rescue_bench.spec import JudgeSpec

RUNNER = CliRunner()
KEY_B = "sk-judge-b-secret-123"
REASONING_KEYS = {"enable_thinking", "thinking_budget", "reasoning_effort", "reasoning", "top_k"}


def test_a_judge_named_alone_generates_as_before() -> None:
    assert judge_params(JudgeSpec(name="openai/gpt-4.1")) == Generation()


def test_two_judges_behind_two_endpoints_each_with_its_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_B_KEY", KEY_B)
    with (
        FakeOpenAIServer(grade, latency=0.05) as server_a,
        FakeOpenAIServer(grade, latency=0.05, require_key=KEY_B) as server_b,
    ):
        spec = tmp_path / "study.toml"
        spec.write_text(
            f"""model = "baseline/random"
data = "demo"
tasks = ["er", "vp"]
limit_samples = 3

[engine]
cache = false

[[judges]]
name = "vllm/judge-a"
base_url = "{server_a.base_url}"
temperature = 0.2
seed = 11
concurrency = 1

[[judges]]
name = "dashscope/judge-b"
base_url = "{server_b.base_url}"
api_key_env = "JUDGE_B_KEY"
reasoning_effort = "low"
max_tokens = 3000
extra_body = {{ top_k = 5 }}
concurrency = 2
"""
        )
        out = tmp_path / "run"
        result = RUNNER.invoke(
            app, ["run", "--spec", str(spec), "--out", str(out), "--quiet", "--no-bertscore"]
        )
        assert result.exit_code == 0, result.output
        a, b = list(server_a.requests), list(server_b.requests)
        in_flight = server_a.max_in_flight, server_b.max_in_flight
    assert a and b
    assert all(r.model == "judge-a" for r in a) and all(r.model == "judge-b" for r in b)
    for r in a:
        assert (r.body["temperature"], r.body["seed"], r.body["max_tokens"]) == (0.2, 11, JUDGE_MAX_TOKENS)
        assert not REASONING_KEYS & set(r.body)
    for r in b:
        body = r.body
        assert (body["enable_thinking"], body["thinking_budget"], body["top_k"]) == (True, 4096, 5)
        assert body["max_tokens"] == 3000 and body["temperature"] == 0.0 and "seed" not in body
        assert r.headers["authorization"] == f"Bearer {KEY_B}"
    assert in_flight[0] == 1 and in_flight[1] <= 2
    judgments = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    by_judge = {j["judge"] for j in judgments}
    assert by_judge == {"vllm/judge-a", "dashscope/judge-b"}
    judging = json.loads((out / "judging.json").read_text())
    assert judging["judges"] == ["vllm/judge-a", "dashscope/judge-b"]
    assert KEY_B not in (out / "run.json").read_text()  # the key variable's name only
    spec_judges = json.loads((out / "run.json").read_text())["spec"]["judges"]
    assert [j["reasoning_effort"] for j in spec_judges] == ["none", "low"]


def test_judge_base_url_flag_applies_to_flag_judges(tmp_path: Path) -> None:
    with FakeOpenAIServer(grade) as server:
        args = [
            "run",
            "--model",
            "baseline/random",
            "--data",
            "demo",
            "--tasks",
            "er",
            "--limit-samples",
            "1",
        ]
        args += ["--judge", "vllm/j1", "--judge", "ollama/j2", "--judge-base-url", server.base_url]
        result = RUNNER.invoke(
            app, [*args, "--out", str(tmp_path / "r"), "--quiet", "--no-bertscore", "--no-cache"]
        )
        assert result.exit_code == 0, result.output
        models = {r.model for r in server.requests}
    assert models == {"j1", "j2"}


def test_print_spec_round_trips_judge_settings(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(
        'model = "vllm/m"\n[[judges]]\nname = "vllm/j"\nreasoning_effort = "high"\n'
        "extra_body = { top_k = 5, chat_template_kwargs = { enable_thinking = true } }\n"
        '[[judges]]\nname = "openai/gpt-4.1"\n'
    )
    first = RUNNER.invoke(app, ["run", "--spec", str(spec), "--print-spec"])
    assert first.exit_code == 0, first.output
    again = tmp_path / "again.toml"
    again.write_text(first.output)
    second = RUNNER.invoke(app, ["run", "--spec", str(again), "--print-spec"])
    assert second.exit_code == 0 and second.output == first.output
    judges = tomllib.loads(first.output)["judges"]
    assert judges[0]["extra_body"] == {"top_k": 5, "chat_template_kwargs": {"enable_thinking": True}}
    assert [j["reasoning_effort"] for j in judges] == ["high", "none"]
