"""Every source form: release JSONL, directory trees, the Hugging Face hub (offline here), the demo data."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import huggingface_hub
import pytest

from rescue_bench.data.load import DEFAULT_HF_REPO, load_samples, read_source
from rescue_bench.errors import DataError

MakeSample = Callable[..., dict[str, Any]]
Jsonl = Callable[..., Path]


def _write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")


def test_real_subset_loads_without_errors(real_subset: Path) -> None:
    report = read_source(real_subset)
    assert report.errors == ()
    samples = load_samples(real_subset)
    assert [(s.scenario, len(s.rows)) for s in samples] == [
        ("couple", 16),
        ("couple", 17),
        ("couple", 36),
        ("family", 112),
    ]
    assert samples[3].participants == ("Maria", "Joel", "Laura")
    assert all(s.origin == f"{real_subset}:{n}" for n, s in enumerate(samples, start=1))


def test_directory_tree(make_sample: MakeSample, tmp_path: Path) -> None:
    couple = make_sample()
    del couple["sample_id"], couple["scenario"], couple["participants"]
    _write_json(tmp_path / "ann_and_bo" / "001_segment01.json", couple)
    family_rows = make_sample()["rows"]
    family_rows[2]["target"] = ["Family"]
    _write_json(tmp_path / "family_therapy" / "004" / "merged.json", family_rows)  # a bare list of rows
    _write_json(tmp_path / "manifest.json", {})
    _write_json(tmp_path / "ann_and_bo" / "manifest.json", {"rows": "not samples"})
    samples = load_samples(tmp_path)
    assert [s.sample_id for s in samples] == ["ann_and_bo/001_segment01", "family_therapy/004/merged"]
    assert [s.scenario for s in samples] == ["couple", "family"]
    assert samples[0].participants == ("Ann", "Bo")
    assert samples[0].origin == str(tmp_path / "ann_and_bo" / "001_segment01.json")


def test_directory_reports_a_broken_file_and_keeps_the_rest(make_sample: MakeSample, tmp_path: Path) -> None:
    _write_json(tmp_path / "a.json", make_sample())
    (tmp_path / "b.json").write_text('{"rows": [', encoding="utf-8")
    report = read_source(tmp_path)
    assert [s.sample_id for s in report.samples] == ["ann_and_bo/001"]
    [error] = report.errors
    assert (error.file, error.sample_id) == (str(tmp_path / "b.json"), "b")
    with pytest.raises(DataError, match=r"b\.json sample b: not valid JSON"):
        load_samples(tmp_path)


def test_strict_loading_treats_warnings_as_errors(make_sample: MakeSample, jsonl: Jsonl) -> None:
    sample = make_sample()
    sample["rows"][0]["utterance_type"] = "complaint"
    path = jsonl(sample)
    assert len(load_samples(path)) == 1
    with pytest.raises(DataError, match="utterance_type 'complaint'") as caught:
        load_samples(path, strict=True)
    assert [p.severity for p in caught.value.problems] == ["warning"]
    assert not str(caught.value).startswith("warning")


def test_duplicate_sample_ids_are_errors(make_sample: MakeSample, jsonl: Jsonl) -> None:
    report = read_source(jsonl(make_sample(), make_sample()))
    assert len(report.samples) == 1
    [error] = report.errors
    assert "duplicate sample_id" in error.message and error.sample_id == "ann_and_bo/001"
    assert error.line == 2 and error.message.endswith(":1)")


def test_a_repeated_key_is_a_warning_naming_file_line_sample_and_key(
    make_sample: MakeSample, jsonl: Jsonl, tmp_path: Path
) -> None:
    path = jsonl(make_sample(), make_sample(sample_id="ann_and_bo/002"))
    lines = path.read_text(encoding="utf-8").splitlines()
    # The second sample's first row names its speaker twice; the last value is kept, as json.loads does.
    lines[1] = lines[1].replace('"primary_speaker": ', '"primary_speaker": "Nobody", "primary_speaker": ', 1)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = read_source(path)
    assert report.errors == () and len(report.samples) == 2
    [warning] = report.warnings
    assert (warning.file, warning.line, warning.sample_id) == (str(path), 2, "ann_and_bo/002")
    assert "'primary_speaker' appears twice" in warning.message
    assert report.samples[1].rows[0].speaker != "Nobody"
    tree = tmp_path / "tree" / "cy_and_di" / "001.json"
    tree.parent.mkdir(parents=True)
    tree.write_text(lines[1].replace('"sample_id": ', '"sample_id": "x", "sample_id": ', 1), encoding="utf-8")
    warnings = read_source(tree.parent.parent).warnings
    assert {w.message.split("'")[1] for w in warnings} == {"primary_speaker", "sample_id"}
    assert {w.file for w in warnings} == {str(tree)}


def test_sample_id_from_source_file_and_line(make_sample: MakeSample, jsonl: Jsonl) -> None:
    with_source = make_sample(source_file="data/therapy_merged_all/cy_and_di/007_seg.json")
    del with_source["sample_id"]
    anonymous = make_sample()
    del anonymous["sample_id"]
    odd = make_sample(source_file="/")  # no file name to take an id from
    del odd["sample_id"]
    samples = load_samples(jsonl(with_source, anonymous, odd, name="part.jsonl"))
    assert [s.sample_id for s in samples] == ["cy_and_di/007_seg", "part/line2", "part/line3"]


def test_hf_offline_says_what_to_download_and_where(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    def offline(**kwargs: Any) -> str:
        calls.append(kwargs)
        raise huggingface_hub.errors.LocalEntryNotFoundError("no connection")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(DataError) as caught:
        read_source("hf")
    message = str(caught.value)
    assert calls == [{"repo_id": DEFAULT_HF_REPO, "repo_type": "dataset", "endpoint": None}]
    assert DEFAULT_HF_REPO in message and "when online, run `rescue-bench data get --source hf`" in message
    assert f"hf download {DEFAULT_HF_REPO} --repo-type dataset --local-dir DIR" in message
    assert "benchmark_191.jsonl" in message and "HF_HOME" in message
    assert "\n" not in message


def test_hf_snapshot_reads_the_release_jsonl(
    make_sample: MakeSample, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "snapshot" / "data"
    data.mkdir(parents=True)
    (data / "benchmark_191.jsonl").write_text(json.dumps(make_sample()) + "\n", encoding="utf-8")
    (data / "er.jsonl").write_text('{"not": "a sample"}\n', encoding="utf-8")
    seen: list[str] = []

    def cached(*, repo_id: str, repo_type: str, endpoint: str | None) -> str:
        seen.append(repo_id)
        return str(tmp_path / "snapshot")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", cached)
    [sample] = load_samples("hf:someone/mirror")
    assert seen == ["someone/mirror"]
    assert sample.origin == f"{data / 'benchmark_191.jsonl'}:1"


def test_demo_data_loads_cleanly() -> None:
    demo = resources.files("rescue_bench.data.demo").joinpath("demo.jsonl")
    if not demo.is_file():
        pytest.skip("the demo data (src/rescue_bench/data/demo/demo.jsonl) is not written yet")
    report = read_source("demo")
    assert (report.errors, report.warnings) == ((), ())
    assert {s.scenario for s in report.samples} == {"couple", "family"}
