"""Scores of a run: tasks aggregated while others are still asked give what the finish would have."""

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
from rescue_bench.engine.execute import EngineOptions
from rescue_bench.engine.manifest import RunConfig, build_plans, select_samples
from rescue_bench.engine.outcomes import prediction_record
from rescue_bench.engine.run import RunOptions, execute_run
from rescue_bench.engine.scoring import Aggregated, aggregate_scores
from rescue_bench.metrics import aggregate
from rescue_bench.records import Prediction
from rescue_bench.rundir import read_jsonl


def test_a_task_finished_early_is_aggregated_once_and_as_the_finish_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    asked_before: dict[str, int] = {}
    original = aggregate.aggregate_task

    def counted(name: str, *args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        asked_before[name] = server.count
        return original(name, *args, **kwargs)

    monkeypatch.setattr(aggregate, "aggregate_task", counted)
    config = RunConfig("vllm/fake", ("vp", "itp"), data="demo", limit_samples=2)
    # One request at a time: VP's 2 batches go (and are recorded) before ITP's 12.
    options = RunOptions(engine=EngineOptions(concurrency=1), quiet=True)
    with FakeOpenAIServer(schema_answer, latency=0.05) as server:  # quiet spells of 50 ms
        model = provider_on(server, model="fake")
        result = asyncio.run(execute_run(config, tmp_path / "run", options, model=model))
        asked = server.count
    assert result.status == "finished" and calls == {"vp": 1, "itp": 1}
    assert asked_before["vp"] < asked  # aggregated while ITP was still being asked
    written = json.loads((tmp_path / "run" / "scores.json").read_text())
    plans = build_plans(select_samples(load_samples("demo"), config), config)
    again = aggregate_scores(plans, list(read_jsonl(tmp_path / "run" / "predictions.jsonl")))
    assert written == json.loads(json.dumps(again))


def test_an_early_aggregation_is_used_only_for_the_very_same_records() -> None:
    config = RunConfig("vllm/fake", ("vp",), data="demo", limit_samples=1)
    plans = build_plans(select_samples(load_samples("demo"), config), config)
    plan = plans[0]
    records = [
        prediction_record(plan.task, i, Prediction.failed(i.id, "missing: no answer"), None, False)
        for i in plan.instances
    ]
    marker = {"from": "early"}
    same = aggregate_scores(plans, records, known={"vp": Aggregated(list(records), marker)})
    assert same["vp"] is marker
    copies = [dict(r) for r in records]  # equal, but not the records the early aggregation saw
    assert aggregate_scores(plans, copies, known={"vp": Aggregated(records, marker)})["vp"] is not marker
    fewer = aggregate_scores(plans, records, n_resamples=10, known={"vp": Aggregated(records, marker)})
    assert fewer["vp"] is not marker
