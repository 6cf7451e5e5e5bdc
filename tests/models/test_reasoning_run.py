"""A reasoning model's run against the fake server: replies cut off at the cap or empty after their reasoning
are counted in run.json (and stay parse failures), reasoning tokens are counted, and reasoning text is kept
beside the reply and never parsed as the answer."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, Script, schema_answer

from rescue_bench.evaluation.run import run
from rescue_bench.report import run_tables
from rescue_bench.rundir import load_run, read_jsonl
from rescue_bench.spec import validate_spec

CUT, EMPTY = "cut", "empty"


class Thinker:
    """The first prompt seen is always cut off mid-reasoning, the second always answers nothing after its
    reasoning; every other prompt answers, its reasoning holding a wrong answer in the right shape."""

    def __init__(self) -> None:
        self.faults: dict[str, str] = {}
        self.lock = threading.Lock()

    def __call__(self, request: ChatRequest) -> Script:
        with self.lock:
            if request.content_key not in self.faults and len(self.faults) < 2:
                self.faults[request.content_key] = (CUT, EMPTY)[len(self.faults)]
            fault = self.faults.get(request.content_key)
        if fault == CUT:
            return Script(
                content="", reasoning="Let me think. " * 50, finish_reason="length", reasoning_tokens=900
            )
        if fault == EMPTY:
            return Script(content="  ", reasoning="I cannot decide.", reasoning_tokens=40)
        answer = schema_answer(request)
        wrong = answer.replace('"yes"', '"__wrong__"').replace('"no"', '"__wrong__"')
        return Script(content=answer, reasoning=f"Draft: {wrong}", reasoning_tokens=7)


def test_truncated_and_empty_replies_after_reasoning_are_counted(tmp_path: Path) -> None:
    thinker = Thinker()
    with FakeOpenAIServer(thinker) as server:
        spec = validate_spec(
            {
                "model": {"name": "vllm/thinker", "base_url": server.base_url, "reasoning_effort": "medium"},
                "data": "demo",
                "tasks": ["itp"],
                "limit_samples": 1,
                "batch_size": 1,
                "engine": {"cache": False, "max_retries": 0},
            }
        )
        result = run(spec, tmp_path / "run")
        bodies = [r.body for r in server.requests]
    assert result.status == "finished"
    assert all(b["reasoning_effort"] == "medium" and b["max_tokens"] == 1600 + 8192 for b in bodies)
    requests = list(read_jsonl(tmp_path / "run" / "requests.jsonl"))
    cut = [r for r in requests if r["reply"]["finish_reason"] == "length"]
    empty = [r for r in requests if not r["reply"]["text"].strip()]
    assert cut and len(empty) > len(cut)  # a cut reply is empty too here; an empty one is not cut
    counts = json.loads((tmp_path / "run" / "run.json").read_text())["counts"]["itp"]
    assert counts["truncated"] == len(cut)
    assert counts["empty_after_reasoning"] == len(empty)
    assert counts["tokens"]["reasoning_tokens"] == sum(r["usage"]["reasoning_tokens"] for r in requests)
    assert counts["tokens"]["reasoning_tokens"] >= 900 + 40
    predictions = {p["instance_id"]: p for p in read_jsonl(tmp_path / "run" / "predictions.jsonl")}
    failed = {i for r in cut + empty for i in r["instance_ids"]}
    assert len(failed) == 2
    assert all(
        not predictions[i]["valid"] and predictions[i]["problems"][0].startswith("parse_failure")
        for i in failed
    )
    assert counts["parse_failures"] == 2 and counts["invalid"] == 2
    # the reasoning (with a wrong answer in the right shape) is stored beside the reply and never parsed
    answered = [r for r in requests if r["reply"]["text"].strip()]
    assert answered and all(r["reply"]["reasoning"].startswith("Draft: ") for r in answered)
    valid = [p for p in predictions.values() if p["valid"]]
    assert len(valid) == len(predictions) - 2 and all(p["prediction"] != "__wrong__" for p in valid)
    # the report's usage table shows them per task
    usage = run_tables.usage([load_run(tmp_path / "run")])
    (row,) = usage.rows
    columns = dict(zip(usage.columns, row, strict=True))
    assert (columns["Truncated replies"], columns["Empty after reasoning"]) == (len(cut), len(empty))
    assert columns["Reasoning tokens"] == counts["tokens"]["reasoning_tokens"]
