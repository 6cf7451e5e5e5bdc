"""`batch export` / `batch import` of a run with repeats: each batch is written once per repeat, with the
seed and the repeat-keyed custom id of that repeat, and each result goes back to its own repeat, so that
export -> results -> import writes the predictions.jsonl of an online run given the same replies."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.batch.test_offline import answer_line, import_batch
from tests.engine import tiny_task
from tests.engine.conftest import (
    TINY_TASKS,
    fast_options,
    make_samples,
    provider_on,
    tiny_config,
    write_jsonl,
)
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer

from rescue_bench.batch.offline import export_batch
from rescue_bench.engine.run import execute_run
from rescue_bench.errors import ConfigError
from rescue_bench.rundir import read_jsonl


def by_seed(request: ChatRequest) -> str:
    """The oracle's answer, except that a request sent with seed 1 (repeat 1) answers "yes" to everything:
    the repeats differ, so a result given to the wrong repeat shows."""
    right = json.loads(tiny_task.oracle(request))
    if request.body.get("seed") == 1:
        right = {"answers": [{**a, "answer": "yes"} for a in right["answers"]]}
    return json.dumps(right)


def answered(line: dict[str, Any], index: int) -> dict[str, Any]:
    out = answer_line(line, index)
    content = by_seed(ChatRequest(index, line["url"], {}, line["body"], 1))
    out["response"]["body"]["choices"][0]["message"]["content"] = content
    return out


def comparable(path: Path) -> list[dict[str, Any]]:
    return sorted(read_jsonl(path), key=lambda p: (p.get("repeat", 0), p["instance_id"]))


def test_export_answer_import_equals_online_with_repeats(tmp_path: Path) -> None:
    samples = make_samples(3, 4)
    config = tiny_config(data=str(write_jsonl(tmp_path / "data.jsonl", samples)), repeats=2)
    with FakeOpenAIServer(by_seed) as server:
        online = asyncio.run(
            execute_run(
                config, tmp_path / "online", fast_options(), tasks=TINY_TASKS, model=provider_on(server)
            )
        )
    summary = export_batch(
        config, samples, tmp_path / "requests.jsonl", tmp_path / "offline", tasks=TINY_TASKS
    )
    lines = [json.loads(x) for x in (tmp_path / "requests.jsonl").read_text().splitlines()]
    once = [line for line in lines if "seed" not in line["body"]]
    again = [line for line in lines if line["body"].get("seed") == 1]
    assert len(once) == len(again) == len(lines) // 2 > 0 and summary.instances == 2 * 12
    assert [f"{a['custom_id']}-r1" for a in once] == [b["custom_id"] for b in again]
    assert [a["body"]["messages"] for a in once] == [b["body"]["messages"] for b in again]

    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(json.dumps(answered(line, i)) + "\n" for i, line in enumerate(reversed(lines)))
    )
    imported, _ = import_batch(results, tmp_path / "offline", tasks=TINY_TASKS)

    assert imported.status == "finished" and imported.scores == online.scores
    offline, online_lines = (
        comparable(tmp_path / "offline" / "predictions.jsonl"),
        comparable(tmp_path / "online" / "predictions.jsonl"),
    )
    assert offline == online_lines and len(offline) == 24
    first = {p["instance_id"]: p["prediction"] for p in offline if "repeat" not in p}
    second = {p["instance_id"]: p["prediction"] for p in offline if p.get("repeat") == 1}
    assert first.keys() == second.keys() and first != second  # each repeat got its own result


def test_a_missing_repeat_result_fails_that_repeat_only(tmp_path: Path) -> None:
    samples = make_samples(2, 3)
    config = tiny_config(data=str(write_jsonl(tmp_path / "data.jsonl", samples)), repeats=2)
    export_batch(config, samples, tmp_path / "requests.jsonl", tmp_path / "run", tasks=TINY_TASKS)
    lines = [json.loads(x) for x in (tmp_path / "requests.jsonl").read_text().splitlines()]
    kept = [line for line in lines if not line["custom_id"].endswith("-r1")]
    (tmp_path / "results.jsonl").write_text(
        "".join(json.dumps(answered(x, i)) + "\n" for i, x in enumerate(kept))
    )
    import_batch(tmp_path / "results.jsonl", tmp_path / "run", tasks=TINY_TASKS)
    preds = list(read_jsonl(tmp_path / "run" / "predictions.jsonl"))
    assert all(p["valid"] for p in preds if "repeat" not in p)
    failed = [p for p in preds if p.get("repeat") == 1]
    assert len(failed) == 6 and not any(p["valid"] for p in failed)
    assert all("-r1" in p["problems"][0] for p in failed)


def test_sampling_repeats_without_a_seed_are_refused(tmp_path: Path) -> None:
    samples = make_samples(1, 2)
    config = tiny_config(data=str(write_jsonl(tmp_path / "data.jsonl", samples)), repeats=2)
    sampled = config.model_copy(update={"model": config.model.model_copy(update={"temperature": 0.7})})
    with pytest.raises(ConfigError, match="give --seed"):
        export_batch(sampled, samples, tmp_path / "requests.jsonl", tmp_path / "run", tasks=TINY_TASKS)
    assert not (tmp_path / "run").exists() and not (tmp_path / "requests.jsonl").exists()
    seeded = sampled.model_copy(update={"model": sampled.model.model_copy(update={"seed": 4})})
    export_batch(seeded, samples, tmp_path / "requests.jsonl", tmp_path / "run", tasks=TINY_TASKS)
    seeds = [json.loads(x)["body"]["seed"] for x in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert sorted(set(seeds)) == [4, 5]
