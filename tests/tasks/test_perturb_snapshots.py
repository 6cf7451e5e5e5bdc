"""Golden snapshots of one perturbed demo prompt per perturbation, beside the unperturbed ones in
``snapshots/``, so that a change of what a perturbation shows the model is seen in review.

Run ``UPDATE_SNAPSHOTS=1 pytest tests/tasks/test_perturb_snapshots.py`` to rewrite them after an intended
change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rescue_bench.data.schema import Sample
from rescue_bench.tasks import TASKS, make_batches
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.perturb import perturbed_task

SNAPSHOTS = Path(__file__).parent / "snapshots" / "perturb"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"
SEED = 11
CASES = (
    # (perturbation, task, scenario, config): the task where the perturbation shows most
    ("label-order", "rpp", "couple", TaskConfig()),
    ("name-swap", "stp", "couple", TaskConfig()),
    ("anonymize", "vp", "family", TaskConfig()),
    ("shuffle-window", "itp", "couple", TaskConfig(context_size=5)),
    ("context:1", "er", "family", TaskConfig()),
    ("no-cues", "ssp", "family", TaskConfig(mode="audiovisual")),
)


def render_snapshot(name: str, task_name: str, scenario: str, cfg: TaskConfig, samples: list[Sample]) -> str:
    task = perturbed_task(TASKS[task_name], name, SEED)
    sample = next(s for s in samples if s.scenario == scenario)
    batch = make_batches(task.build(sample, cfg), task.INFO.default_batch_size)[0]
    request = task.render(batch, cfg)
    parts = [f"# {name} (seed {SEED}) on {task_name}: {sample.sample_id} | mode {cfg.mode}"]
    parts.append(f"=== {', '.join(request.instance_ids)} | gold {json.dumps([i.gold for i in batch])} ===")
    for message in request.messages:
        parts.append(f"--- {message['role']} ---\n{message['content']}")
    parts.append(f"--- response_schema ---\n{json.dumps(request.response_schema, indent=1)}\n")
    return "\n".join(parts)


@pytest.mark.parametrize(("name", "task_name", "scenario", "cfg"), CASES, ids=[c[0] for c in CASES])
def test_perturbed_prompt_matches_the_snapshot(
    demo_samples: list[Sample], name: str, task_name: str, scenario: str, cfg: TaskConfig
) -> None:
    path = SNAPSHOTS / f"{name.replace(':', '_')}.txt"
    text = render_snapshot(name, task_name, scenario, cfg, demo_samples)
    if UPDATE:
        SNAPSHOTS.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"no snapshot {path}; run UPDATE_SNAPSHOTS=1 pytest {__file__}")
    assert text == path.read_text(encoding="utf-8"), (
        "prompt changed: review it, then rerun with UPDATE_SNAPSHOTS=1"
    )
