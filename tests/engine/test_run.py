"""End-to-end runs of the engine with the tiny task against the fake server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.engine.conftest import TINY_TASKS, fast_options, make_samples, provider_on, tiny_config
from tests.fakes.openai_server import FakeOpenAIServer

from rescue_bench.engine.run import execute_run
from rescue_bench.engine.store import read_jsonl


def _run(server: FakeOpenAIServer, out: Path, samples: list, **kw) -> object:
    config = kw.pop("config", tiny_config())
    options = kw.pop("options", fast_options())
    return asyncio.run(
        execute_run(config, out, options, tasks=TINY_TASKS, model=provider_on(server), samples=samples, **kw)
    )


def test_run_scores_every_instance_once(server: FakeOpenAIServer, tmp_path: Path) -> None:
    samples = make_samples(3, 5)
    result = _run(server, tmp_path / "run", samples)
    assert result.status == "finished"
    lines = list(read_jsonl(tmp_path / "run" / "predictions.jsonl"))
    assert sorted(r["instance_id"] for r in lines) == sorted(
        f"{s.sample_id}::echo::{r.row_index}" for s in samples for r in s.rows
    )
    assert all(r["valid"] and r["scores"]["correct"] == 1.0 for r in lines)
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert scores["echo"]["all"]["n"] == 15
    assert scores["echo"]["all"]["accuracy"] == 1.0
    # 3 samples x 5 rows in batches of 3 within a sample: 2 requests per sample
    assert server.count == 6
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["status"] == "finished"
    assert manifest["counts"]["echo"]["requests"] == 6
    assert manifest["counts"]["echo"]["done"] == 15
