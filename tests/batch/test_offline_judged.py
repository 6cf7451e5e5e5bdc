"""`batch import` is a run like any other: the judges `batch export --judge J` recorded judge ER after the
import, and it ends with `run`'s statuses and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, schema_answer
from tests.judge.test_score_cli import grade
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.rundir import Scores

RUNNER = CliRunner()


def answered(line: dict[str, Any], index: int) -> dict[str, Any]:
    """A Batch API result line answering ``line`` with an answer shaped by its request's schema."""
    content = schema_answer(ChatRequest(index, line["url"], {}, line["body"], 1))
    body = {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "model": line["body"]["model"],
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    response = {"status_code": 200, "request_id": f"req_{index}", "body": body}
    return {"id": f"batch_req_{index}", "custom_id": line["custom_id"], "error": None, "response": response}


def test_export_with_a_judge_then_import_fills_the_er_llm_column(tmp_path: Path) -> None:
    requests, run = tmp_path / "requests.jsonl", tmp_path / "run"
    with FakeOpenAIServer(grade) as judge:
        spec = ["--model", "vllm/cand", "--data", "demo", "--tasks", "er", "--limit-samples", "2"]
        judging = ["--judge", "vllm/judge-x", "--judge-base-url", judge.base_url, "--no-bertscore"]
        exported = RUNNER.invoke(
            app, ["batch", "export", *spec, *judging, "--out", str(requests), "--run", str(run)]
        )
        assert exported.exit_code == 0, exported.output
        lines = [json.loads(x) for x in requests.read_text().splitlines()]
        results = tmp_path / "results.jsonl"
        results.write_text("".join(json.dumps(answered(x, i)) + "\n" for i, x in enumerate(lines)))
        imported = RUNNER.invoke(app, ["batch", "import", str(results), "--run", str(run), "--quiet"])
        assert imported.exit_code == 0, imported.output
        asked = judge.count
    assert asked > 0  # the judge was asked after the import
    scores = Scores.of(json.loads((run / "scores.json").read_text()))
    entry = scores.entry("er")
    assert entry.metric("llm") is not None and entry.n_judged == entry.n
    assert json.loads((run / "run.json").read_text())["status"] == "finished"
    assert json.loads((run / "judging.json").read_text())["judges"] == ["vllm/judge-x"]
