"""`rescue-bench sweep` against several fake endpoints: every model into its own run directory, at once;
resume and extension ask only what is missing; a wrong key stops its model alone; the leaderboard is the
runs' scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.fakes.openai_server import FakeOpenAIServer
from tests.study.helpers import flipped, instance_ids, leaderboard_csv, study_json, study_toml
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.rundir import read_jsonl

RUNNER = CliRunner()


def sweep(study: Path, *more: str) -> tuple[int, str]:
    result = RUNNER.invoke(app, ["sweep", str(study), "--quiet", *more])
    return result.exit_code, result.output


def test_three_models_then_resume_then_extend(tmp_path: Path) -> None:
    out = tmp_path / "study"
    with (
        FakeOpenAIServer() as a,
        FakeOpenAIServer(flipped) as b,
        FakeOpenAIServer() as c,
        FakeOpenAIServer(flipped) as d,
    ):
        servers = [("vllm/a", a.base_url), ("vllm/b", b.base_url), ("vllm/c", c.base_url)]
        path = tmp_path / "study.toml"
        path.write_text(study_toml(out, servers))
        code, output = sweep(path)
        assert code == 0, output
        first = [a.count, b.count, c.count]
        assert all(first), first
        record = study_json(out)
        assert [r["status"] for r in record["runs"]] == ["finished"] * 3
        assert [r["dir"] for r in record["runs"]] == ["vllm-a", "vllm-b", "vllm-c"]
        for run in record["runs"]:
            ids = instance_ids(out / run["dir"])
            assert len(ids) == len(set(ids)) == run["counts"]["instances"] > 0
        # every request a model's run recorded reached its own server, and nothing else did
        for server, run in zip((a, b, c), ("vllm-a", "vllm-b", "vllm-c"), strict=True):
            assert server.count == len(list(read_jsonl(out / run / "requests.jsonl")))
        before = {r: (out / r / "scores.json").read_bytes() for r in ("vllm-a", "vllm-b", "vllm-c")}

        code, output = sweep(path)
        assert code == 0, output
        assert [a.count, b.count, c.count] == first, "a finished model sent requests again"
        assert before == {r: (out / r / "scores.json").read_bytes() for r in before}

        path.write_text(study_toml(out, [*servers, ("vllm/d", d.base_url)]))
        code, output = sweep(path)
        assert code == 0, output
        assert [a.count, b.count, c.count] == first
        assert d.count == first[1], "the added model is asked its whole run, once"
        assert [r["model"] for r in study_json(out)["runs"]] == ["vllm/a", "vllm/b", "vllm/c", "vllm/d"]


def test_leaderboard_is_the_runs_scores(tmp_path: Path) -> None:
    out = tmp_path / "study"
    with FakeOpenAIServer() as a, FakeOpenAIServer(flipped) as b:
        path = tmp_path / "study.toml"
        path.write_text(study_toml(out, [("vllm/a", a.base_url), ("vllm/b", b.base_url)]))
        code, output = sweep(path, "--with-paper")
    assert code == 0, output
    rows = leaderboard_csv(out)
    for model, folder in (("vllm/a", "vllm-a"), ("vllm/b", "vllm-b")):
        scores = json.loads((out / folder / "scores.json").read_text())
        mine = {(r["task"], r["metric"]): r for r in rows if r["model"] == model}
        assert mine, f"no leaderboard rows for {model}"
        for (task, metric), row in mine.items():
            if row["value"]:
                assert float(row["value"]) == pytest.approx(scores[task]["all"][metric])
                low, high = scores[task]["all"]["ci"][metric]
                assert (float(row["ci_low"]), float(row["ci_high"])) == pytest.approx((low, high))
        assert {t for t, _ in mine} == {"itp", "rpp", "stp", "ssp", "er", "vp"}
    # the two models answer ITP differently (one never says yes): their F1 differ, so the groups do too
    f1 = {r["model"]: r for r in rows if (r["task"], r["metric"]) == ("itp", "f1")}
    assert f1["vllm/a"]["value"] != f1["vllm/b"]["value"]
    assert "GPT-4o (published)" in f1
    text = (out / "leaderboard.md").read_text()
    assert "| vllm/a | finished |" in text and "| vllm/b | finished |" in text and "## Rank groups" in text
    assert (out / "leaderboard.html").read_text().startswith("<!")


def test_a_wrong_key_stops_its_model_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "study"
    monkeypatch.setenv("STUDY_WRONG_KEY", "sk-wrong")
    with FakeOpenAIServer() as a, FakeOpenAIServer(require_key="sk-right") as b, FakeOpenAIServer() as c:
        path = tmp_path / "study.toml"
        text = study_toml(out, [("vllm/a", a.base_url), ("openai/b", b.base_url), ("vllm/c", c.base_url)])
        path.write_text(
            text.replace(
                f'base_url = "{b.base_url}"', f'base_url = "{b.base_url}"\napi_key_env = "STUDY_WRONG_KEY"'
            )
        )
        code, output = sweep(path)
    assert code == 1, output
    runs = {r["model"]: r for r in study_json(out)["runs"]}
    assert runs["vllm/a"]["status"] == runs["vllm/c"]["status"] == "finished"
    assert runs["openai/b"]["status"] == "failed"
    assert "401" in runs["openai/b"]["reason"] or "key" in runs["openai/b"]["reason"].lower()
    assert "sk-wrong" not in (out / "study.json").read_text() + output
    assert "failed: " in (out / "leaderboard.md").read_text()
    assert (out / "vllm-a" / "scores.json").is_file() and (out / "vllm-c" / "scores.json").is_file()


def test_judged_study_fills_every_run_with_the_judges_scores(tmp_path: Path) -> None:
    """Each run of a study gets its judge pass (its own guard on the budget), as `run --judge` does."""
    out = tmp_path / "study"
    with FakeOpenAIServer() as judge:
        result = RUNNER.invoke(
            app,
            [
                "sweep", "--model", "baseline/random", "--model", "baseline/majority",
                "--judge", "vllm/judge", "--judge-base-url", judge.base_url, "--no-bertscore",
                "--data", "demo", "--tasks", "er,vp", "--limit-samples", "1", "--out", str(out), "--quiet",
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        asked = judge.count
    assert asked > 0
    for folder in ("baseline-random", "baseline-majority"):
        judged = list(read_jsonl(out / folder / "judgments.jsonl"))
        assert judged and {j["judge"] for j in judged} == {"vllm/judge"}
        scores = json.loads((out / folder / "scores.json").read_text())
        assert scores["er"]["all"]["llm"] is not None and scores["vp"]["all"]["llm"] is not None
    assert [r["status"] for r in study_json(out)["runs"]] == ["finished", "finished"]


def test_the_summary_fits_100_columns_with_long_model_names(tmp_path: Path) -> None:
    out = tmp_path / "study"
    names = ("vllm/gpt-4o-mini-2024-07-18", "vllm/gpt-4o-2024-08-06")
    with FakeOpenAIServer() as a, FakeOpenAIServer(flipped) as b:
        path = tmp_path / "study.toml"
        path.write_text(study_toml(out, [(names[0], a.base_url), (names[1], b.base_url)]))
        result = RUNNER.invoke(app, ["sweep", str(path), "--quiet", "--with-paper"], env={"COLUMNS": None})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    tables = [line for line in lines if not line.startswith("  ") or "/" not in line]  # the paths may be long
    assert all(len(line) <= 100 for line in tables), max(tables, key=len)
    assert not any("…" in line for line in lines)
    for name in names:  # whole, in the leaderboard, the rank groups and the study table
        assert sum(name in line for line in lines) >= 3, name
    text = " ".join(result.output.split())
    assert "Measured: demo data (fictional): 2 samples" in text and "Not comparable" in text
