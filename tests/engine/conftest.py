"""Fixtures for engine tests: small project-made samples, the tiny task, a fake server and providers on it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from tests.engine import tiny_task
from tests.fakes.openai_server import FakeOpenAIServer

from rescue_bench.data.schema import Row, Sample
from rescue_bench.engine.execute import EngineOptions
from rescue_bench.engine.run import RunOptions
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import get_preset
from rescue_bench.spec import RunSpec, validate_spec
from rescue_bench.tasks.base import Task

SPEAKERS = ("Therapist", "Ana", "Ben", "Therapist", "Ana")


def make_samples(n: int = 3, rows: int = 5) -> list[Sample]:
    """``n`` fictional couple samples of ``rows`` rows; row text is made up."""
    return [
        Sample(
            sample_id=f"s{k:02d}",
            scenario="couple",
            participants=("Ana", "Ben"),
            rows=tuple(
                Row(
                    row_index=i,
                    primary_speaker=SPEAKERS[(i - 1) % len(SPEAKERS)],
                    dialogue_cleaned=f"line {i} of sample {k}",
                )
                for i in range(1, rows + 1)
            ),
        )
        for k in range(n)
    ]


def write_jsonl(path: Path, samples: list[Sample]) -> Path:
    path.write_text("".join(json.dumps(s.to_release()) + "\n" for s in samples), encoding="utf-8")
    return path


TINY_TASKS: dict[str, Task] = {"echo": cast(Task, tiny_task)}


@pytest.fixture
def samples() -> list[Sample]:
    return make_samples()


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(tiny_task.oracle) as fake:
        yield fake


def provider_on(
    server: FakeOpenAIServer, *, model: str = "m1", timeout: float = 5.0, preset: str = "vllm"
) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        model, preset=get_preset(preset), base_url=server.base_url, api_key="sk-test", timeout=timeout
    )


def tiny_config(**changes: Any) -> RunSpec:
    """A spec of the tiny task; ``changes`` are spec fields (``model`` may be a plain name)."""
    base: dict[str, Any] = {"model": "vllm/m1", "tasks": ("echo",), "data": "test"}
    base.update(changes)
    return validate_spec(base, tasks=TINY_TASKS)


def fast_options(**changes: Any) -> RunOptions:
    engine: dict[str, Any] = {
        "concurrency": 8,
        "adaptive": False,  # a fixed window: these tests count attempts, not how the window adapts
        "retry_base": 0.01,
        "retry_cap": 0.05,
        "max_retries": 3,
        "jitter_seed": 0,
    }
    engine.update(changes.pop("engine", {}))
    return RunOptions(engine=EngineOptions(**engine), quiet=True, **changes)


Handler = Callable[[Any], Any]
