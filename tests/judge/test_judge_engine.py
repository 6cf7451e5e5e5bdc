"""One shape of engine settings: the judges of `run --judge` and of `score` get the same engine options, the
run's own (`--rpm`, `--concurrency`, ...), with `--judge-rpm` and the like only where asked for; so `--rpm`
throttles the judges of a run as it throttles `score`'s."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.clock import run_virtual
from tests.fakes.openai_server import FakeOpenAIServer
from tests.judge.test_score_cli import grade
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.engine.execute import Engine, EngineOptions
from rescue_bench.engine.limits import Limiter
from rescue_bench.judge import after_run
from rescue_bench.spec.settings import EngineSpec

RUNNER = CliRunner()
BASE = ["--model", "baseline/random", "--data", "demo", "--tasks", "er", "--limit-samples", "4"]
ENGINE_FLAGS = ["--concurrency", "3", "--max-retries", "2", "--no-cache"]


class Built:
    """The engines the judge pass builds (:class:`Engine` as ``judge.after_run`` calls it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.engines: list[Engine] = []
        built = self

        class Recording(Engine):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                built.engines.append(self)

        monkeypatch.setattr(after_run, "Engine", Recording)

    @property
    def options(self) -> list[EngineOptions]:
        return [engine.options for engine in self.engines]


def run_args(out: Path, server: FakeOpenAIServer, *extra: str) -> list[str]:
    judge = ["--judge", "vllm/judge-x", "--judge-base-url", server.base_url]
    return ["run", *BASE, *judge, *ENGINE_FLAGS, "--out", str(out), "--quiet", "--no-bertscore", *extra]


def one_sample(args: list[str]) -> list[str]:
    """``args`` with one sample: a single candidate request, which ``--rpm 2`` lets through at once."""
    return [
        ("1" if previous == "--limit-samples" else a)
        for previous, a in zip(["", *args[:-1]], args, strict=True)
    ]


def test_run_judge_and_score_give_the_judges_the_same_engine_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = Built(monkeypatch)
    with FakeOpenAIServer(grade) as server:
        ran = RUNNER.invoke(app, run_args(tmp_path / "run", server, "--rpm", "6000", "--tpm", "9000000"))
        assert ran.exit_code == 0, ran.output
        assert server.count > 0
        score = ["score", str(tmp_path / "run"), "--judge", "vllm/judge-x", "--base-url", server.base_url]
        scored = RUNNER.invoke(
            app, [*score, *ENGINE_FLAGS, "--rpm", "6000", "--tpm", "9000000", "--bertscore-model", "none"]
        )
        assert scored.exit_code == 0, scored.output
    run_options, score_options = built.options
    assert run_options == score_options
    assert run_options == EngineOptions(
        concurrency=3, adaptive=True, timeout=120.0, rpm=6000, tpm=9000000, max_retries=2, use_cache=False
    )
    assert built.engines[0].limiter.concurrency == 3


class Stop(Exception):
    """Raised in place of asking the judges: the engines they would be asked through are built."""


async def _stop(*args: Any, **kwargs: Any) -> Any:
    raise Stop


def four_slots(limiter: Limiter) -> float:
    """Seconds (of the event loop's clock, with no real waiting) four requests take through ``limiter``."""

    async def main() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        for _ in range(4):
            async with limiter.slot():
                pass
        return loop.time() - started

    return run_virtual(main())


@pytest.mark.parametrize(
    ("flags", "throttled"),
    [(("--rpm", "2"), True), (("--rpm", "6000", "--judge-rpm", "2"), True), (("--rpm", "6000"), False)],
)
def test_rpm_spreads_four_judge_requests_over_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: tuple[str, ...], throttled: bool
) -> None:
    built = Built(monkeypatch)
    monkeypatch.setattr(after_run, "judge_run", _stop)
    with FakeOpenAIServer(grade) as server:
        ran = RUNNER.invoke(app, one_sample(run_args(tmp_path / "run", server, *flags)))
    assert isinstance(ran.exception, Stop), ran.output
    (engine,) = built.engines
    elapsed = four_slots(engine.limiter)
    assert elapsed >= 60.0 if throttled else elapsed < 1.0


def test_a_judge_override_applies_to_the_judges_only() -> None:
    spec = EngineSpec(concurrency=16, rpm=600, judge_rpm=30, judge_concurrency=2)
    assert EngineOptions.of(spec).rpm == 600 and EngineOptions.of(spec).concurrency == 16
    judged = EngineOptions.of_judge(spec)
    assert (judged.rpm, judged.concurrency, judged.tpm) == (30, 2, None)
    assert EngineOptions.of_judge(spec, 5).concurrency == 5  # a judge's own concurrency wins
    assert EngineOptions.of_judge(EngineSpec()) == EngineOptions.of(EngineSpec())  # one default
