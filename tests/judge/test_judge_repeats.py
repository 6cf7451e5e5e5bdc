"""Repeats of the judged tasks (``--repeats``) and judge repeats (``judge_repeats``): every (instance,
repeat) judged, each judge asked J times per reply under its own cache entry, resumed by what is missing;
a run with the defaults writes what it always wrote."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.rundir import JudgmentLine, load_run, read_jsonl

runner = CliRunner()


def grade(request: ChatRequest) -> dict[str, Any]:
    """ER 5 and VP 2+3 without a seed (judge repeat 0); with seed s, ER 5 - s and VP 2+(3 - s)."""
    found = re.match(r"Checkpoints:\n(.*?)(\n\nA previous answer|\Z)", request.messages[1]["content"], re.S)
    assert found is not None, "not a judge request"
    shift = int(request.body.get("seed") or 0)
    graded: list[dict[str, Any]] = []
    for cid, view in json.loads(found.group(1)).items():
        if "gold_emotion" in view:
            graded.append({"id": cid, "emotion_score": 5 - shift, "verdict": "pass", "notes": ""})
        else:
            graded.append(
                {
                    "id": cid,
                    "source_target_score": 2,
                    "viewpoint_score": 3 - shift,
                    "verdict": "pass",
                    "notes": "",
                }
            )
    return {"graded": graded}


def run(tmp: Path, server: FakeOpenAIServer, out: str, spec: str = "", *extra: str) -> Any:
    args = [
        "run", "--data", "demo", "--model", "baseline/random", "--tasks", "er,vp", "--limit-samples", "2",
        "--seed", "3", "--judge", "vllm/fakejudge", "--base-url", server.base_url, "--no-bertscore",
        "--out", str(tmp / out), *extra,
    ]  # fmt: skip
    if spec:
        (tmp / f"{out}.toml").write_text(spec)
        args += ["--spec", str(tmp / f"{out}.toml")]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def judgments(out: Path) -> list[JudgmentLine]:
    return [JudgmentLine.from_json(obj) for obj in read_jsonl(out / "judgments.jsonl")]


def test_every_instance_repeat_is_judged_once_and_scores_carry_each_repeat(tmp_path: Path) -> None:
    with FakeOpenAIServer(grade) as server:
        run(tmp_path, server, "r2", "", "--repeats", "2")
    data = load_run(tmp_path / "r2")
    keys = Counter((j.instance_id, j.repeat, j.judge_repeat) for j in judgments(tmp_path / "r2"))
    predicted = {(p.instance_id, p.repeat) for p in data.prediction_lines if p.valid}
    assert {(i, r) for i, r, _ in keys} == predicted and set(keys.values()) == {1}
    assert {r for _, r in predicted} == {0, 1} and {j for _, _, j in keys} == {0}
    scores = json.loads((tmp_path / "r2" / "scores.json").read_text())
    for task in ("er", "vp"):
        entry = scores[task]["all"]
        assert entry["repeats"]["k"] == 2 and len(entry["repeats"]["per_repeat"]) == 2
        assert entry["n"] == len({p.instance_id for p in data.prediction_lines if p.task == task})
        assert entry["ci"]["llm"] is not None


def test_judge_repeats_ask_each_reply_twice_and_resume_only_what_is_missing(tmp_path: Path) -> None:
    spec = "judge_repeats = 2\n"
    with FakeOpenAIServer(grade) as server:
        run(tmp_path, server, "j2", spec)
        first = server.count
    out = tmp_path / "j2"
    lines = judgments(out)
    by_reply = Counter((j.instance_id, j.repeat) for j in lines)
    assert set(by_reply.values()) == {2} and {j.judge_repeat for j in lines} == {0, 1}
    raw = (out / "judgments.jsonl").read_text().splitlines()
    assert all(('"judge_repeat"' in r) == (json.loads(r).get("judge_repeat", 0) == 1) for r in raw)
    # Judge repeat 1 is sent with seed 1 and scores one lower: the ER judge mean is 4.5, per repeat 5 and 4.
    er = json.loads((out / "scores.json").read_text())["er"]["all"]
    assert [r["s_emo"] for r in er["repeats"]["per_repeat"]] == [5.0, 4.0] and er["s_emo"] == 4.5
    assert er["repeats"]["range"]["s_emo"] == [4.0, 5.0]
    # Drop judge repeat 1's lines of the first sample: a resumed pass asks exactly those again.
    first_sample = lines[0].instance_id.split("::")[0]
    kept = [r for r in raw if not (json.loads(r).get("judge_repeat") == 1 and r.find(first_sample) > 0)]
    dropped = len(raw) - len(kept)
    (out / "judgments.jsonl").write_text("\n".join(kept) + "\n")
    with FakeOpenAIServer(grade) as server:
        run(tmp_path, server, "j2", spec)
        assert server.count > 0 and all(r.body.get("seed") == 1 for r in server.requests)
        asked = sum(len(re.findall(r'"c\d+"', r.messages[1]["content"])) for r in server.requests)
    assert asked == dropped and first > server.count
    assert Counter((j.instance_id, j.repeat) for j in judgments(out)) == by_reply


def test_judge_repeats_are_distinct_cache_entries(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("RESCUE_BENCH_CACHE_DIR", str(tmp_path / "cache"))
    counts = []
    with FakeOpenAIServer(grade) as server:  # the cache keys the endpoint: one server for both runs
        for out in ("c", "d"):  # d: a new run directory, every judge reply from the cache
            before = len(server.requests)
            result = runner.invoke(app, [
                "run", "--data", "demo", "--model", "baseline/random", "--tasks", "er", "--limit-samples",
                "1",
                "--judge", "vllm/fakejudge", "--base-url", server.base_url, "--no-bertscore",
                "--out", str(tmp_path / out), "--spec", str(_spec(tmp_path)),
            ], catch_exceptions=False)  # fmt: skip
            assert result.exit_code == 0, result.output
            counts.append(Counter(r.body.get("seed") for r in server.requests[before:]))
    # One request per sample and judge repeat, the repeat sent with seed 1; then all of them cached.
    assert counts == [Counter({None: 1, 1: 1}), Counter()]
    er = judgments(tmp_path / "d")
    # Judge repeat 1 is served its own reply (4), never repeat 0's (5).
    assert {j.judge_repeat: j.scores["s_emo"] for j in er} == {0: 5.0, 1: 4.0}
    assert (tmp_path / "c" / "scores.json").read_bytes() == (tmp_path / "d" / "scores.json").read_bytes()


def _spec(tmp: Path) -> Path:
    path = tmp / "c.toml"
    path.write_text("judge_repeats = 2\n")
    return path


def test_defaults_write_the_bytes_of_a_run_without_repeat_settings(tmp_path: Path) -> None:
    with FakeOpenAIServer(grade) as server:
        run(tmp_path, server, "plain")
        run(tmp_path, server, "ones", "repeats = 1\njudge_repeats = 1\n")
    for name in ("judgments.jsonl", "scores.json", "predictions.jsonl"):
        assert (tmp_path / "plain" / name).read_bytes() == (tmp_path / "ones" / name).read_bytes(), name
    assert '"repeat' not in (tmp_path / "plain" / "judgments.jsonl").read_text()
