"""The session's seams: the way of asking the caller hands it (:class:`Asker`), and the request hook."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from tests.engine.conftest import TINY_TASKS, fast_options, make_samples, provider_on, tiny_config
from tests.fakes.openai_server import FakeOpenAIServer

from rescue_bench.engine.asking import LIVE, Pending, Route
from rescue_bench.engine.run import RunResult, execute_run
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Provider
from rescue_bench.rundir import read_jsonl
from rescue_bench.spec import RunSpec


@dataclass(frozen=True, slots=True)
class FirstPlanOnly:
    """Routes the engine to the live model for the first plan's first batch only, and records a note."""

    def check(self, spec: RunSpec, model: Provider) -> None:
        LIVE.check(spec, model)

    async def route(self, pending: Pending) -> Route:
        first = replace(pending.plans[0], batches=pending.plans[0].batches[:1])
        return Route(pending.model, [first], pending.budget, "one batch only", {"way": {"asked": 1}})


def run(server: FakeOpenAIServer, out: Path, **options: object) -> RunResult:
    return asyncio.run(
        execute_run(
            tiny_config(),
            out,
            fast_options(**options),
            tasks=TINY_TASKS,
            model=provider_on(server),
            samples=make_samples(2, 4),
        )
    )


def test_the_asker_chooses_what_is_asked_and_its_record_and_reason_are_kept(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    result = run(server, tmp_path / "run", asker=FirstPlanOnly())
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    asked = list(read_jsonl(tmp_path / "run" / "predictions.jsonl"))
    assert server.count == 1 and 0 < len(asked) < 8
    assert result.status == "stopped" and result.stop_reason == "one batch only"
    assert manifest["options"]["way"] == {"asked": 1}


def test_a_batch_spec_asked_live_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """Priced at Batch API prices, a --batch spec asked live could pass its budget."""
    with pytest.raises(ConfigError, match="--batch"):
        asyncio.run(
            execute_run(
                tiny_config(model="baseline/random", batch=True),
                tmp_path / "run",
                fast_options(),
                tasks=TINY_TASKS,
                samples=make_samples(1, 3),
            )
        )
    assert not (tmp_path / "run").exists()


def test_a_video_spec_without_its_clip_hook_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    spec = RunSpec(model="baseline/random", tasks=("er",), mode="video", video={"clips": [str(tmp_path)]})
    with pytest.raises(ConfigError, match="clip hook"):
        asyncio.run(execute_run(spec, tmp_path / "run", fast_options(), samples=make_samples(1, 3)))
    assert not (tmp_path / "run").exists()
