"""The request counts of ``run.json`` are added up as lines are appended; they must be what the file holds."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError
from tests.engine import tiny_task
from tests.engine.conftest import TINY_TASKS, fast_options, make_samples, provider_on, tiny_config
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, llamacpp_python_format, server_error

from rescue_bench.engine.counts import RequestTally, tally_requests
from rescue_bench.engine.ending import degraded_reason
from rescue_bench.engine.run import execute_run
from rescue_bench.records import Usage
from rescue_bench.report.measured import measured
from rescue_bench.rundir import RequestLine, RunDirError, load_run, read_jsonl


def line(**fields: Any) -> RequestLine:
    return RequestLine.from_json({"task": "echo", **fields})


def test_a_tally_counts_each_kind_of_request_once() -> None:
    lines = [
        line(attempts=3, usage={"prompt_tokens": 10, "completion_tokens": 2}),
        line(cached=True, usage={"prompt_tokens": 99}),  # a cache hit costs no tokens
        line(single=True, error="HTTP 500", attempts=2, usage={"prompt_tokens": 5}),
        line(reply={"text": "{", "finish_reason": "length"}),
        line(reply={"text": " ", "reasoning": "thinking"}, masked=True, refused=True),
        line(error="refused", reply={"finish_reason": "length"}),  # a failure is not also truncated
    ]
    assert tally_requests(lines)["echo"].to_json() == {
        "requests": 6,
        "single_retries": 1,
        "cache_hits": 1,
        "retries": 3,
        "failures": 2,
        "refusals": 1,
        "masked": 1,
        "tokens": {"prompt_tokens": 15, "completion_tokens": 2, "reasoning_tokens": 0},
        "truncated": 1,
        "empty_after_reasoning": 1,
    }
    assert RequestTally().to_json()["requests"] == 0
    # Every count is written, also when nothing was paid for (a fully cached re-run).
    cached = tally_requests([line(cached=True)])["echo"].to_json()
    assert cached["tokens"] == {"prompt_tokens": 0, "completion_tokens": 0, "reasoning_tokens": 0}
    assert list(cached) == list(RequestTally().to_json()) == list(tally_requests(lines)["echo"].to_json())


def test_a_tally_holds_the_counts_and_ranks_the_answers_by_format_and_model() -> None:
    formats = ["json_object", "json_schema", "json_schema", "json_object", "text"]
    lines = [
        line(response_format=f, reply={"text": "{}", "model": m})
        for f, m in zip(formats, "abbcc", strict=True)
    ]
    tally = tally_requests([*lines, line(error="HTTP 500", response_format="text")])["echo"]
    assert tally.counts.requests == 6 and tally.counts.failures == 1
    # Ranked by count, ties in the order first seen (as run.json has always listed them).
    assert list(tally.to_json()["response_formats"]) == ["json_object", "json_schema", "text"]
    assert tally.to_json()["served_models"] == {"b": 2, "c": 2, "a": 1}


def from_the_file(run: Path) -> dict[str, Any]:
    """The request counts computed afresh from ``requests.jsonl``, without the engine's tally."""
    lines = list(read_jsonl(run / "requests.jsonl"))
    return {
        "requests": len(lines),
        "single_retries": sum(r["single"] for r in lines),
        "cache_hits": sum(r["cached"] for r in lines),
        "retries": sum(r["attempts"] - 1 for r in lines),
        "failures": sum(r["error"] is not None for r in lines),
        "prompt_tokens": sum(r["usage"]["prompt_tokens"] for r in lines if not r["cached"]),
    }


def counted(run: Path) -> dict[str, Any]:
    echo = json.loads((run / "run.json").read_text())["counts"]["echo"]
    return {
        key: echo["tokens"]["prompt_tokens"] if key == "prompt_tokens" else echo[key]
        for key in from_the_file(run)
    }


