"""End-to-end runs of the engine with the tiny task against the fake server: faults, retries, resume."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.engine import tiny_task
from tests.engine.conftest import TINY_TASKS, fast_options, make_samples, provider_on, tiny_config
from tests.fakes.openai_server import (
    ChatRequest,
    FakeOpenAIServer,
    Script,
    hang,
    ok,
    rate_limited,
    refusal,
    reset,
    server_error,
    truncated_json,
    truncated_stream,
    unauthorized,
    unsupported_format,
)

from rescue_bench.data.schema import Row, Sample
from rescue_bench.engine.run import RunResult, execute_run
from rescue_bench.errors import ConfigError, ProviderError
from rescue_bench.models.base import Capabilities
from rescue_bench.pricing import Budget, Prices, chars_counter
from rescue_bench.records import Instance, Prediction, Reply, Request
from rescue_bench.rundir import RunStore, read_jsonl


def run(server: FakeOpenAIServer, out: Path, samples: list[Sample], **kw: Any) -> RunResult:
    config = kw.pop("config", tiny_config())
    options = kw.pop("options", fast_options())
    provider = kw.pop("provider", None) or provider_on(server)
    return asyncio.run(
        execute_run(config, out, options, tasks=TINY_TASKS, model=provider, samples=samples, **kw)
    )


def predictions(out: Path) -> list[dict[str, Any]]:
    return list(read_jsonl(out / "predictions.jsonl"))


def requests_log(out: Path) -> list[dict[str, Any]]:
    return list(read_jsonl(out / "requests.jsonl"))


def instance_ids(samples: list[Sample]) -> list[str]:
    return [f"{s.sample_id}::echo::{r.row_index}" for s in samples for r in s.rows]


def assert_each_instance_once(out: Path, samples: list[Sample]) -> list[dict[str, Any]]:
    lines = predictions(out)
    assert sorted(r["instance_id"] for r in lines) == sorted(instance_ids(samples))
    return lines


def test_run_scores_every_instance_once(server: FakeOpenAIServer, tmp_path: Path) -> None:
    samples = make_samples(3, 5)
    result = run(server, tmp_path / "run", samples)
    assert result.status == "finished"
    lines = assert_each_instance_once(tmp_path / "run", samples)
    assert all(r["valid"] and r["scores"]["correct"] == 1.0 for r in lines)
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert scores["echo"]["all"]["n"] == 15
    assert scores["echo"]["all"]["accuracy"] == 1.0
    assert server.count == 6  # 3 samples x 5 rows, batches of 3 within a sample
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["status"] == "finished"
    assert manifest["counts"]["echo"]["requests"] == 6
    assert manifest["model"] == {"provider": "vllm", "model": "m1", "base_url": server.base_url}
    assert manifest["prompt_hashes"] == {"echo": "echo-v1"}
    assert len(manifest["dataset"]["hash"]) == 64


FAULTS = {
    "429": lambda: rate_limited(0.05),
    "500": server_error,
    "503": lambda: server_error(503),
    "timeout": lambda: hang(6.0),
    "truncated_json": truncated_json,
    "truncated_stream": truncated_stream,
    "reset": reset,
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_retryable_faults_are_retried_and_counted(fault: str, tmp_path: Path) -> None:
    """Each request fails twice with the fault, then succeeds: 3 attempts each, as the script says."""

    def handler(req: ChatRequest) -> Any:
        return FAULTS[fault]() if req.nth <= 2 else tiny_task.oracle(req)

    samples = make_samples(2, 5)
    # Only the hang needs a short deadline; a loaded CI machine may take longer than that for a first
    # connection, which would count one attempt too many.
    timeout = 1.0 if fault == "timeout" else 10.0
    with FakeOpenAIServer(handler) as server:
        result = run(server, tmp_path / "run", samples, provider=provider_on(server, timeout=timeout))
        assert result.status == "finished"
        lines = assert_each_instance_once(tmp_path / "run", samples)
        assert all(r["valid"] for r in lines)
        logged = requests_log(tmp_path / "run")
        assert [r["attempts"] for r in logged] == [3] * 4
        assert server.count == 12
        assert result.counts["echo"].retries == 8


def test_retry_after_is_honoured(tmp_path: Path) -> None:
    def handler(req: ChatRequest) -> Any:
        return rate_limited(1) if req.nth == 1 else tiny_task.oracle(req)

    samples = make_samples(1, 3)
    with FakeOpenAIServer(handler) as server:
        started = time.perf_counter()
        run(server, tmp_path / "run", samples)
        elapsed = time.perf_counter() - started
        first, second = server.requests
    assert first.nth == 1 and second.nth == 2
    assert elapsed >= 1.0  # the client backoff alone (base 0.01 s, cap 0.05 s) would take far less


def test_exhausted_retries_record_failures_and_the_run_is_incomplete(tmp_path: Path) -> None:
    samples = make_samples(2, 5)
    sample0 = f"{samples[0].sample_id}#"

    def handler(req: ChatRequest) -> Any:
        return server_error() if sample0 in req.text else tiny_task.oracle(req)

    with FakeOpenAIServer(handler) as server:
        result = run(server, tmp_path / "run", samples)
        assert server.count == 2 * 4 + 2  # max_retries=3: 4 attempts per failing request
    # No answer is unfinished work, never a score: recorded with its reason, no scores.json.
    assert result.status == "incomplete" and result.scores is None
    assert result.stop_reason is not None and "5 instances got no answer (HTTP 500" in result.stop_reason
    assert result.ending is not None and sum(result.ending.unanswered["echo"].values()) == 5
    lines = {r["instance_id"]: r for r in assert_each_instance_once(tmp_path / "run", samples)}
    failed = [r for r in lines.values() if not r["valid"]]
    assert len(failed) == 5
    assert all(r["problems"][0].startswith("request_failed: HTTP 500") for r in failed)
    assert result.counts["echo"].request_failures == 5
    assert not (tmp_path / "run" / "scores.json").exists()


def test_other_4xx_fail_fast(tmp_path: Path) -> None:
    too_long = Script(
        status=400, error={"message": "maximum context length exceeded", "type": "invalid_request"}
    )
    with FakeOpenAIServer(lambda req: too_long) as server:
        result = run(server, tmp_path / "run", make_samples(1, 3))
        assert server.count == 1
    line = predictions(tmp_path / "run")[0]
    assert "HTTP 400" in line["problems"][0] and "maximum context length" in line["problems"][0]
    assert result.counts["echo"].retries == 0


def test_unauthorized_stops_the_run_resumably(tmp_path: Path) -> None:
    samples = make_samples(2, 3)
    with (
        FakeOpenAIServer(lambda req: unauthorized()) as server,
        pytest.raises(ProviderError, match="HTTP 401"),
    ):
        run(server, tmp_path / "run", samples)
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["status"] == "stopped"
    assert predictions(tmp_path / "run") == []
    with FakeOpenAIServer(tiny_task.oracle) as server:
        result = run(server, tmp_path / "run", samples)
    assert result.status == "finished"
    assert_each_instance_once(tmp_path / "run", samples)


def test_missing_and_wrong_ids_are_asked_again_singly(tmp_path: Path) -> None:
    """Batch replies answer c1 and a made-up c9; c2 and c3 are asked again alone."""

    def handler(req: ChatRequest) -> Any:
        items = tiny_task.items(req.text)
        if len(items) == 1:
            return tiny_task.oracle(req)
        return {
            "answers": [
                {"id": "c1", "answer": "yes" if items[0][3] == "Therapist" else "no"},
                {"id": "c9", "answer": "no"},
            ]
        }

    samples = make_samples(1, 3)
    with FakeOpenAIServer(handler) as server:
        result = run(server, tmp_path / "run", samples)
        assert server.count == 3  # one batch, then c2 and c3 alone
    lines = assert_each_instance_once(tmp_path / "run", samples)
    assert all(r["valid"] for r in lines)
    assert [r["single"] for r in lines] == [False, True, True]
    assert result.counts["echo"].single_retries == 2


def test_items_still_missing_after_the_single_ask_are_failures(tmp_path: Path) -> None:
    samples = make_samples(1, 3)
    with FakeOpenAIServer(lambda req: {"answers": [{"id": "c7", "answer": "no"}]}) as server:
        result = run(server, tmp_path / "run", samples)
        assert server.count == 4
    lines = assert_each_instance_once(tmp_path / "run", samples)
    assert [r["valid"] for r in lines] == [False] * 3
    assert all(r["problems"][0].startswith("missing") for r in lines)
    assert result.counts["echo"].parse_failures == 3


def test_truncated_batch_reply_is_not_parsed_and_its_items_are_asked_again_singly(tmp_path: Path) -> None:
    """The batch reply holds complete, right JSON but hit the token limit: none of it may count."""

    def handler(req: ChatRequest) -> Any:
        items = tiny_task.items(req.text)
        return ok(tiny_task.oracle(req), finish_reason="length" if len(items) > 1 else "stop")

    samples = make_samples(1, 3)
    with FakeOpenAIServer(handler) as server:
        result = run(server, tmp_path / "run", samples)
        assert server.count == 4  # the cut-off batch, then each item alone
    lines = assert_each_instance_once(tmp_path / "run", samples)
    assert [(r["valid"], r["single"]) for r in lines] == [(True, True)] * 3
    assert result.counts["echo"].single_retries == 3


def test_truncated_single_reply_is_a_recorded_failure(tmp_path: Path) -> None:
    samples = make_samples(1, 3)
    with FakeOpenAIServer(lambda req: ok(tiny_task.oracle(req), finish_reason="length")) as server:
        result = run(server, tmp_path / "run", samples)
        assert server.count == 4
    lines = assert_each_instance_once(tmp_path / "run", samples)
    assert [r["valid"] for r in lines] == [False] * 3
    assert all(r["problems"][0] == "parse_failure: truncated reply (finish_reason=length)" for r in lines)
    assert result.counts["echo"].parse_failures == 3


def test_unparsable_reply_is_a_counted_failure(tmp_path: Path) -> None:
    samples = make_samples(1, 3)
    with FakeOpenAIServer(lambda req: "I think the therapist should speak.") as server:
        result = run(server, tmp_path / "run", samples)
        assert server.count == 1
    assert [r["problems"][0].split(":")[0] for r in predictions(tmp_path / "run")] == ["parse_failure"] * 3
    assert result.scores is not None and result.scores["echo"]["all"]["parse_failures"] == 3


def sensitive_samples() -> list[Sample]:
    rows = (
        Row(row_index=1, primary_speaker="Ana", dialogue_cleaned="You are a dick."),
        Row(row_index=2, primary_speaker="Therapist", dialogue_cleaned="Let us slow down."),
    )
    return [Sample(sample_id="x1", scenario="couple", participants=("Ana", "Ben"), rows=rows)]


def test_moderation_refusal_is_retried_once_masked(tmp_path: Path) -> None:
    def handler(req: ChatRequest) -> Any:
        return refusal() if "dick" in req.text else tiny_task.oracle(req)

    samples = sensitive_samples()
    with FakeOpenAIServer(handler) as server:
        result = run(server, tmp_path / "run", samples)
        assert server.count == 2
        assert "d*** " not in server.requests[0].text and "d***." in server.requests[1].text
    assert all(r["valid"] for r in assert_each_instance_once(tmp_path / "run", samples))
    (logged,) = requests_log(tmp_path / "run")
    assert logged["masked"] and logged["refused"] and logged["attempts"] == 2
    assert result.counts["echo"].masked == 1


def test_persistent_refusal_is_recorded_as_failure(tmp_path: Path) -> None:
    samples = sensitive_samples()
    with FakeOpenAIServer(lambda req: refusal()) as server:
        run(server, tmp_path / "run", samples)
        assert server.count == 2
    lines = assert_each_instance_once(tmp_path / "run", samples)
    assert all("content moderation" in r["problems"][0] for r in lines)


def test_unsupported_response_format_falls_back_and_is_remembered(tmp_path: Path) -> None:
    def handler(req: ChatRequest) -> Any:
        fmt = (req.response_format or {}).get("type")
        return unsupported_format() if fmt == "json_schema" else tiny_task.oracle(req)

    samples = make_samples(3, 5)
    with FakeOpenAIServer(handler) as server:
        provider = provider_on(server)
        run(
            server,
            tmp_path / "run",
            samples,
            provider=provider,
            options=fast_options(engine={"concurrency": 1}),
        )
        formats = [(r.response_format or {}).get("type") for r in server.requests]
    assert formats == ["json_schema"] + ["json_object"] * 6
    assert provider.format_ceiling == "json_object"
    assert all(r["valid"] for r in predictions(tmp_path / "run"))


def test_rerun_resumes_without_asking_again(server: FakeOpenAIServer, tmp_path: Path) -> None:
    samples = make_samples(2, 5)
    run(server, tmp_path / "run", samples, options=fast_options(engine={"use_cache": False}))
    assert server.count == 4
    again = run(server, tmp_path / "run", samples, options=fast_options(engine={"use_cache": False}))
    assert server.count == 4
    assert again.status == "finished"
    assert_each_instance_once(tmp_path / "run", samples)
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["timings"]["sessions"] == 2


class PriorProvider:
    """Answers every instance with the most frequent gold of the instances it was prepared with (a prior)."""

    name = "baseline/prior"
    capabilities = Capabilities(cacheable=False, has_endpoint=False, batch_export=False)

    def __init__(self) -> None:
        self.seen: list[list[str]] = []
        self.prior = ""

    def identity(self) -> dict[str, Any]:
        return {"provider": "baseline", "model": "prior"}

    def prepare(self, instances: Sequence[Instance]) -> None:
        self.seen.append([i.id for i in instances])
        golds = [i.gold for i in instances]
        self.prior = max(("no", "yes"), key=golds.count)

    async def complete(self, request: Request, params: Any) -> Reply:
        return Reply(predictions=tuple(Prediction(i, self.prior, True) for i in request.instance_ids))

    async def aclose(self) -> None:
        return None


def test_resumed_provider_is_prepared_with_every_instance_so_the_prior_does_not_change(
    tmp_path: Path,
) -> None:
    samples = make_samples(1, 5)  # golds: yes no no yes no -> prior "no"
    out = tmp_path / "run"
    first = PriorProvider()
    asyncio.run(
        execute_run(tiny_config(), out, fast_options(), tasks=TINY_TASKS, model=first, samples=samples)
    )
    # A killed first session: only rows 2 and 3 (both "no") were recorded; the rest (yes yes no) lean "yes".
    kept = [r for r in predictions(out) if r["row_index"] in (2, 3)]
    (out / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    resumed = PriorProvider()
    result = asyncio.run(
        execute_run(tiny_config(), out, fast_options(), tasks=TINY_TASKS, model=resumed, samples=samples)
    )
    assert result.status == "finished"
    assert resumed.seen == [instance_ids(samples)]
    lines = assert_each_instance_once(out, samples)
    assert [r["prediction"] for r in lines] == ["no"] * 5
    assert not any(r["single"] for r in requests_log(out))  # typed answers are never asked again singly


def test_cache_answers_a_new_run_of_the_same_config(server: FakeOpenAIServer, tmp_path: Path) -> None:
    samples = make_samples(2, 5)
    run(server, tmp_path / "a", samples)
    second = run(server, tmp_path / "b", samples)
    assert server.count == 4
    assert second.counts["echo"].cache_hits == 4
    assert all(r["cached"] for r in requests_log(tmp_path / "b"))


def test_retry_failed_reasks_only_invalid_instances(tmp_path: Path) -> None:
    samples = make_samples(2, 3)
    broken = {"on": True}

    def handler(req: ChatRequest) -> Any:
        items = tiny_task.items(req.text)
        if broken["on"] and items[0][1] == samples[0].sample_id:
            return "not json"
        return tiny_task.oracle(req)

    with FakeOpenAIServer(handler) as server:
        first = run(server, tmp_path / "run", samples)
        assert first.counts["echo"].invalid == 3
        broken["on"] = False
        run(server, tmp_path / "run", samples)  # plain resume: nothing to do
        assert server.count == 2
        again = tiny_config(engine={"retry_failed": True})
        second = run(server, tmp_path / "run", samples, config=again)
        assert server.count == 3  # only sample 0's batch again, past the cache
    assert second.counts["echo"].invalid == 0
    lines = assert_each_instance_once(tmp_path / "run", samples)  # compacted: latest line wins
    assert all(r["valid"] for r in lines)


def test_changed_config_is_refused_naming_the_change(server: FakeOpenAIServer, tmp_path: Path) -> None:
    samples = make_samples(1, 3)
    run(server, tmp_path / "run", samples)
    with pytest.raises(ConfigError, match=r"batch_size: None -> 2"):
        run(server, tmp_path / "run", samples, config=tiny_config(batch_size=2))
    with pytest.raises(ConfigError, match="dataset content"):
        run(server, tmp_path / "run", make_samples(2, 3))
    with pytest.raises(ConfigError, match="model model: 'm1' -> 'm2'"):
        run(server, tmp_path / "run", samples, provider=provider_on(server, model="m2"))


def test_budget_stops_cleanly_and_resumes(server: FakeOpenAIServer, tmp_path: Path) -> None:
    samples = make_samples(3, 5)
    prices = Prices(1000.0, 1000.0)  # dollars per million tokens: each request costs about $0.3 at most
    options = fast_options(engine={"concurrency": 1}, budget=Budget(1.0, prices, chars_counter()))
    first = run(server, tmp_path / "run", samples, options=options)
    assert first.status == "stopped" and first.stop_reason and "budget" in first.stop_reason
    assert not (tmp_path / "run" / "scores.json").exists()
    done = predictions(tmp_path / "run")
    assert 0 < len(done) < 15
    second = run(server, tmp_path / "run", samples)
    assert second.status == "finished"
    assert_each_instance_once(tmp_path / "run", samples)
    assert server.count == 6


def test_every_run_writes_run_json_before_it_asks_and_records_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    write, append = RunStore.write_manifest, RunStore.append_predictions

    def write_manifest(self: RunStore, manifest: Any) -> None:
        events.append("run.json")
        write(self, manifest)

    def append_predictions(self: RunStore, records: Any) -> Any:
        assert self.run_file.exists()
        events.append("record")
        return append(self, records)

    def asking(server: FakeOpenAIServer) -> Any:
        provider = provider_on(server)
        complete = provider.complete

        async def traced(request: Any, params: Any) -> Any:
            events.append("ask")
            return await complete(request, params)

        monkeypatch.setattr(provider, "complete", traced)
        return provider

    monkeypatch.setattr(RunStore, "write_manifest", write_manifest)
    monkeypatch.setattr(RunStore, "append_predictions", append_predictions)
    samples = make_samples(2, 3)
    with FakeOpenAIServer(tiny_task.oracle) as server:
        assert run(server, tmp_path / "new", samples, provider=asking(server)).status == "finished"
    # A new directory, like one with a run in it: run.json first, then the requests, then their records.
    assert events[0] == "run.json" and events.index("ask") < events.index("record")
    events.clear()
    with FakeOpenAIServer(lambda req: unauthorized()) as server, pytest.raises(ProviderError):
        run(server, tmp_path / "run", samples, provider=asking(server))
    assert events[0] == "run.json" and "ask" in events and "record" not in events  # stopped, resumable
    events.clear()
    with FakeOpenAIServer(tiny_task.oracle) as server:
        assert run(server, tmp_path / "run", samples, provider=asking(server)).status == "finished"
    # A directory with a run in it: run.json is checked and written before anything is asked.
    assert events[0] == "run.json" and events.index("ask") < events.index("record")
