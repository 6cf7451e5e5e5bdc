"""A run the project produces itself: `rescue-bench run --model baseline/random --data demo` (both scenarios),
judged by a deterministic injected judge, shared by the report tests of a module."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.judge.runner import Judge, judge_run
from rescue_bench.records import Reply, Request


async def word_overlap_judge(request: Request) -> Reply:
    """ER: 5 for the same text, 3 when a word is shared, else 1. VP: pairing 2 when every gold target is
    predicted (else 0), viewpoint 2."""
    found = re.match(r"Checkpoints:\n(.*?)(\n\nA previous answer|\Z)", request.messages[1]["content"], re.S)
    assert found is not None
    graded: list[dict[str, Any]] = []
    for cid, view in json.loads(found.group(1)).items():
        if "gold_emotion" in view:
            gold, pred = set(view["gold_emotion"].split()), set((view["predicted_emotion"] or "").split())
            score = 5 if gold == pred else 3 if gold & pred - {"feels", "and"} else 1
            graded.append({"id": cid, "emotion_score": score, "verdict": "pass", "notes": ""})
        else:
            targets = {g["target"] for g in view["gold_viewpoints"]}
            predicted = {p["target"] for p in view["predicted_viewpoints"]}
            graded.append(
                {
                    "id": cid,
                    "source_target_score": 2 if targets <= predicted else 0,
                    "viewpoint_score": 2,
                    "verdict": "pass",
                    "notes": "",
                }
            )
    return Reply(text=json.dumps({"graded": graded}))


def make_demo_run(out: Path, model: str = "baseline/random", seed: int = 5) -> Path:
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--model",
            model,
            "--data",
            "demo",
            "--seed",
            str(seed),
            "--out",
            str(out),
            "--no-cache",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    asyncio.run(judge_run(out, [Judge("fake/overlap-judge", word_overlap_judge)]))
    return out


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_demo_run(tmp_path_factory.mktemp("runs") / "random")


@pytest.fixture(scope="module")
def built(demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    from rescue_bench.report.build import build_report, write_report

    report = build_report([demo_run], with_paper=True)
    out = tmp_path_factory.mktemp("report")
    write_report(report, out)
    return report, out


LONG_NAMES = (
    "openai/gpt-4o-mini-2024-07-18",
    "openai/gpt-4o-2024-08-06",
    "anthropic/claude-3-5-sonnet-20241022",
)
"""Model names as long as real ones, which the terminal tables must show whole."""


def renamed_copy(run: Path, target: Path, name: str) -> Path:
    """A copy of a run directory whose run.json names another model (the answers stay the same)."""
    shutil.copytree(run, target)
    manifest = json.loads((target / "run.json").read_text())
    provider, model = name.split("/", 1)
    manifest["model"] = {"provider": provider, "model": model}
    (target / "run.json").write_text(json.dumps(manifest))
    return target


@pytest.fixture(scope="module")
def study_dir(demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study directory of three runs with long model names (copies of the demo run), as `sweep` writes."""
    from rescue_bench.study.record import RunEntry, StudyRecord, write_record

    folder = tmp_path_factory.mktemp("study") / "study"
    entries = []
    for name in LONG_NAMES:
        where = renamed_copy(demo_run, folder / name.replace("/", "-"), name)
        entries.append(RunEntry(model=name, dir=where.name, status="finished"))
    write_record(folder, StudyRecord(spec={}, updated="now", runs=tuple(entries)))
    return folder