def test_counts_over_two_sessions_are_those_of_the_file(tmp_path: Path) -> None:
    """Session 1 fails one sample's requests; session 2 re-asks them: the counts hold both sessions' lines."""
    samples = make_samples(2, 5)
    broken = {"on": True}

    def handler(req: ChatRequest) -> Any:
        if broken["on"] and f"{samples[0].sample_id}#" in req.text:
            return server_error()
        return tiny_task.oracle(req)

    out = tmp_path / "run"
    with FakeOpenAIServer(handler) as server:
        for config in (tiny_config(), tiny_config(engine={"retry_failed": True})):
            result = asyncio.run(
                execute_run(
                    config, out, fast_options(), tasks=TINY_TASKS, model=provider_on(server), samples=samples
                )
            )
            assert counted(out) == from_the_file(out)
            broken["on"] = False
    assert result.status == "finished"
    assert counted(out)["requests"] == 6  # 4 in session 1, sample 0's 2 batches again in session 2
    assert counted(out)["failures"] == 2
    assert counted(out)["retries"] == 2 * 3


def test_a_misspelt_usage_key_of_a_request_line_is_an_error_naming_it() -> None:
    """``usage`` is :class:`~rescue_bench.records.Usage` on disk too: unknown keys are refused."""
    with pytest.raises(RunDirError, match=r"requests.jsonl:3: field 'usage.prompt_token'"):
        RequestLine.from_json({"task": "echo", "usage": {"prompt_token": 1}}, "requests.jsonl:3")
    assert line(usage={"prompt_tokens": 2}).usage == Usage(prompt_tokens=2)
    # Refused by Usage itself, not only by the model holding it (in a model that allows extra keys, the slots
    # dataclass would otherwise fail with an AttributeError).
    with pytest.raises(ValidationError, match="Unexpected keyword argument"):
        TypeAdapter(Usage).validate_python({"prompt_token": 1})


# --- what the endpoint said about each reply: its format and its model (issue 39) ------------------------


def small_model(request: ChatRequest) -> str:
    """A small model: the right answers when the server holds it to the schema, another shape otherwise."""
    fmt = request.response_format or {}
    held = fmt.get("type") == "json_schema" or "schema" in fmt
    return tiny_task.oracle(request) if held else json.dumps({"note": "Ana speaks next, I think."})


def test_a_refused_json_schema_is_recorded_per_task_and_named_in_the_degraded_reason(tmp_path: Path) -> None:
    with FakeOpenAIServer(llamacpp_python_format(small_model)) as server:
        stepped = asyncio.run(
            execute_run(
                tiny_config(),
                tmp_path / "openai",
                fast_options(),
                tasks=TINY_TASKS,
                model=provider_on(server, preset="openai"),
                samples=make_samples(2, 4),
            )
        )
        kept = asyncio.run(
            execute_run(
                tiny_config(),
                tmp_path / "llamacpp",
                fast_options(),
                tasks=TINY_TASKS,
                model=provider_on(server, preset="llamacpp-server"),
                samples=make_samples(2, 4),
            )
        )
    counts = json.loads((tmp_path / "openai" / "run.json").read_text())["counts"]["echo"]
    assert counts["response_formats"] == {"json_object": counts["requests"]}
    assert counts["served_models"] == {"m1": counts["requests"]}
    assert stepped.status == "degraded" and stepped.ending is not None
    reason = degraded_reason(stepped.ending)
    assert reason is not None and "asked in json_object (echo), without the answer's schema" in reason
    assert "llamacpp-server/" in reason
    lines = list(read_jsonl(tmp_path / "openai" / "requests.jsonl"))
    assert {(r["response_format"], r["reply"]["model"]) for r in lines} == {("json_object", "m1")}
    assert measured(load_run(tmp_path / "openai")).endswith("; answers asked as json_object")
    assert kept.status == "finished"
    kept_counts = json.loads((tmp_path / "llamacpp" / "run.json").read_text())["counts"]["echo"]
    assert kept_counts["response_formats"] == {"json_object+schema": kept_counts["requests"]}
