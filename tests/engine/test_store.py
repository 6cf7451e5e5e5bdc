"""Run-directory files: torn lines, compaction, config comparison."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from rescue_bench.rundir import (
    JsonlAppender,
    RunDirError,
    RunStore,
    cut_torn_tail,
    describe_changes,
    read_jsonl,
)


def test_torn_last_line_is_skipped_and_cut(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"instance_id": "a"}\n{"instance_id": "b"}\n{"instance_id": "c", "va')
    assert [r["instance_id"] for r in read_jsonl(path)] == ["a", "b"]
    appender = JsonlAppender(path)  # cuts the torn tail before appending
    appender.append([{"instance_id": "c"}])
    appender.close()
    assert [r["instance_id"] for r in read_jsonl(path)] == ["a", "b", "c"]


def test_terminated_but_garbled_last_line(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"instance_id": "a"}\n{"instance_id": \n')
    assert [r["instance_id"] for r in read_jsonl(path)] == ["a"]
    cut_torn_tail(path)
    assert path.read_bytes() == b'{"instance_id": "a"}\n'


def test_damage_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"instance_id": "a"}\nnot json\n{"instance_id": "b"}\n')
    with pytest.raises(RunDirError, match=r"p.jsonl:2: not valid JSON"):
        list(read_jsonl(path))


def test_compaction_keeps_the_latest_line_per_instance(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.open()
    store.append_predictions([{"instance_id": "b", "valid": False}, {"instance_id": "a", "valid": True}])
    store.append_predictions([{"instance_id": "b", "valid": True}])
    records = store.compact_predictions(["a", "b"])
    store.append_predictions([{"instance_id": "c", "valid": True}])  # still appendable after compaction
    store.close()
    assert [(r["instance_id"], r["valid"]) for r in records] == [("a", True), ("b", True)]
    lines = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    assert [json.loads(x)["instance_id"] for x in lines] == ["a", "b", "c"]


def test_predictions_without_manifest_are_refused(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "predictions.jsonl").write_text('{"instance_id": "a"}\n')
    from rescue_bench.errors import ConfigError

    with pytest.raises(ConfigError, match=r"no run\.json"):
        RunStore(tmp_path / "run").check_compatible({"config": {}})


def test_describe_changes_ignores_operational_options() -> None:
    old = {
        "config": {"model": "m", "tasks": ["itp"]},
        "options": {"concurrency": 4},
        "model": {"base_url": "a"},
    }
    new = {
        "config": {"model": "m", "tasks": ["itp"]},
        "options": {"concurrency": 64},
        "model": {"base_url": "b"},
    }
    assert describe_changes(old, new) == []
    assert describe_changes(old, {**new, "config": {"model": "m", "tasks": ["itp", "rpp"]}}) == [
        "tasks: ['itp'] -> ['itp', 'rpp']"
    ]


def test_a_run_directory_is_locked_by_its_process(tmp_path: Path) -> None:
    from rescue_bench.errors import ConfigError

    first, second = RunStore(tmp_path / "run"), RunStore(tmp_path / "run")
    first.lock()
    with pytest.raises(ConfigError, match="in use by another rescue-bench process"):
        second.lock()
    first.unlock()
    second.lock()
    second.unlock()


def test_fsyncs_are_grouped_by_interval(tmp_path: Path) -> None:
    appender = JsonlAppender(tmp_path / "p.jsonl", sync_interval=30.0)
    for i in range(60):
        appender.append([{"instance_id": str(i)}])
        time.sleep(0.002)  # each append would wake a syncer that fsyncs per append
    assert appender.syncs <= 1  # the first append's fsync; the rest wait for the interval or close()
    appender.close()
    assert len(list(read_jsonl(tmp_path / "p.jsonl"))) == 60


def test_appends_are_synced_without_close(tmp_path: Path) -> None:
    appender = JsonlAppender(tmp_path / "p.jsonl", sync_interval=0.01)
    appender.append([{"instance_id": "a"}])
    deadline = time.monotonic() + 5
    while appender.syncs < 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    appender.append([{"instance_id": "b"}])  # after the interval: synced again
    while appender.syncs < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert appender.syncs == 2
    appender.close()
