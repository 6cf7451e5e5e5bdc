"""replay/<run-dir>: saved replies come back for the same requests, and nothing else is answered."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Generation, Provider
from rescue_bench.models.replay import ReplayProvider
from rescue_bench.records import Json, Reply, Request
from rescue_bench.rundir import RunDirError

SCHEMA: dict[str, Json] = {"type": "object", "properties": {"answer": {"type": "string"}}}


def request(text: str, task: str = "itp") -> Request:
    return Request(
        task,
        ({"role": "system", "content": "Answer."}, {"role": "user", "content": text}),
        SCHEMA,
        (f"s::{task}::1",),
        max_tokens=64,
    )


def saved_line(req: Request, reply: Reply) -> str:
    """A requests.jsonl line in the layout of docs/design.md."""
    record = {
        "request_key": req.content_key(),
        "task": req.task,
        "instance_ids": list(req.instance_ids),
        "attempts": reply.attempts,
        "latency": reply.latency,
        "usage": {
            "prompt_tokens": reply.usage.prompt_tokens,
            "completion_tokens": reply.usage.completion_tokens,
        },
        "error": reply.error,
        "cached": reply.cached,
        "reply": {"text": reply.text, "reasoning": reply.reasoning, "finish_reason": reply.finish_reason},
    }
    return json.dumps(record) + "\n"


def write_run(tmp_path: Path, lines: list[str]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "requests.jsonl").write_text("".join(lines), encoding="utf-8")
    (run / "run.json").write_text(json.dumps({"format": 1, "model": {"provider": "openai", "model": "m"}}))
    return run


def answer(provider: ReplayProvider, req: Request) -> Reply:
    return asyncio.run(provider.complete(req, Generation()))


def test_round_trip_returns_the_saved_replies(tmp_path: Path) -> None:
    a, b = request("first"), request("second", task="er")
    replies = [
        (a, Reply('{"answer": "yes"}', reasoning="thought", finish_reason="stop")),
        (b, Reply('{"answer": "no"', finish_reason="length")),
    ]
    provider = ReplayProvider(write_run(tmp_path, [saved_line(r, rep) for r, rep in replies]))
    assert isinstance(provider, Provider)
    for req, saved in replies:
        got = answer(provider, req)
        assert (got.text, got.reasoning, got.finish_reason, got.error) == (
            saved.text,
            saved.reasoning,
            saved.finish_reason,
            None,
        )
        assert got.usage.total_tokens == 0 and got.latency == 0.0
    assert provider.identity()["source"] == {"provider": "openai", "model": "m"}


def test_unanswered_and_failed_requests_are_failures(tmp_path: Path) -> None:
    done, failed = request("done"), request("failed")
    provider = ReplayProvider(
        write_run(
            tmp_path,
            [
                saved_line(done, Reply("{}", finish_reason="stop")),
                saved_line(failed, Reply.failure("HTTP 400: bad request")),
            ],
        )
    )
    never = answer(provider, request("a prompt that changed"))
    assert not never.ok and never.error is not None and never.error.startswith("replay: no saved reply")
    bad = answer(provider, failed)
    assert not bad.ok and "HTTP 400" in str(bad.error)
    assert answer(provider, done).ok


def test_a_later_success_wins_over_an_earlier_failure_and_not_the_reverse(tmp_path: Path) -> None:
    retried, kept = request("retried"), request("kept")
    provider = ReplayProvider(
        write_run(
            tmp_path,
            [
                saved_line(retried, Reply.failure("timeout")),
                saved_line(kept, Reply('{"answer": "first"}')),
                saved_line(retried, Reply('{"answer": "second try"}')),
                saved_line(kept, Reply.failure("timeout")),
            ],
        )
    )
    assert answer(provider, retried).text == '{"answer": "second try"}'
    assert answer(provider, kept).text == '{"answer": "first"}'
    assert len(provider) == 2


def test_bad_run_directories_give_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"requests\.jsonl not found"):
        ReplayProvider(tmp_path / "nowhere")
    # The run directory's reader (rescue_bench.rundir) reads the file: a blank or broken line that is not the
    # torn last one is an error naming file and line.
    run = write_run(tmp_path, [saved_line(request("ok"), Reply("{}")), "{not json\n", "{}\n"])
    with pytest.raises(RunDirError, match=r"requests\.jsonl:2: "):
        ReplayProvider(run)


def test_replaying_a_real_run_gives_the_same_predictions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run against a fake endpoint, then ``replay/<that run>`` through the same command: no endpoint, same
    answers, same scores."""
    from tests.fakes.openai_server import FakeOpenAIServer, schema_answer
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app
    from rescue_bench.rundir import read_jsonl

    def run(*args: str) -> None:
        common = ["run", "--data", "demo", "--tasks", "all", "--limit-samples", "2", "--no-cache"]
        result = CliRunner().invoke(app, [*common, *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output

    monkeypatch.setenv("FAKE_KEY", "sk-fake")
    first, again = tmp_path / "first", tmp_path / "again"
    with FakeOpenAIServer(schema_answer) as server:
        run(
            "--model",
            "openai/fake",
            "--base-url",
            server.base_url,
            "--api-key-env",
            "FAKE_KEY",
            "--out",
            str(first),
        )
    run("--model", f"replay/{first}", "--out", str(again))

    def answers(run_dir: Path) -> dict[str, tuple[Json, Json, Json]]:
        lines = read_jsonl(run_dir / "predictions.jsonl")
        return {r["instance_id"]: (r["prediction"], r["valid"], r["scores"]) for r in lines}

    assert answers(again) == answers(first) and len(answers(first)) > 20
    replayed = list(read_jsonl(again / "requests.jsonl"))
    assert replayed and all(r["error"] is None for r in replayed)
    assert sum(r["usage"]["prompt_tokens"] for r in replayed) == 0
