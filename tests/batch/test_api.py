"""``run --batch`` against a fake Files + Batches server: the online results, re-submits, resume, cancel."""

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
from tests.fakes.batch_server import BatchPlan, FakeBatchServer
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, echo_key
from typer.testing import CliRunner

from rescue_bench.batch.asker import BatchApi
from rescue_bench.batch.ledger import BatchLedger
from rescue_bench.batch.offline import export_batch
from rescue_bench.batch.plan import BatchOptions
from rescue_bench.cli.main import app
from rescue_bench.engine.run import RunResult, execute_run
from rescue_bench.errors import ConfigError, ProviderError
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import get_preset
from rescue_bench.rundir import read_jsonl

FAST = BatchOptions(poll=0.01, poll_cap=0.04)


def batch_run(server: FakeOpenAIServer, out: Path, data: str, **changes: Any) -> RunResult:
    config = tiny_config(data=data, batch=True, **changes)
    options = fast_options(asker=BatchApi(FAST))
    return asyncio.run(execute_run(config, out, options, tasks=TINY_TASKS, model=provider_on(server)))


def predictions(out: Path) -> list[dict[str, Any]]:
    return list(read_jsonl(out / "predictions.jsonl"))


@pytest.fixture
def data(tmp_path: Path) -> str:
    return str(write_jsonl(tmp_path / "data.jsonl", make_samples(4, 5)))


def test_a_batch_run_gives_the_online_predictions_and_scores(tmp_path: Path, data: str) -> None:
    with FakeOpenAIServer(tiny_task.oracle) as online_server:
        config = tiny_config(data=data)
        online = asyncio.run(
            execute_run(
                config,
                tmp_path / "online",
                fast_options(),
                tasks=TINY_TASKS,
                model=provider_on(online_server),
            )
        )
    with FakeBatchServer(tiny_task.oracle) as server:
        batched = batch_run(server, tmp_path / "batch", data)
        assert server.uploads == 1 and len(server.created) == 1
        assert server.count == 0  # not one chat completion: everything went through the batch
        assert len(server.batch_lines) == online_server.count == 8
    assert batched.status == "finished" and online.scores is not None
    assert batched.scores == online.scores
    assert predictions(tmp_path / "batch") == predictions(tmp_path / "online")
    run = json.loads((tmp_path / "batch" / "run.json").read_text())
    assert run["options"]["batch"] == {
        "batches": 1,
        "requests_sent": 8,
        "resubmitted": 0,
        "completed": 1,
        "failed": 0,
        "expired": 0,
        "cancelled": 0,
        "active": 0,
    }
    ledger = BatchLedger(tmp_path / "batch")
    assert [e.batch_id for e in ledger.batches()] == server.created
    assert [e.status for e in ledger.events if e.event == "status"] == ["in_progress", "completed"]


def test_a_missing_item_is_asked_singly_in_the_next_batch(tmp_path: Path, data: str) -> None:
    def drop_c2(request: ChatRequest) -> Any:
        answer = json.loads(tiny_task.oracle(request))
        if len(answer["answers"]) > 1:
            answer["answers"] = [a for a in answer["answers"] if a["id"] != "c2"]
        return answer

    with FakeOpenAIServer(drop_c2) as online_server:
        online = asyncio.run(
            execute_run(
                tiny_config(data=data),
                tmp_path / "online",
                fast_options(),
                tasks=TINY_TASKS,
                model=provider_on(online_server),
            )
        )
    with FakeBatchServer(drop_c2) as server:
        batched = batch_run(server, tmp_path / "batch", data)
        assert len(server.created) == 2  # the first requests, then their single re-asks
        assert len(server.batch_lines) == online_server.count
    assert batched.scores == online.scores
    assert predictions(tmp_path / "batch") == predictions(tmp_path / "online")
    assert batched.counts["echo"].single_retries == online.counts["echo"].single_retries > 0


