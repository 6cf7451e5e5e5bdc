"""Scores of a run: ``scores.json`` is the aggregation of the recorded predictions, once per task."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.engine.conftest import provider_on
from tests.fakes.openai_server import FakeOpenAIServer, schema_answer

from rescue_bench.data.load import load_samples
from rescue_bench.engine import scoring
from rescue_bench.engine.execute import EngineOptions
from rescue_bench.engine.plans import build_plans, select_samples
from rescue_bench.engine.run import RunOptions, execute_run
from rescue_bench.engine.scoring import aggregate_scores
from rescue_bench.rundir import read_predictions
from rescue_bench.spec import RunSpec


def test_each_task_is_aggregated_once_from_the_recorded_predictions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    asked_before: dict[str, int] = {}
    original = scoring.aggregate_task

    def counted(name: str, *args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        asked_before[name] = server.count
        return original(name, *args, **kwargs)

    monkeypatch.setattr(scoring, "aggregate_task", counted)
    config = RunSpec(model="vllm/fake", tasks=("vp", "itp"), data="demo", limit_samples=2)
    options = RunOptions(engine=EngineOptions(concurrency=1), quiet=True)
    with FakeOpenAIServer(schema_answer) as server:
        model = provider_on(server, model="fake")
        result = asyncio.run(execute_run(config, tmp_path / "run", options, model=model))
        asked = server.count
    assert result.status == "finished" and calls == {"vp": 1, "itp": 1}
    assert asked_before == {"vp": asked, "itp": asked}  # at the finish, once every request was answered
    written = json.loads((tmp_path / "run" / "scores.json").read_text())
    samples = select_samples(load_samples("demo"), config)
    plans = build_plans(samples, config)
    again = aggregate_scores(plans, read_predictions(tmp_path / "run"), samples=samples)
    assert written == json.loads(json.dumps(again))
    assert set(written["_relational"]) == {"itp_pattern", "vp_targets", "_meta"}
