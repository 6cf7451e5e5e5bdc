"""Studies against several fake OpenAI-compatible servers (one per endpoint), and reading what they wrote."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import ChatRequest, schema_answer

from rescue_bench.rundir import read_jsonl


def flipped(request: ChatRequest) -> str:
    """A schema-shaped answer with every yes turned into no: a second model that answers otherwise."""
    return schema_answer(request).replace('"yes"', '"no"')


def study_toml(
    out: Path, servers: list[tuple[str, str]], *, tasks: str = "itp,rpp,stp", extra: str = ""
) -> str:
    """A study file of demo data, 2 samples, one model per (name, base URL)."""
    lines = [
        'data = "demo"',
        f"tasks = {json.dumps(tasks.split(','))}",
        "limit_samples = 2",
        f'out = "{out}"',
        extra,
        "[engine]",
        "concurrency = 4",
        "max_retries = 0",
    ]
    for name, url in servers:
        lines += ["[[models]]", f'name = "{name}"', f'base_url = "{url}"']
    return "\n".join(lines) + "\n"


def sweep_command(study: Path, *more: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from rescue_bench.cli.main import main; main()",
        "sweep",
        str(study),
        *more,
    ]


def study_json(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "study.json").read_text()))


def instance_ids(run: Path) -> list[str]:
    return [str(r["instance_id"]) for r in read_jsonl(run / "predictions.jsonl")]


def leaderboard_csv(out: Path) -> list[dict[str, str]]:
    with (out / "leaderboard.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