def test_partial_failures_are_submitted_again(tmp_path: Path, data: str) -> None:
    half = _ids_of_half(data, tmp_path)  # these lines of the first batch fail with HTTP 500 (error file)
    with FakeBatchServer(tiny_task.oracle, plans=[BatchPlan(fail=tuple(half)), BatchPlan()]) as server:
        result = batch_run(server, tmp_path / "run", data)
        resent = server.batch_lines[8:]
    assert result.status == "finished"
    assert len(resent) == 4 and {line["custom_id"] for line in resent} == set(half)
    assert all(p["valid"] for p in predictions(tmp_path / "run"))
    summary = json.loads((tmp_path / "run" / "run.json").read_text())["options"]["batch"]
    assert summary["batches"] == 2 and summary["resubmitted"] == 4 and summary["completed"] == 2


def _ids_of_half(data: str, tmp_path: Path) -> list[str]:
    """The custom ids of half the run's requests (as the export would name them)."""
    config = tiny_config(data=data)
    out = tmp_path / "ids.jsonl"
    export_batch(config, make_samples(4, 5), out, tmp_path / "ids", tasks=TINY_TASKS)
    return [json.loads(line)["custom_id"] for line in out.read_text().splitlines()][::2]


def test_expired_requests_are_submitted_again_and_bounded(tmp_path: Path, data: str) -> None:
    expire = BatchPlan(states=("validating", "in_progress", "expired"), answered=5)
    with FakeBatchServer(tiny_task.oracle, plans=[expire, BatchPlan()]) as server:
        result = batch_run(server, tmp_path / "run", data)
        assert [len(_lines_of(server, b)) for b in server.created] == [8, 3]
    assert result.status == "finished" and all(p["valid"] for p in predictions(tmp_path / "run"))
    summary = json.loads((tmp_path / "run" / "run.json").read_text())["options"]["batch"]
    assert summary["expired"] == 1 and summary["resubmitted"] == 3

    # Always expiring: each request goes out 1 + max_resubmits times, then its failure is recorded.
    never = BatchPlan(states=("in_progress", "expired"), answered=0)
    with FakeBatchServer(tiny_task.oracle, plans=[never]) as server:
        result = batch_run(server, tmp_path / "never", data)
        assert len(server.created) == 1 + FAST.max_resubmits
    # Requests that never got an answer are unfinished work: the run is incomplete, and a re-run asks again.
    assert result.status == "incomplete" and result.scores is None
    preds = predictions(tmp_path / "never")
    assert len(preds) == 20 and not any(p["valid"] for p in preds)
    assert all("expired" in p["problems"][0] for p in preds)
    assert result.counts["echo"].request_failures == 20


def _lines_of(server: FakeBatchServer, batch_id: str) -> list[str]:
    return server.files[server.batches[batch_id].input_file_id].splitlines()


def test_a_cancelled_batch_is_reported_and_a_rerun_submits_the_rest(tmp_path: Path, data: str) -> None:
    cancel = BatchPlan(states=("validating", "in_progress", "cancelled"), answered=3)
    with FakeBatchServer(tiny_task.oracle, plans=[cancel, BatchPlan()]) as server:
        stopped = batch_run(server, tmp_path / "run", data)
        assert stopped.status == "stopped" and stopped.stop_reason is not None
        assert f"batch {server.created[0]} was cancelled (5 of 8 requests unanswered)" in stopped.stop_reason
        assert len(predictions(tmp_path / "run")) == 3 + 2 + 3  # the instances of the 3 answered requests
        assert len(server.created) == 1
        resumed = batch_run(server, tmp_path / "run", data)
        assert len(server.created) == 2 and len(_lines_of(server, server.created[1])) == 5
    assert resumed.status == "finished"
    assert sorted(p["instance_id"] for p in predictions(tmp_path / "run")) == sorted(
        {p["instance_id"] for p in predictions(tmp_path / "run")}
    )
    assert len(predictions(tmp_path / "run")) == 20


