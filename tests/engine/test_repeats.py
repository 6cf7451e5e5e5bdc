"""``repeats = K``: every instance asked K times, each (instance, repeat) recorded, cached and resumed once;
a run without repeats writes what it always wrote."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.engine import tiny_task
from tests.engine.conftest import TINY_TASKS, fast_options, make_samples, provider_on, tiny_config
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer

from rescue_bench.data.schema import Sample
from rescue_bench.engine.run import RunResult, execute_run
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Generation
from rescue_bench.rundir import read_jsonl
from rescue_bench.rundir.cache import KEY_VERSION, CacheKeys


def flipping(request: ChatRequest) -> str:
    """Right answers without a seed (repeat 0); with seed s, the answer of every s-th item flipped."""
    seed = request.body.get("seed")
    answers = json.loads(tiny_task.oracle(request))["answers"]
    for k, item in enumerate(answers):
        if seed is not None and k % (seed + 1) == 0:
            item["answer"] = "no" if item["answer"] == "yes" else "yes"
    return json.dumps({"answers": answers})


def run(server: FakeOpenAIServer, out: Path, samples: list[Sample], **kw: Any) -> RunResult:
    config = tiny_config(**kw.pop("spec", {}))
    return asyncio.run(
        execute_run(
            config,
            out,
            kw.pop("options", fast_options()),
            tasks=TINY_TASKS,
            model=provider_on(server),
            samples=samples,
        )
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return list(read_jsonl(path))


def test_every_instance_is_asked_k_times_with_its_own_seed(tmp_path: Path) -> None:
    samples = make_samples(3, 5)
    with FakeOpenAIServer(flipping) as server:
        result = run(server, tmp_path / "run", samples, spec={"repeats": 3}, options=fast_options())
        seeds = Counter(r.body.get("seed") for r in server.requests)
    assert result.status == "finished"
    preds = lines(tmp_path / "run" / "predictions.jsonl")
    keys = [(p["instance_id"], p.get("repeat", 0)) for p in preds]
    assert len(keys) == len(set(keys)) == 15 * 3
    assert all("repeat" not in p for p in preds if p.get("repeat", 0) == 0)  # 0 is never written
    # 6 batches per repeat (2 per sample); repeat 0 goes without a seed (temperature 0, none given).
    assert seeds == {None: 6, 1: 6, 2: 6}
    requests = lines(tmp_path / "run" / "requests.jsonl")
    assert Counter(r.get("repeat", 0) for r in requests) == {0: 6, 1: 6, 2: 6}
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["config"]["repeats"] == 3
    assert manifest["counts"]["echo"]["instances"] == manifest["counts"]["echo"]["done"] == 45
    entry = result.scores["echo"]["all"] if result.scores else {}
    per_repeat = [
        sum(p["gold"] == p["prediction"] for p in preds if p.get("repeat", 0) == r) / 15 for r in range(3)
    ]
    assert [r["accuracy"] for r in entry["repeats"]["per_repeat"]] == pytest.approx(per_repeat)
    assert entry["accuracy"] == pytest.approx(sum(per_repeat) / 3)
    assert entry["repeats"]["range"]["accuracy"] == pytest.approx([min(per_repeat), max(per_repeat)])
    assert per_repeat[0] == 1.0 and min(per_repeat) < 1.0  # the repeats really differ
    assert entry["n"] == 15


def test_a_repeat_is_never_served_another_repeats_reply(tmp_path: Path) -> None:
    samples = make_samples(2, 4)
    options = fast_options(cache_path=tmp_path / "cache.sqlite3")
    with FakeOpenAIServer(flipping) as server:
        run(server, tmp_path / "a", samples, spec={"repeats": 3}, options=options)
        first = server.count
        run(server, tmp_path / "b", samples, spec={"repeats": 3}, options=options)
        assert server.count == first  # every repeat was cached, each under its own key
    a, b = lines(tmp_path / "a" / "predictions.jsonl"), lines(tmp_path / "b" / "predictions.jsonl")
    assert [p["prediction"] for p in a] == [p["prediction"] for p in b]
    by_repeat = [[p["prediction"] for p in b if p.get("repeat", 0) == r] for r in range(3)]
    assert by_repeat[1] != by_repeat[0] and by_repeat[2] != by_repeat[1]
    assert all(r["cached"] for r in lines(tmp_path / "b" / "requests.jsonl"))


def test_repeat_zero_keeps_the_key_of_every_run_before_repeats() -> None:
    identity: dict[str, Any] = {"provider": "openai", "base_url": "https://x/v1", "model": "m"}
    params = Generation(seed=3)
    keys = CacheKeys(identity, params)
    content = "c0ffee"
    fields = params.model_dump(mode="json", exclude_defaults=True)
    blob = {"params": fields, "provider": identity, "request": content, "v": KEY_VERSION}
    text = json.dumps(blob, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert keys.of(content) == keys.of(content, 0) == hashlib.sha256(text.encode()).hexdigest()
    assert len({keys.of(content, r) for r in range(4)}) == 4


def test_one_repeat_writes_exactly_what_a_run_without_repeats_wrote(tmp_path: Path) -> None:
    samples = make_samples(2, 4)
    with FakeOpenAIServer(tiny_task.oracle) as server:
        result = run(server, tmp_path / "run", samples, spec={"repeats": 1})
    root = tmp_path / "run"
    assert not any("repeat" in p for p in lines(root / "predictions.jsonl"))
    assert not any("repeat" in r for r in lines(root / "requests.jsonl"))
    manifest = json.loads((root / "run.json").read_text())
    assert "repeats" not in manifest["config"] and "repeats" not in manifest["counts"]["echo"]
    scores = json.loads((root / "scores.json").read_text())
    assert "repeats" not in scores["echo"]["all"] and scores == result.scores
    assert manifest["config"] == json.loads(json.dumps(_config_without_repeats()))


def _config_without_repeats() -> dict[str, Any]:
    from rescue_bench.spec.record import config_record

    return config_record(tiny_config(), TINY_TASKS)


def test_resume_asks_only_the_missing_instance_repeats(tmp_path: Path) -> None:
    samples = make_samples(2, 4)
    out, uncached = tmp_path / "run", fast_options(engine={"use_cache": False})
    with FakeOpenAIServer(flipping) as server:
        run(server, out, samples, spec={"repeats": 2}, options=uncached)
        full = server.count
        # Drop repeat 1 of the first sample from the records: a resumed run asks exactly those again.
        kept = [
            p for p in lines(out / "predictions.jsonl") if (p.get("repeat"), p["sample_id"]) != (1, "s00")
        ]
        (out / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in kept))
        run(server, out, samples, spec={"repeats": 2}, options=uncached)
        assert server.count - full == 2  # the two batches of s00, repeat 1
        assert {r.body.get("seed") for r in server.requests[full:]} == {1}
    keys = [(p["instance_id"], p.get("repeat", 0)) for p in lines(out / "predictions.jsonl")]
    assert len(keys) == len(set(keys)) == 16


def test_repeats_and_circular_eval_are_one_or_the_other(tmp_path: Path) -> None:
    with FakeOpenAIServer(tiny_task.oracle) as server, pytest.raises(ConfigError, match="--repeats"):
        run(server, tmp_path / "run", make_samples(1, 3), spec={"repeats": 2, "perturb": "label-order:all"})
    assert not (tmp_path / "run" / "run.json").exists()


def test_the_report_shows_the_repeats_only_for_a_run_with_repeats(tmp_path: Path) -> None:
    from rescue_bench.report.build import build_report

    samples = make_samples(3, 5)
    with FakeOpenAIServer(flipping) as server:
        run(server, tmp_path / "once", samples)
        run(server, tmp_path / "thrice", samples, spec={"repeats": 3})
    assert "repeats" not in [t.key for t in build_report([tmp_path / "once"]).tables]
    table = next(t for t in build_report([tmp_path / "thrice"]).tables if t.key == "repeats")
    scores = json.loads((tmp_path / "thrice" / "scores.json").read_text())["echo"]["all"]
    row = next(r for r in table.rows if r[3] == "accuracy")
    assert row[2] == 3 and row[4].value == scores["accuracy"]  # type: ignore[union-attr]
    assert [row[6].value, row[7].value] == scores["repeats"]["range"]["accuracy"]  # type: ignore[union-attr]


def test_batch_export_refuses_untellable_repeats_before_writing(tmp_path: Path) -> None:
    """Repeats are exported (tests/batch/test_offline_repeats.py) unless their asks are alike: sampling with
    no seed sends every repeat the same request, whose results could not be mapped back."""
    from rescue_bench.batch.offline import export_batch
    from rescue_bench.spec import validate_spec

    model = {"name": "openai/gpt-4o-mini", "temperature": 0.7}
    spec = validate_spec({"model": model, "data": "demo", "tasks": "rpp", "repeats": 2})
    with pytest.raises(ConfigError, match="repeats"):
        export_batch(spec, make_samples(1, 4), tmp_path / "req.jsonl", tmp_path / "run")
    assert not (tmp_path / "run").exists() and not (tmp_path / "req.jsonl").exists()
