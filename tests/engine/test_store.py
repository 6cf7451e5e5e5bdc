"""Run-directory files: torn lines, compaction, config comparison, typed records, the old judging layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rescue_bench.records import Prediction, ProblemKind
from rescue_bench.rundir import (
    JsonlAppender,
    PredictionLine,
    RunDirError,
    RunStore,
    cut_torn_tail,
    describe_changes,
    files,
    load_judging,
    load_run,
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


def test_terminated_but_garbled_last_line_is_damage_not_a_torn_write(tmp_path: Path) -> None:
    # Each record is one write ending in a newline: a terminated line that does not parse was not torn by a
    # kill, and is reported (with the way out), never cut off silently.
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"instance_id": "a"}\n{"instance_id": \n')
    with pytest.raises(RunDirError, match=r"p\.jsonl:2: not valid JSON .*delete line 2 of .*re-run"):
        list(read_jsonl(path))
    cut_torn_tail(path)
    assert path.read_bytes() == b'{"instance_id": "a"}\n{"instance_id": \n'


def test_damage_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"instance_id": "a"}\nnot json\n{"instance_id": "b"}\n')
    with pytest.raises(RunDirError, match=r"p.jsonl:2: not valid JSON"):
        list(read_jsonl(path))


def test_compaction_keeps_the_latest_line_per_instance(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.open()
    line = {"task": "itp"}
    store.append_predictions(
        [{**line, "instance_id": "b", "valid": False}, {**line, "instance_id": "a", "valid": True}]
    )
    store.append_predictions([{**line, "instance_id": "b", "valid": True}])
    records = store.compact_predictions(["a", "b"])
    store.append_predictions(
        [{**line, "instance_id": "c", "valid": True}]
    )  # still appendable after compaction
    store.close()
    assert [(r.instance_id, r.valid) for r in records] == [("a", True), ("b", True)]
    lines = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    assert [json.loads(x)["instance_id"] for x in lines] == ["a", "b", "c"]


def test_compaction_writes_each_latest_record_as_it_is(tmp_path: Path) -> None:
    # Compaction reuses the bytes a line was read or appended with, but only for the very line it is given:
    # a caller's newer view of an instance is encoded anew.
    def encoded(record: dict[str, object]) -> bytes:
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    earlier = {"instance_id": "d", "task": "itp", "valid": True}
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "predictions.jsonl").write_bytes(encoded(earlier))
    store = RunStore(tmp_path / "run")
    read = store.latest_predictions()
    store.open()
    first = {"instance_id": "a", "task": "itp", "valid": False, "prediction": "é"}
    appended = store.append_predictions([first, {"instance_id": "b", "task": "itp", "valid": True}])
    newer = appended[0].model_copy(update={"valid": True})
    latest = {"a": newer, "b": appended[1], "c": PredictionLine(instance_id="c", task="itp"), **read}
    records = store.compact_predictions(["c", "b", "a", "d"], latest)
    store.close()
    assert records == [latest["c"], appended[1], newer, read["d"]]
    written = (tmp_path / "run" / "predictions.jsonl").read_bytes()
    # Lines read or appended keep the keys they had; new ones carry every field of the line.
    kept_b = {"instance_id": "b", "task": "itp", "valid": True}
    assert written == b"".join(encoded(r) for r in [latest["c"].to_json(), kept_b, newer.to_json(), earlier])


def test_an_appended_record_that_is_not_a_prediction_line_is_refused_before_it_is_written(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path / "run")
    store.open()
    good = {"instance_id": "a", "task": "itp", "valid": True}
    with pytest.raises(RunDirError, match=r"predictions\.jsonl \(appending\): field 'vaild'"):
        store.append_predictions([good, {"instance_id": "b", "task": "itp", "vaild": True}])
    [line] = store.append_predictions([good])
    store.close()
    assert line.valid and line.key == "a"
    assert [r["instance_id"] for r in read_jsonl(store.predictions_file)] == ["a"]


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


def test_appends_reach_the_file_at_once_and_are_fsynced_at_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    monkeypatch.setattr(files.os, "fsync", synced.append)
    store = RunStore(tmp_path / "run")
    store.open()
    store.append_predictions([{"task": "itp", "instance_id": str(i)} for i in range(3)])
    store.append_request({"request_key": "k", "task": "itp"})
    # Readable by another process before any fsync: a kill of this one loses nothing appended.
    assert len(list(read_jsonl(store.predictions_file))) == 3 and synced == []
    store.write_manifest({"status": "running"})  # a checkpoint: both files, then run.json's own
    assert len(synced) == 3
    store.close()
    assert len(synced) == 5


# --- typed records ------------------------------------------------------------------------------------------

PREDICTION = {
    "instance_id": "s1::er::4",
    "task": "er",
    "sample_id": "s1",
    "scenario": "couple",
    "row_index": 4,
    "gold": {"emotion": "hurt", "intensity": 6},
    "valid": True,
    "prediction": {"emotion": "sad", "intensity": 5},
    "problems": ["normalized: 'Sad' -> 'sad'"],
    "meta": {"speaker": "Alan"},
    "scores": {"s_int": 4.0, "correct": 1},
    "request_key": "k1",
    "single": False,
}


def test_a_prediction_line_reads_back_as_written() -> None:
    line = PredictionLine.from_json(PREDICTION)
    assert line.to_json() == PREDICTION and list(line.to_json()) == list(PREDICTION)
    assert line.speaker == "Alan" and line.kinds == (ProblemKind.NORMALIZED,)
    assert isinstance(line.to_json()["scores"]["correct"], int)  # no int -> float drift on rewrite


def test_load_run_names_file_line_and_field_of_a_misspelt_key(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    bad = {**PREDICTION, "instance_id": "s1::er::5", "prediciton": None}
    (run / "predictions.jsonl").write_text(json.dumps(PREDICTION) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(RunDirError, match=r"predictions\.jsonl:2: field 'prediciton'"):
        load_run(run)
    (run / "predictions.jsonl").write_text(json.dumps({**PREDICTION, "valid": "maybe"}) + "\n")
    with pytest.raises(RunDirError, match=r"predictions\.jsonl:1: field 'valid'"):
        load_run(run)


def test_latest_line_per_instance_wins_when_loading(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    retried = {**PREDICTION, "valid": False, "prediction": None}
    lines = [retried, {**PREDICTION, "instance_id": "other"}, PREDICTION]
    (run / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    data = load_run(run)
    assert [(p.instance_id, p.valid) for p in data.prediction_lines] == [("s1::er::4", True), ("other", True)]


OLD_JUDGED = {
    "format": 1,
    "status": "finished",
    "config": {"model": "openai/x"},
    "judges": ["openai/j"],
    "judge_counts": {"openai/j": {"sent": 3, "valid": 2, "unscored": 1, "usage": {"prompt_tokens": 9}}},
    "judge_prompt_hashes": {"er": "h1", "vp": "h2"},
    "bertscore": {"model": "m", "hash": "m==1"},
}


def test_judging_of_an_old_run_json_is_read_from_its_keys(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps(OLD_JUDGED))
    judging = load_judging(run)
    assert judging.judges == ("openai/j",) and judging.counts["openai/j"].unscored == 1
    assert judging.counts["openai/j"].usage.prompt_tokens == 9
    assert judging.prompt_hashes == {"er": "h1", "vp": "h2"} and judging.bertscore is not None
    # judging.json, once written, wins over the old keys
    (run / "judging.json").write_text(json.dumps({"format": 1, "judges": ["b/k"]}))
    assert load_judging(run).judges == ("b/k",)


def test_the_engine_rewriting_an_old_run_json_keeps_its_judging(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.root.mkdir()
    store.run_file.write_text(json.dumps(OLD_JUDGED))
    before = load_judging(store.root)
    store.write_manifest({"format": 1, "status": "running", "config": {"model": "openai/x"}})
    assert "judge_counts" not in json.loads(store.run_file.read_text())
    assert json.loads((store.root / "judging.json").read_text())["counts"]["openai/j"]["valid"] == 2
    assert load_judging(store.root) == before


def test_problem_kinds_count_as_the_documented_prefixes() -> None:
    unreadable = ("parse_failure: empty reply", "missing: no answer for c2", "request_failed: HTTP 500")
    for problem in unreadable:
        assert Prediction("i", None, False, (problem,)).parse_failure, problem
    label = Prediction("i", None, False, ("invalid_label: 'x' is not a label",))
    assert label.invalid_label and not label.parse_failure
    note = Prediction("i", "track", True, ("normalized: 'Track' -> 'track'", "video: no clip for row 3"))
    assert not note.parse_failure and not note.invalid_label
    assert note.kinds == (ProblemKind.NORMALIZED, ProblemKind.VIDEO)
    assert ProblemKind.of("judge_total_ignored: 6 != 2") is ProblemKind.OTHER


def test_run_lock_is_reentrant_within_a_process_and_released_at_the_end(tmp_path: Path) -> None:
    from rescue_bench.errors import ConfigError
    from rescue_bench.rundir import run_lock

    root = tmp_path / "run"
    refused = pytest.raises(ConfigError, match="in use by another rescue-bench process")
    with run_lock(root, create=True), run_lock(root), refused:  # a judge pass rescoring inside its own lock
        RunStore(root).lock()
    with run_lock(tmp_path / "missing"):  # nothing to lock: the reader names the missing directory
        assert not (tmp_path / "missing").exists()
    store = RunStore(root)
    store.lock()
    store.unlock()
