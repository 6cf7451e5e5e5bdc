"""The one run operation: statuses for unanswered and failed work, and the same run through every door."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.engine.test_run_judge import grade
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, Script, schema_answer, unauthorized
from typer.testing import CliRunner

import rescue_bench
from rescue_bench.cli.main import app
from rescue_bench.errors import ConfigError
from rescue_bench.spec import RunSpec
from rescue_bench.spec.toml_text import to_toml

runner = CliRunner()
BASE = ("--data", "demo", "--limit-samples", "1", "--no-cache", "-q", "--no-bertscore")


def dead_url() -> str:
    """A loopback URL where nothing listens (the port was bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def cli(*args: str) -> Any:
    return runner.invoke(app, ["run", *BASE, *args], catch_exceptions=False)


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(schema_answer) as fake:
        yield fake


def test_a_dead_endpoint_is_incomplete_and_a_plain_rerun_asks_again(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    out = tmp_path / "run"
    args = ("--model", "vllm/m", "--tasks", "itp", "--max-retries", "0", "--out", str(out))
    first = cli(*args, "--base-url", dead_url())
    assert first.exit_code == 4, first.output
    manifest = read(out / "run.json")
    itp = manifest["counts"]["itp"]
    assert manifest["status"] == "incomplete" and itp["request_failures"] == itp["instances"] > 0
    assert "connection" in manifest["stop_reason"] and not (out / "scores.json").exists()
    assert f"itp: {itp['instances']} of {itp['instances']} got no answer: " in first.output
    assert "resume (asks only what got no answer): rescue-bench" in first.output
    assert "INCOMPLETE, valid 0/" in first.output
    # The endpoint is back: the same command asks the instances that got no answer, without a flag.
    again = cli(*args, "--base-url", server.base_url)
    assert again.exit_code == 0, again.output
    assert server.count > 0 and read(out / "run.json")["status"] == "finished"
    assert read(out / "scores.json")["itp"]["all"]["n"] == itp["instances"]


def test_replies_that_all_fail_to_parse_are_degraded_with_the_likely_fix(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeOpenAIServer(lambda _: "{}") as fake:  # an endpoint that ignores the format asked for
        result = cli("--model", "vllm/m", "--tasks", "itp", "--out", str(out), "--base-url", fake.base_url)
    assert result.exit_code == 5, result.output
    assert read(out / "run.json")["status"] == "degraded" and (out / "scores.json").exists()
    assert "DEGRADED, valid 0/" in result.output
    assert "likely fix: the replies do not have the answer's shape" in result.output
    assert "try another --response-format" in result.output
    # A threshold of 1 still flags 100% failures; the reason goes with the status (a study's reason column).
    again = cli("--model", "vllm/m", "--tasks", "itp", "--out", str(out), "--degraded-share", "1")
    assert again.exit_code == 5, again.output
    spec = RunSpec.model_validate({"model": "vllm/m", "tasks": ["itp"], "data": "demo", "limit_samples": 1})
    outcome = rescue_bench.run(spec, out=out)
    assert outcome.status == "degraded" and outcome.scores is not None
    assert outcome.reason is not None
    assert outcome.reason.startswith("100% of the answers failed; main reason:")


def test_a_refusal_is_a_counted_miss_not_unfinished_work(tmp_path: Path) -> None:
    out = tmp_path / "run"

    def refuse(request: ChatRequest) -> Script | str:
        error = {"code": "data_inspection_failed", "message": "inappropriate content"}
        return Script(status=400, error=error)

    with FakeOpenAIServer(refuse) as fake:
        result = cli("--model", "vllm/m", "--tasks", "itp", "--out", str(out), "--base-url", fake.base_url)
    lines = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert {line["problems"][0].split(":")[0] for line in lines} == {"refused"}
    assert read(out / "run.json")["status"] == "degraded" and result.exit_code == 5, result.output


def test_a_dead_judge_leaves_the_run_incomplete_with_no_judge_number(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("--model", "baseline/random", "--tasks", "er,vp", "--seed", "1", "--out", str(out))
    first = cli(*args, "--judge", "vllm/j", "--max-retries", "0", "--base-url", dead_url())
    assert first.exit_code == 4, first.output
    assert read(out / "run.json")["status"] == "incomplete"
    scores, judging = read(out / "scores.json"), read(out / "judging.json")
    assert scores["er"]["all"]["llm"] is None and scores["er"]["all"]["ci"]["llm"] is None
    assert scores["er"]["all"]["n_judged"] == 0 and scores["vp"]["all"]["llm"] is None
    tally = judging["counts"]["vllm/j"]
    assert judging["status"] == "incomplete" and tally["unanswered"] > 0 and tally["unscored"] == 0
    assert "judge vllm/j: 0 valid, 0 unscored, " in first.output and "got no answer" in first.output
    with FakeOpenAIServer(grade) as fake:
        again = cli(*args, "--judge", "vllm/j", "--base-url", fake.base_url)
    assert again.exit_code == 0, again.output
    scores, judging = read(out / "scores.json"), read(out / "judging.json")
    assert scores["er"]["all"]["llm"] is not None and scores["er"]["all"]["n_judged"] > 0
    assert read(out / "run.json")["status"] == "finished" and judging["status"] == "finished"
    # Accounting adds up over the passes, each pass kept.
    assert len(judging["sessions"]) == 2
    sent = sum(s["counts"]["vllm/j"]["requests"] for s in judging["sessions"])
    assert judging["counts"]["vllm/j"]["requests"] == sent > tally["requests"]


def test_a_resume_adds_time_and_judge_tokens_up(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("--model", "baseline/random", "--tasks", "er", "--seed", "1", "--judge", "vllm/j")
    args = (*args, "--out", str(out))
    with FakeOpenAIServer(grade) as fake:
        assert cli(*args, "--base-url", fake.base_url).exit_code == 0
        first = read(out / "judging.json")["counts"]["vllm/j"]
        assert cli(*args, "--base-url", fake.base_url).exit_code == 0
    judging, timings = read(out / "judging.json"), read(out / "run.json")["timings"]
    assert judging["counts"]["vllm/j"]["usage"] == first["usage"] and first["usage"]["prompt_tokens"] > 0
    assert len(timings["session_elapsed_s"]) == 2
    assert timings["elapsed_s"] == pytest.approx(sum(timings["session_elapsed_s"]), abs=0.002)


def test_the_api_refuses_what_the_cli_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    spec = RunSpec.model_validate(
        {
            "model": "baseline/random",
            "tasks": ["er"],
            "judges": [{"name": "openai/gpt-4o", "api_key_env": "JUDGE_KEY"}],
        }
    )
    with pytest.raises(ConfigError, match="JUDGE_KEY"):
        rescue_bench.run(spec, out=tmp_path / "api")
    assert not (tmp_path / "api").exists()
    result = runner.invoke(app, ["run", "--spec", str(_toml(tmp_path, spec)), "--out", str(tmp_path / "cli")])
    assert result.exit_code == 2 and "JUDGE_KEY" in result.output
    assert not (tmp_path / "cli").exists()


def _toml(tmp_path: Path, spec: RunSpec) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(to_toml(spec.model_dump(mode="json")), encoding="utf-8")
    return path


def test_one_spec_through_the_api_and_the_cli_makes_the_same_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESCUE_BENCH_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAIServer(grade) as fake:
        table = {
            "model": {"name": "baseline/random", "seed": 2},
            "tasks": ["er", "itp"],
            "data": "demo",
            "limit_samples": 1,
            "judges": [{"name": "vllm/j", "base_url": fake.base_url, "price_in": 1.0, "price_out": 2.0}],
            "bertscore": False,
            "engine": {"cache": False},
            "budget": {"usd": 5.0, "price_in": 1.0, "price_out": 2.0},
        }
        spec = RunSpec.model_validate(table)
        outcome = rescue_bench.run(spec, out=tmp_path / "api")
        cli_run = runner.invoke(
            app, ["run", "--spec", str(_toml(tmp_path, spec)), "-q", "--out", str(tmp_path / "cli")]
        )
    assert cli_run.exit_code == 0, cli_run.output
    assert outcome.status == "finished" and outcome.scores is not None
    assert outcome.scores.entry("er").n_judged == outcome.scores.entry("er").n > 0
    assert outcome.judged is not None and outcome.judged.tallies["vllm/j"].valid > 0
    api, cli_dir = tmp_path / "api", tmp_path / "cli"
    assert sorted(p.name for p in api.iterdir()) == sorted(p.name for p in cli_dir.iterdir())
    for name in ("predictions.jsonl", "judgments.jsonl", "scores.json"):
        assert (api / name).read_bytes() == (cli_dir / name).read_bytes(), name
    for name in ("run.json", "judging.json"):
        assert _timeless(read(api / name), str(api)) == _timeless(read(cli_dir / name), str(cli_dir)), name


def _timeless(value: Any, root: str) -> Any:
    """A record without its times (and with its own directory's name taken out)."""
    if isinstance(value, dict):
        drop = {"timings", "started", "elapsed_s", "time", "latency"}
        return {k: _timeless(v, root) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_timeless(v, root) for v in value]
    return "<out>" if value == root else value


def test_sweep_and_run_end_a_dead_endpoint_alike(tmp_path: Path) -> None:
    url = dead_url()
    args = ("--tasks", "itp", "--max-retries", "0", "--base-url", url)
    ran = cli("--model", "vllm/m", *args, "--out", str(tmp_path / "run"))
    swept = runner.invoke(
        app,
        ["sweep", "--model", "vllm/m", *BASE, *args, "--out", str(tmp_path / "study")],
        catch_exceptions=False,
    )
    assert ran.exit_code == swept.exit_code == 4, swept.output
    study = read(tmp_path / "study" / "study.json")
    (entry,) = study["runs"]
    assert entry["status"] == read(tmp_path / "run" / "run.json")["status"] == "incomplete"
    assert "got no answer" in entry["reason"]
    line = next(x for x in ran.output.splitlines() if x.startswith("vllm/m: INCOMPLETE"))
    assert line in swept.output.splitlines()
    assert "resume (asks only what is missing): rescue-bench" in swept.output


def test_score_with_a_dead_judge_is_incomplete_and_a_later_score_finishes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    made = cli("--model", "baseline/random", "--tasks", "vp", "--seed", "1", "--out", str(out))
    assert made.exit_code == 0, made.output
    args = ("score", str(out), "--judge", "vllm/j", "--bertscore-model", "none", "--no-cache")
    dead = runner.invoke(app, [*args, "--max-retries", "0", "--base-url", dead_url()])
    assert dead.exit_code == 4, dead.output
    assert (
        read(out / "run.json")["status"] == "incomplete"
        and read(out / "scores.json")["vp"]["all"]["llm"] is None
    )
    with FakeOpenAIServer(grade) as fake:
        back = runner.invoke(app, [*args, "--base-url", fake.base_url])
    assert back.exit_code == 0, back.output
    assert read(out / "run.json")["status"] == "finished"
    assert read(out / "scores.json")["vp"]["all"]["llm"] is not None


def test_judge_means_over_fewer_instances_say_so(tmp_path: Path) -> None:
    def first_only(request: ChatRequest) -> dict[str, Any]:
        graded = grade(request)["graded"]
        return {"graded": graded[:1]}  # the other items get no verdict, even after the re-ask

    out = tmp_path / "run"
    with FakeOpenAIServer(first_only) as fake:
        args = ("--model", "baseline/random", "--tasks", "er", "--seed", "1", "--judge", "vllm/j")
        result = cli(*args, "--base-url", fake.base_url, "--out", str(out))
    # 3 of 5 verdicts unscored: a judge failing that way degrades the run, as a model would (exit 5).
    assert result.exit_code == 5, result.output
    er = read(out / "scores.json")["er"]["all"]
    assert 0 < er["n_judged"] < er["n"] and er["n_unscored"] > 0
    expected = f"ER LLM is the mean over {er['n_judged']} of {er['n']} instances"
    assert expected in " ".join(result.output.split())


@pytest.mark.parametrize("verdict", ["I cannot grade this.", {"graded": [{"score": 999}]}, {}])
def test_a_judge_whose_every_verdict_is_unscored_degrades_the_run(tmp_path: Path, verdict: Any) -> None:
    """W35: the degraded rule holds for judges: prose, a score off the scale, ``{}``: exit 5, not finished."""
    out = tmp_path / "run"
    with FakeOpenAIServer(lambda _: verdict) as fake:
        args = ("--model", "baseline/random", "--tasks", "er", "--seed", "1", "--judge", "vllm/j")
        result = cli(*args, "--base-url", fake.base_url, "--out", str(out))
    assert result.exit_code == 5, result.output
    manifest = read(out / "run.json")
    assert manifest["status"] == "degraded" and "judge vllm/j" in manifest["stop_reason"]
    assert "unscored" in manifest["stop_reason"]


def test_a_judge_that_refuses_the_key_leaves_the_run_incomplete(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("--model", "baseline/random", "--tasks", "er", "--seed", "1", "--judge", "vllm/j")
    args = (*args, "--out", str(out))
    with FakeOpenAIServer(lambda _: unauthorized()) as refusing:
        refused = cli(*args, "--base-url", refusing.base_url)
    assert refused.exit_code == 1 and "HTTP 401" in refused.output
    assert read(out / "run.json")["status"] == "incomplete"
    with FakeOpenAIServer(grade) as fake:
        again = cli(*args, "--base-url", fake.base_url)
    assert again.exit_code == 0, again.output
    assert read(out / "run.json")["status"] == "finished"
