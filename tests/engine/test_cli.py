"""The command-line contract that scripts rely on: real tasks on the demo data, a fake endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, schema_answer
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.cli.run_flags import parse_sample_ids
from rescue_bench.errors import ConfigError
from rescue_bench.rundir import read_jsonl

REQUIRED = ("instance_id", "task", "sample_id", "row_index", "valid", "prediction", "problems")
runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_run_leaves_the_documented_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-fake")
    # Wide enough that the run directory's line is not wrapped, however long the temporary path.
    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "run"
    with FakeOpenAIServer(schema_answer, latency=0.02) as server:
        result = invoke(
            "run",
            "--model",
            "openai/fake",
            "--base-url",
            server.base_url,
            "--api-key-env",
            "FAKE_KEY",
            "--data",
            "demo",
            "--tasks",
            "all",
            "--out",
            str(out),
            "--concurrency",
            "3",
            "--no-bertscore",
        )
        assert server.max_in_flight <= 3
        assert server.max_in_flight == 3
    assert result.exit_code == 0, result.output
    assert f"run directory: {out}" in result.output and "ITP F1" in result.output
    manifest = json.loads((out / "run.json").read_text())
    lines = list(read_jsonl(out / "predictions.jsonl"))
    assert len(lines) == sum(c["instances"] for c in manifest["counts"].values())
    assert len({r["instance_id"] for r in lines}) == len(lines)
    assert all(all(k in r for k in REQUIRED) and isinstance(r["valid"], bool) for r in lines)
    scores = json.loads((out / "scores.json").read_text())
    for task in ("itp", "rpp", "stp", "ssp", "er", "vp"):
        assert {"couple", "family", "all"} <= set(scores[task])
    assert (
        "f1" in scores["itp"]["all"] and "accuracy" in scores["rpp"]["all"] and "mrr" in scores["stp"]["all"]
    )


def test_failed_instances_do_not_fail_the_run(tmp_path: Path) -> None:
    def half_broken(req: ChatRequest) -> str:
        return "no json here" if req.index % 2 else schema_answer(req)

    with FakeOpenAIServer(half_broken) as server:
        result = invoke(
            "run",
            "--model",
            "vllm/fake",
            "--base-url",
            server.base_url,
            "--data",
            "demo",
            "--tasks",
            "itp,stp",
            "--out",
            str(tmp_path / "run"),
            "--no-cache",
            # About half the answers fail by design: which half depends on the order requests go out, so the
            # share can reach the degraded line (0.5); this test is about failed answers, not that line.
            "--degraded-share",
            "0.9",
        )
    assert result.exit_code == 0, result.output
    assert "failed answers (scored as misses)" in result.output
    lines = list(read_jsonl(tmp_path / "run" / "predictions.jsonl"))
    assert any(not r["valid"] for r in lines) and any(r["valid"] for r in lines)


def test_budget_stop_exits_3_and_resumes(tmp_path: Path) -> None:
    out = str(tmp_path / "run")
    with FakeOpenAIServer(schema_answer) as server:
        common = (
            "--model",
            "vllm/fake",
            "--base-url",
            server.base_url,
            "--data",
            "demo",
            "--tasks",
            "er",
            "--out",
            out,
            "--price-in",
            "100",
            "--price-out",
            "100",
            "--no-bertscore",
        )
        stopped = invoke("run", *common, "--budget", "0.5", "--concurrency", "1")
        assert stopped.exit_code == 3, stopped.output
        assert "budget" in stopped.output
        finished = invoke("run", *common, "--budget", "100")
    assert finished.exit_code == 0, finished.output
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "finished"


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    result = invoke("run", "--model", "openai/x", "--tasks", "itp,nope", "--out", str(tmp_path / "r"))
    assert result.exit_code == 2 and result.output.strip() == (
        "error: --tasks: unknown task 'nope'; use all or itp,rpp,stp,ssp,er,vp"
    )
    result = invoke("run", "--model", "gpt-4o", "--out", str(tmp_path / "r"))
    assert result.exit_code == 2 and result.output.startswith("error: --model: 'gpt-4o' is not of the form")
    result = invoke("run", "--model", "vllm/x", "--budget", "3", "--out", str(tmp_path / "r"))
    assert result.exit_code == 2 and "--budget needs prices" in result.output


def test_estimate_prints_tokens_and_costs() -> None:
    result = invoke(
        "estimate",
        "--model",
        "openai/gpt-4o",
        "--data",
        "demo",
        "--tasks",
        "itp,er",
        "--price-in",
        "2.5",
        "--price-out",
        "10",
    )
    assert result.exit_code == 0, result.output
    assert "tokenizer:" in result.output and "Prompt tokens" in result.output
    assert "itp" in result.output and "er" in result.output and "all" in result.output


def test_cache_commands(tmp_path: Path) -> None:
    with FakeOpenAIServer(schema_answer) as server:
        invoke(
            "run",
            "--model",
            "vllm/fake",
            "--base-url",
            server.base_url,
            "--data",
            "demo",
            "--tasks",
            "er",
            "--out",
            str(tmp_path / "run"),
            "--no-bertscore",
        )
    stats = invoke("cache", "stats")
    assert stats.exit_code == 0 and "entries: 6" in stats.output and "vllm/fake: 6" in stats.output
    cleared = invoke("cache", "clear", "--yes")
    assert cleared.exit_code == 0 and "deleted 6" in cleared.output
    assert "entries: 0" in invoke("cache", "stats").output


def test_batch_commands_round_trip(tmp_path: Path) -> None:
    requests_file = tmp_path / "requests.jsonl"
    run_dir = tmp_path / "run"
    exported = invoke(
        "batch",
        "export",
        "--model",
        "openai/gpt-x",
        "--data",
        "demo",
        "--tasks",
        "stp",
        "--out",
        str(requests_file),
        "--run",
        str(run_dir),
    )
    assert exported.exit_code == 0, exported.output
    results = []
    for i, line in enumerate(requests_file.read_text().splitlines()):
        item = json.loads(line)
        content = schema_answer(ChatRequest(i, item["url"], {}, item["body"], 1))
        body = {
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1},
        }
        results.append({"custom_id": item["custom_id"], "response": {"status_code": 200, "body": body}})
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    imported = invoke("batch", "import", str(tmp_path / "results.jsonl"), "--run", str(run_dir))
    assert imported.exit_code == 0, imported.output
    assert json.loads((run_dir / "scores.json").read_text())["stp"]["all"]["valid"] > 0


def test_sample_ids_file_forms(tmp_path: Path) -> None:
    forms = {"a.json": '["s1", "s2"]', "b.json": '{"sample_ids": ["s1", "s2"]}', "c.txt": "# ids\ns1\n\ns2\n"}
    for name, text in forms.items():
        (tmp_path / name).write_text(text)
        assert parse_sample_ids(tmp_path / name) == ("s1", "s2")
    (tmp_path / "bad.json").write_text('{"ids": 3}')
    with pytest.raises(ConfigError, match="list of strings"):
        parse_sample_ids(tmp_path / "bad.json")
