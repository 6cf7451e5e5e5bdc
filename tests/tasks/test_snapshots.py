"""Golden prompt snapshots on the demo data, so that every prompt change shows up in review.

Run ``UPDATE_SNAPSHOTS=1 pytest tests/tasks/test_snapshots.py`` to rewrite them after an intended change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rescue_bench.data.schema import Sample
from rescue_bench.tasks import TASK_NAMES, TASKS, make_batches, rpp, ssp
from rescue_bench.tasks.base import TaskConfig

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"
CASES = (
    ("couple", TaskConfig()),
    (
        "family",
        TaskConfig(
            mode="audiovisual",
            options={
                "rpp": rpp.Options(include_current_turn=True),
                "ssp": ssp.Options(include_target_emotion=True),
            },
        ),
    ),
)


def render_snapshot(task_name: str, samples: list[Sample]) -> str:
    """The first request of the first couple and the first family demo sample, as readable text."""
    task = TASKS[task_name]
    parts = [f"# task {task_name}, prompt hash {task.INFO.prompt_hash}\n"]
    for scenario, cfg in CASES:
        sample = next(s for s in samples if s.scenario == scenario)
        batch = make_batches(task.build(sample, cfg), task.INFO.default_batch_size)[0]
        request = task.render(batch, cfg)
        parts.append(f"=== {sample.sample_id} | mode {cfg.mode} | {', '.join(request.instance_ids)} ===")
        for message in request.messages:
            parts.append(f"--- {message['role']} ---\n{message['content']}")
        parts.append(f"--- response_schema ---\n{json.dumps(request.response_schema, indent=1)}\n")
    return "\n".join(parts)


@pytest.mark.parametrize("task_name", TASK_NAMES)
def test_prompts_match_the_snapshot(demo_samples: list[Sample], task_name: str) -> None:
    path = SNAPSHOTS / f"{task_name}.txt"
    text = render_snapshot(task_name, demo_samples)
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"no snapshot {path}; run UPDATE_SNAPSHOTS=1 pytest {__file__}")
    assert text == path.read_text(encoding="utf-8"), (
        "prompt changed: review it, then rerun with UPDATE_SNAPSHOTS=1"
    )
