"""Task options reach every request of a run, are recorded in its config, and a changed one refuses resume."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAIServer, schema_answer
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import load_samples
from rescue_bench.engine.plans import build_plans, select_samples
from rescue_bench.spec import RunSpec

runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def rendered(config: RunSpec) -> Counter[str]:
    """The user messages the run of ``config`` should send, one per request."""
    plans = build_plans(select_samples(load_samples(config.data), config), config)
    return Counter(str(p.task.render(b, p.cfg).messages[-1]["content"]) for p in plans for b in p.batches)


def test_rpp_current_turn_reaches_the_requests_and_guards_resume(tmp_path: Path) -> None:
    out = str(tmp_path / "run")
    with FakeOpenAIServer(schema_answer) as server:
        common = ("run", "--model", "vllm/fake", "--base-url", server.base_url, "--data", "demo")
        common += ("--tasks", "rpp", "--limit-samples", "1", "--out", out, "--no-cache", "-q")
        result = invoke(*common, "--rpp-current-turn")
        sent = Counter(str(r.messages[-1]["content"]) for r in server.requests)
        refused = invoke(*common)
    assert result.exit_code == 0, result.output
    options = {"rpp": {"include_current_turn": True}}
    with_turn = rendered(RunSpec(model="vllm/fake", tasks=("rpp",), limit_samples=1, task_options=options))
    assert sent == with_turn
    plain = RunSpec(model="vllm/fake", tasks=("rpp",), limit_samples=1)
    assert sent != rendered(plain)  # the option changes prompts
    config = json.loads((tmp_path / "run" / "run.json").read_text())["config"]
    assert config["task_options"] == {"rpp": {"gold_field": "auto", "include_current_turn": True}}
    assert refused.exit_code == 2 and "task_options: {'rpp'" in refused.output
    assert (
        "'include_current_turn': True}} -> {'rpp': {'gold_field': 'auto', 'include_current_turn': False}}"
        in (refused.output.replace("\n", ""))
    )


def test_batch_export_takes_task_options_and_import_rebuilds_them(tmp_path: Path) -> None:
    requests_file, run_dir = tmp_path / "requests.jsonl", tmp_path / "run"
    exported = invoke(
        "batch", "export", "--model", "openai/gpt-x", "--data", "demo", "--tasks", "ssp,er",
        "--ssp-target-emotion", "--checkpoints-per-sample", "2", "--limit-samples", "2",
        "--out", str(requests_file), "--run", str(run_dir),
    )  # fmt: skip
    assert exported.exit_code == 0, exported.output
    config = json.loads((run_dir / "run.json").read_text())["config"]
    assert config["task_options"]["ssp"] == {"include_target_emotion": True}
    assert config["task_options"]["er"] == {"checkpoints_per_sample": 2, "min_dialogue_words": 5}
    lines = [json.loads(x) for x in requests_file.read_text().splitlines()]
    expected = RunSpec(
        model="openai/gpt-x",
        tasks=("ssp", "er"),
        limit_samples=2,
        task_options={"ssp": {"include_target_emotion": True}, "er": {"checkpoints_per_sample": 2}},
    )
    assert Counter(str(x["body"]["messages"][-1]["content"]) for x in lines) == rendered(expected)
    er = build_plans(select_samples(load_samples("demo"), expected), expected)[1].instances
    assert max(Counter(i.sample_id for i in er).values()) == 2
    # The import rebuilds the run config from run.json, options included, so the directory accepts it.
    (tmp_path / "empty.jsonl").write_text("")
    imported = invoke("batch", "import", str(tmp_path / "empty.jsonl"), "--run", str(run_dir), "-q")
    # An empty results file answers nothing: the run is incomplete (exit 4), its config kept.
    assert imported.exit_code == 4 and "got no answer" in imported.output, imported.output
    assert json.loads((run_dir / "run.json").read_text())["config"] == config


def test_estimate_takes_task_options() -> None:
    base = ("estimate", "--model", "openai/gpt-4o", "--tasks", "er", "--data", "demo")
    fewer = invoke(*base, "--checkpoints-per-sample", "1")
    assert fewer.exit_code == 0, fewer.output
    # 6 demo conversations, one checkpoint each (the default, 5, gives 30).
    assert re.search(r"^\s*er\s+6\s", fewer.output, re.M), fewer.output
    bad = invoke(*base, "--checkpoints-per-sample", "0")
    assert bad.exit_code == 2 and bad.output.startswith(
        "error: --checkpoints-per-sample: Input should be greater than"
    )