def test_a_provider_without_a_batch_api_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    config = tiny_config(model="baseline/random", batch=True)
    with pytest.raises(ConfigError, match="has no Batch API"):
        asyncio.run(
            execute_run(
                config,
                tmp_path / "run",
                fast_options(asker=BatchApi()),
                tasks=TINY_TASKS,
                samples=make_samples(1, 3),
            )
        )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("settings", [{"repeats": 2}, {"perturb": ("label-order:all",)}])
def test_repeats_through_run_batch_are_refused_before_anything_is_written(
    tmp_path: Path, settings: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = tiny_config(model="openai/gpt-4o-mini", batch=True, **settings)
    with pytest.raises(ConfigError, match="--batch asks each instance once"):
        asyncio.run(
            execute_run(
                config,
                tmp_path / "run",
                fast_options(asker=BatchApi()),
                tasks=TINY_TASKS,
                samples=make_samples(1, 3),
            )
        )
    assert not (tmp_path / "run").exists()


def test_batch_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="--batch-poll"):
        BatchOptions(poll=0)


def test_the_batch_flag_and_spec_key_and_their_refusals(tmp_path: Path) -> None:
    cli = CliRunner()
    spec = tmp_path / "s.toml"
    spec.write_text('batch = true\n[model]\nname = "openai/gpt-4o-mini"\n')
    printed = cli.invoke(app, ["run", "--spec", str(spec), "--print-spec"])
    assert printed.exit_code == 0 and "batch = true" in printed.output
    flagged = cli.invoke(app, ["run", "--model", "openai/gpt-4o-mini", "--batch", "--print-spec"])
    assert "batch = true" in flagged.output
    out = tmp_path / "run"
    refused = cli.invoke(app, ["run", "--model", "baseline/random", "--batch", "--out", str(out), "-q"])
    assert refused.exit_code == 2 and "has no Batch API" in refused.output
    bad = cli.invoke(
        app, ["run", "--model", "baseline/random", "--batch", "--batch-poll", "0", "--out", str(out)]
    )
    assert bad.exit_code == 2 and "--batch-poll must be > 0" in bad.output
    assert not out.exists()


def test_a_key_echoed_in_batch_results_is_never_recorded_or_cached(tmp_path: Path, data: str) -> None:
    secret = "sk-BATCH-ECHO-0123456789abcdef"
    cache = tmp_path / "cache.sqlite3"
    with FakeBatchServer(echo_key) as server:
        provider = OpenAICompatProvider(
            "m1", preset=get_preset("vllm"), base_url=server.base_url, api_key=secret, timeout=5.0
        )
        config = tiny_config(data=data, batch=True)
        options = fast_options(asker=BatchApi(FAST), cache_path=cache)
        asyncio.run(execute_run(config, tmp_path / "run", options, tasks=TINY_TASKS, model=provider))
        assert server.created and server.count == 0  # answered through the Batch API, not online
    replies = [r["reply"] for r in read_jsonl(tmp_path / "run" / "requests.jsonl")]
    assert replies and all("[redacted]" in r["text"] and "[redacted]" in r["reasoning"] for r in replies)
    for path in [*(tmp_path / "run").iterdir(), cache]:
        assert secret.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("output", ["garbage", "missing", "duplicate"])
def test_an_output_file_that_cannot_be_read_is_submitted_again_not_waited_on(
    tmp_path: Path, data: str, output: str
) -> None:
    with FakeBatchServer(tiny_task.oracle, plans=[BatchPlan(output=output), BatchPlan()]) as server:
        result = batch_run(server, tmp_path / "run", data)
        assert len(server.created) == 2 and len(server.batch_lines) == 16
    assert result.status == "finished" and all(p["valid"] for p in predictions(tmp_path / "run"))


def test_an_output_file_never_readable_ends_in_recorded_failures(tmp_path: Path, data: str) -> None:
    with FakeBatchServer(tiny_task.oracle, plans=[BatchPlan(output="garbage")]) as server:
        first = batch_run(server, tmp_path / "run", data)
        assert len(server.created) == 1 + FAST.max_resubmits
    # No answer is unfinished work: the run is incomplete, with the reason, and a re-run submits again.
    assert first.status == "incomplete" and first.stop_reason is not None
    assert "not valid JSON" in first.stop_reason
    preds = predictions(tmp_path / "run")
    assert len(preds) == 20 and not any(p["valid"] for p in preds)
    assert all("not valid JSON" in p["problems"][0] for p in preds)
    assert first.counts["echo"].request_failures == 20


