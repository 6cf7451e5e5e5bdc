"""Batch API export and import: answering the exported file with the same replies gives the online scores."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.engine import tiny_task
from tests.engine.conftest import (
    TINY_TASKS,
    fast_options,
    make_samples,
    provider_on,
    tiny_config,
    write_jsonl,
)
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer

from rescue_bench.batch.offline import export_batch, import_results, read_results
from rescue_bench.engine.run import RunOptions, RunResult, execute_run
from rescue_bench.errors import ConfigError
from rescue_bench.rundir import RunStore, read_jsonl
from rescue_bench.tasks.base import Task


def import_batch(
    results: Path, run_dir: Path, tasks: dict[str, Task] = TINY_TASKS, base_url: str | None = None
) -> tuple[RunResult, Any]:
    """``batch import`` of the tiny task's run: the results file as the session's way of asking (the CLI hands
    the same asker to the run operation, which also judges; the tiny task has nothing to judge)."""
    spec, asker = import_results(results, run_dir, tasks=tasks, base_url=base_url)
    options = RunOptions(asker=asker, quiet=True)
    return asyncio.run(execute_run(spec, run_dir, options, tasks=tasks)), spec


def answer_line(line: dict[str, Any], index: int) -> dict[str, Any]:
    """What the Batch API returns for one request line, answered by the oracle."""
    request = ChatRequest(index, line["url"], {}, line["body"], 1)
    content = tiny_task.oracle(request)
    body = {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "model": line["body"]["model"],
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return {
        "id": f"batch_req_{index}",
        "custom_id": line["custom_id"],
        "error": None,
        "response": {"status_code": 200, "request_id": f"req_{index}", "body": body},
    }


def test_export_answer_import_equals_online(tmp_path: Path, monkeypatch: Any) -> None:
    samples = make_samples(4, 5)
    data = str(write_jsonl(tmp_path / "data.jsonl", samples))
    config = tiny_config(data=data)

    with FakeOpenAIServer(tiny_task.oracle) as server:
        online = asyncio.run(
            execute_run(
                config, tmp_path / "online", fast_options(), tasks=TINY_TASKS, model=provider_on(server)
            )
        )

    exported = export_batch(
        config, samples, tmp_path / "requests.jsonl", tmp_path / "offline", tasks=TINY_TASKS
    )
    lines = [json.loads(x) for x in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert exported.requests == len(lines) == 8
    first = lines[0]
    assert set(first) == {"custom_id", "method", "url", "body"}
    assert first["method"] == "POST" and first["url"] == "/v1/chat/completions"
    assert first["body"]["model"] == "m1" and first["body"]["response_format"]["type"] == "json_schema"
    assert len({line["custom_id"] for line in lines}) == 8
    assert json.loads((tmp_path / "offline" / "run.json").read_text())["status"] == "exported"

    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(json.dumps(answer_line(line, i)) + "\n" for i, line in enumerate(reversed(lines)))
    )
    assert len(read_results(results)) == 8
    imported, _ = import_batch(results, tmp_path / "offline")

    assert imported.status == "finished" and online.scores is not None and imported.scores is not None
    assert imported.scores["echo"] == online.scores["echo"]
    offline_preds = list(read_jsonl(tmp_path / "offline" / "predictions.jsonl"))
    online_preds = list(read_jsonl(tmp_path / "online" / "predictions.jsonl"))
    assert [(p["instance_id"], p["prediction"], p["valid"]) for p in offline_preds] == [
        (p["instance_id"], p["prediction"], p["valid"]) for p in online_preds
    ]


def test_missing_and_failed_results_are_recorded_failures(tmp_path: Path, monkeypatch: Any) -> None:
    samples = make_samples(2, 3)
    config = tiny_config(data=str(write_jsonl(tmp_path / "data.jsonl", samples)))
    export_batch(config, samples, tmp_path / "requests.jsonl", tmp_path / "run", tasks=TINY_TASKS)
    lines = [json.loads(x) for x in (tmp_path / "requests.jsonl").read_text().splitlines()]
    failed = {
        "custom_id": lines[0]["custom_id"],
        "response": {"status_code": 500, "body": {"error": {"message": "server overloaded"}}},
        "error": None,
    }
    (tmp_path / "results.jsonl").write_text(json.dumps(failed) + "\n")  # the second request has no result
    result, _ = import_batch(tmp_path / "results.jsonl", tmp_path / "run")
    preds = list(read_jsonl(tmp_path / "run" / "predictions.jsonl"))
    assert len(preds) == 6 and not any(p["valid"] for p in preds)
    assert {p["problems"][0].split(":")[0] for p in preds} == {"request_failed"}
    assert "HTTP 500: server overloaded" in preds[0]["problems"][0]
    assert "no answer" in preds[3]["problems"][0]
    assert result.counts["echo"].request_failures == 6


def exported(tmp_path: Path, name: str, samples: list[Any]) -> tuple[Path, list[dict[str, Any]]]:
    """A ``batch export`` of the tiny task into ``tmp_path/name``; the run directory and the request lines."""
    config = tiny_config(data=str(write_jsonl(tmp_path / f"{name}.jsonl", samples)))
    export_batch(config, samples, tmp_path / f"{name}-requests.jsonl", tmp_path / name, tasks=TINY_TASKS)
    lines = (tmp_path / f"{name}-requests.jsonl").read_text().splitlines()
    return tmp_path / name, [json.loads(x) for x in lines]


def write_results(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(answer_line(line, i)) + "\n" for i, line in enumerate(lines)))
    return path


def test_results_of_another_run_are_refused_and_the_right_file_then_imports(tmp_path: Path) -> None:
    run, lines = exported(tmp_path, "run", make_samples(2, 3))
    _, others = exported(tmp_path, "other", make_samples(4, 3)[2:])
    wrong = write_results(tmp_path / "other-results.jsonl", others)
    with pytest.raises(ConfigError) as refused:
        import_batch(wrong, run)
    message = str(refused.value)
    assert str(wrong) in message and f"{len(others)} of {len(others)} results" in message
    assert "\n" not in message
    assert not (run / "predictions.jsonl").exists() and not (run / "requests.jsonl").exists()
    assert json.loads((run / "run.json").read_text())["status"] == "exported"

    mixed = write_results(tmp_path / "mixed.jsonl", [*lines, others[0]])
    with pytest.raises(ConfigError, match=f"1 of {len(lines) + 1} results"):
        import_batch(mixed, run)

    result, _ = import_batch(write_results(tmp_path / "results.jsonl", lines), run)
    assert result.status == "finished" and result.counts["echo"].valid == 6


def test_a_complete_file_after_a_partial_one_completes_the_run(tmp_path: Path) -> None:
    run, lines = exported(tmp_path, "run", make_samples(2, 3))
    first, _ = import_batch(write_results(tmp_path / "half.jsonl", lines[:1]), run)
    assert first.counts["echo"].request_failures == 3
    second, _ = import_batch(write_results(tmp_path / "all.jsonl", lines), run)
    assert second.status == "finished" and second.counts["echo"].valid == 6


def test_a_key_echoed_in_imported_results_is_not_recorded(tmp_path: Path, monkeypatch: Any) -> None:
    secret = "sk-IMPORT-ECHO-0123456789"
    monkeypatch.setenv("VLLM_API_KEY", secret)  # the key the run's endpoint (vllm/m1) would be sent
    run, lines = exported(tmp_path, "run", make_samples(1, 3))
    results = [answer_line(line, i) for i, line in enumerate(lines)]
    for result in results:
        result["response"]["body"]["choices"][0]["message"]["reasoning_content"] = f"key {secret} seen"
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    import_batch(tmp_path / "results.jsonl", run)
    recorded = (run / "requests.jsonl").read_text()
    assert "key [redacted] seen" in recorded
    assert all(secret.encode() not in p.read_bytes() for p in run.iterdir())


def test_a_base_url_query_key_echoed_in_imported_results_is_not_recorded(tmp_path: Path) -> None:
    """Failure 6: the --base-url query key ``batch export`` was given, echoed back by the results file, is
    redacted by ``batch import --base-url`` as ``run --batch`` redacts it (run.json holds no secret)."""
    secret = "qk-URL-ECHO-0123456789"
    run, lines = exported(tmp_path, "run", make_samples(1, 3))
    results = [answer_line(line, i) for i, line in enumerate(lines)]
    for result in results:
        result["response"]["body"]["choices"][0]["message"]["reasoning_content"] = f"query {secret} seen"
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    given = f"http://gw/v1?api-key={secret}"
    import_batch(tmp_path / "results.jsonl", run, tasks=TINY_TASKS, base_url=given)
    assert "query [redacted] seen" in (run / "requests.jsonl").read_text()
    assert all(secret.encode() not in p.read_bytes() for p in run.iterdir())


def test_batch_export_is_refused_while_another_writer_holds_the_run(tmp_path: Path) -> None:
    samples = make_samples(1, 3)
    config = tiny_config(data=str(write_jsonl(tmp_path / "data.jsonl", samples)))
    holder = RunStore(tmp_path / "run")
    holder.lock()  # a run (or a score) of that directory in progress
    with pytest.raises(ConfigError, match="in use by another rescue-bench process"):
        export_batch(config, samples, tmp_path / "requests.jsonl", tmp_path / "run", tasks=TINY_TASKS)
    holder.unlock()
    assert not (tmp_path / "run" / "run.json").exists() and not (tmp_path / "requests.jsonl").exists()
