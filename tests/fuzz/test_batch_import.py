"""Fuzzing batch import: a results file gives replies (failed ones for unreadable lines) or a DataError.

Documented outcomes (:mod:`rescue_bench.batch.offline`): a line that is not JSON or has no string
``custom_id`` is a :class:`DataError` naming ``file:line``; a line whose result cannot be read is a failed
reply, recorded for its request like any failed request, and the import still scores every instance once.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fuzz.conftest import FUZZ, JSON_VALUES, PATHS, TEXT, corpus_files, mutate

from rescue_bench.batch.offline import custom_id, export_batch, import_results, read_results
from rescue_bench.data.load import load_samples
from rescue_bench.data.synth import write_synthetic
from rescue_bench.engine.plans import build_plans
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.evaluation.run import execute, prepare
from rescue_bench.records import Reply
from rescue_bench.rundir import read_jsonl
from rescue_bench.spec import RunSpec

OK_LINE: dict[str, Any] = {
    "custom_id": "itp-0",
    "response": {
        "status_code": 200,
        "body": {
            "choices": [{"message": {"content": "{}", "reasoning_content": "r"}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": 5,
                "completion_tokens": 2,
                "completion_tokens_details": {"reasoning_tokens": 1},
            },
        },
    },
}


def read(path: Path) -> dict[str, Reply] | BaseException:
    try:
        return read_results(path)
    except (DataError, ConfigError) as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        return exc


def check_replies(replies: dict[str, Reply]) -> None:
    for reply in replies.values():
        assert isinstance(reply.text, str)
        if reply.ok:
            usage = reply.usage
            assert all(type(n) is int and n >= 0 for n in (usage.prompt_tokens, usage.completion_tokens))
        else:
            assert isinstance(reply.error, str) and reply.error


@pytest.mark.parametrize("path", corpus_files("batch"), ids=lambda p: p.name)
def test_corpus_results_files(path: Path) -> None:
    result = read(path)
    if not isinstance(result, BaseException):
        check_replies(result)


def test_unreadable_results_are_failed_replies() -> None:
    replies = read(Path(__file__).parent / "corpus" / "batch" / "malformed_results.jsonl")
    assert isinstance(replies, dict), replies
    assert sorted(replies) == list("abcdefghi")
    assert [k for k, r in replies.items() if r.ok] == []


@FUZZ
@given(path=PATHS, value=JSON_VALUES, delete=st.booleans(), cid=TEXT)
def test_fuzz_result_lines(tmp_path: Path, path: list[Any], value: Any, delete: bool, cid: str) -> None:
    line = mutate({**OK_LINE, "custom_id": cid}, path, value, delete)
    target = tmp_path / "results.jsonl"
    target.write_text(
        json.dumps(OK_LINE) + "\n" + json.dumps(line) + "\n", encoding="utf-8", errors="surrogatepass"
    )
    result = read(target)
    if not isinstance(result, BaseException):
        check_replies(result)


def test_import_scores_every_instance_once_despite_garbage(tmp_path: Path) -> None:
    data = write_synthetic(tmp_path / "data.jsonl", samples=2, seed=5).path
    config = RunSpec(model="openai/gpt-4o-mini", tasks=("itp", "er"), data=str(data))
    samples = load_samples(data)
    export_batch(config, samples, tmp_path / "batch.jsonl", tmp_path / "run")
    plans = build_plans(samples, config)
    requests = [plan.task.render(batch, plan.cfg) for plan in plans for batch in plan.batches]
    lines = []
    for number, request in enumerate(requests):
        good = {
            "predictions": [
                {"id": f"c{i}", "should_speak": "no", "emotion": "feels calm", "intensity": 2}
                for i in range(1, len(request.instance_ids) + 1)
            ]
        }
        record: dict[str, Any] = json.loads(json.dumps(OK_LINE))
        record["custom_id"] = custom_id(request)
        record["response"]["body"]["choices"][0]["message"]["content"] = json.dumps(good)
        if number % 3 == 1:
            record["response"]["body"]["choices"][0]["message"] = "garbled"
        elif number % 3 == 2:
            record["response"]["body"]["usage"] = {"prompt_tokens": "many"}
        lines.append(json.dumps(record))
    (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n")
    spec, asker = import_results(tmp_path / "results.jsonl", tmp_path / "run")
    result = asyncio.run(execute(prepare(spec, asker)))
    predictions = list(read_jsonl(tmp_path / "run" / "predictions.jsonl"))
    ids = [p["instance_id"] for p in predictions]
    assert sorted(ids) == sorted(i.id for plan in plans for i in plan.instances)
    failed = [p for p in predictions if (p["problems"] or [""])[0].startswith("request_failed")]
    assert failed and len(failed) < len(predictions)
    # Garbled result lines answered nothing: unfinished work, asked again by the next import or run.
    assert result.status == "incomplete"