def test_an_unknown_batch_status_is_one_line_and_the_run_resumes(tmp_path: Path, data: str) -> None:
    odd = BatchPlan(states=("validating", "paused\x1b]0;x\x07"))
    with FakeBatchServer(tiny_task.oracle, plans=[odd]) as server:
        with pytest.raises(ProviderError) as caught:
            batch_run(server, tmp_path / "run", data)
        server.plans[0] = BatchPlan()
        server.batches[server.created[0]].plan = BatchPlan()
        resumed = batch_run(server, tmp_path / "run", data)
        assert server.uploads == 1  # the same batch, polled again: nothing uploaded twice
    message = str(caught.value)
    assert message.startswith(
        f"batch {server.created[0]}: the endpoint reports status 'paused\\x1b]0;x\\x07'"
    )
    assert "\x1b" not in message and message.endswith("re-run to poll the batch again")
    assert resumed.status == "finished"


def test_a_batch_reply_over_the_size_cap_is_a_failure_never_stored(tmp_path: Path, data: str) -> None:
    def big_first(request: ChatRequest) -> str:
        answer = tiny_task.oracle(request)
        return answer if request.index else answer[:-1] + ', "pad": "' + "x" * (5 * 2**20) + '"}'

    with FakeBatchServer(big_first) as server:
        batch_run(server, tmp_path / "run", data)
    requests = (tmp_path / "run" / "requests.jsonl").read_text()
    assert len(requests) < 2**20
    # The first batch's reply line is over the cap; re-submitted alone, its file exceeds one reply's cap.
    assert "exceeds max_reply_bytes=4,194,304" in requests or "bytes; not read further" in requests
    assert all(
        len(line) < 2**20 for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    )


def test_a_batch_file_larger_than_its_replies_can_be_is_not_read(tmp_path: Path, data: str) -> None:
    first: list[int] = []

    def huge_once(request: ChatRequest) -> str:
        answer = tiny_task.oracle(request)
        if request.index == 0 and not first:
            first.append(1)
            return answer[:-1] + ', "pad": "' + "x" * 2**20 + '"}'
        return answer

    with FakeBatchServer(huge_once, plans=[BatchPlan(), BatchPlan()]) as server:
        provider = OpenAICompatProvider(
            "m1", preset=get_preset("vllm"), base_url=server.base_url, api_key="sk-test", max_reply_bytes=4096
        )
        config = tiny_config(data=data, batch=True)
        options = fast_options(asker=BatchApi(FAST))
        result = asyncio.run(execute_run(config, tmp_path / "run", options, tasks=TINY_TASKS, model=provider))
        assert len(server.created) == 2  # the 1 MiB file of 8 replies capped at 4 KiB: submitted again
    assert result.status == "finished" and all(p["valid"] for p in predictions(tmp_path / "run"))
    assert (tmp_path / "run" / "requests.jsonl").stat().st_size < 100_000


def test_a_dead_batch_api_ends_incomplete_as_a_dead_endpoint_does_online(tmp_path: Path, data: str) -> None:
    """W34: one status for one situation: no Files/Batches API answering is unfinished work (incomplete,
    exit 4), every request recorded as no answer and asked again by a re-run, not ``stopped``."""
    with FakeBatchServer(tiny_task.oracle) as server:
        pass  # closed: its port refuses every connection
    result = batch_run(server, tmp_path / "run", data)
    assert result.status == "incomplete", result.stop_reason
    recorded = predictions(tmp_path / "run")
    assert recorded and all(p["problems"][0].startswith("request_failed: ") for p in recorded)
    with FakeBatchServer(tiny_task.oracle) as back:
        again = batch_run(back, tmp_path / "run", data)
    assert again.status == "finished", again.stop_reason
