"""The installed release: where it is, the one-line errors when it is missing or changed, and `--data hf`."""

from __future__ import annotations

import json
from pathlib import Path

import huggingface_hub.constants
import pytest
from tests.fakes.release_server import ReleaseServer

from rescue_bench.data import release
from rescue_bench.data.fetch import fetch_release
from rescue_bench.data.load import load_samples, read_source
from rescue_bench.data.synth import write_synthetic
from rescue_bench.errors import DataError


@pytest.fixture(scope="module")
def release_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("release") / "benchmark_191.jsonl"
    write_synthetic(path, samples=191, seed=0)
    return path.read_bytes()


def test_the_release_lives_in_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESCUE_BENCH_CACHE_DIR", str(tmp_path))
    assert release.release_file() == tmp_path / "data" / "benchmark_191.jsonl"
    assert release.record_file() == tmp_path / "data" / "benchmark_191.json"


def test_the_url_is_pinned_to_the_release_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    pinned = f"Tomsawyerhu/RESCUE-bench/{release.GITHUB_COMMIT}/data/benchmark_191.jsonl"
    assert release.github_url() == f"https://raw.githubusercontent.com/{pinned}"
    monkeypatch.setenv(release.GITHUB_BASE_ENV, "http://mirror.example/")
    assert release.github_url() == f"http://mirror.example/{pinned}"
    assert release.github_url("http://other.example") == f"http://other.example/{pinned}"


def test_before_data_get_one_line_says_what_to_run() -> None:
    with pytest.raises(DataError) as caught:
        read_source("rescue")
    message = str(caught.value)
    assert message.startswith("the official release is not downloaded yet: run `rescue-bench data get`")
    assert release.github_url() in message and "\n" not in message


def test_a_file_changed_after_it_was_installed_is_refused(release_bytes: bytes) -> None:
    with ReleaseServer(release_bytes) as server:
        fetch_release("github", base_url=server.base_url)
    path = release.release_file()
    path.write_bytes(release_bytes.replace(b"Therapist", b"Therapisr", 1))
    with pytest.raises(DataError, match=r"changed since `rescue-bench data get` installed it .*--force"):
        load_samples("rescue")


def test_a_record_that_cannot_be_read_counts_as_not_downloaded(release_bytes: bytes) -> None:
    with ReleaseServer(release_bytes) as server:
        fetch_release("github", base_url=server.base_url)
    release.record_file().write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not downloaded yet"):
        load_samples("rescue")


GOOD_RECORD = {
    "source": "github",
    "url": "https://mirror.example/x",
    "sha256": "0" * 64,
    "size": 1,
    "counts": {"samples": 191, "couple": 174, "family": 17, "rows": 7079},
    "official": False,
}


@pytest.mark.parametrize(
    "change",
    [{"official": "yes"}, {"size": "big"}, {"source": "ftp"}, {"counts": {"samples": 191}}, {"url": None}],
)
def test_a_record_of_the_wrong_shape_counts_as_not_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: dict[str, object]
) -> None:
    monkeypatch.setenv("RESCUE_BENCH_CACHE_DIR", str(tmp_path))
    release.record_file().parent.mkdir(parents=True)
    release.record_file().write_text(json.dumps(GOOD_RECORD), encoding="utf-8")
    assert release.read_record() == release.ReleaseRecord.from_json(GOOD_RECORD)
    release.record_file().write_text(json.dumps({**GOOD_RECORD, **change}), encoding="utf-8")
    assert release.read_record() is None
    with pytest.raises(ValueError, match=next(iter(change))):
        release.ReleaseRecord.from_json({**GOOD_RECORD, **change})


def test_data_hf_downloads_when_online(
    release_bytes: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    with ReleaseServer(release_bytes) as server:
        monkeypatch.setenv(release.HF_ENDPOINT_ENV, server.base_url)
        samples = load_samples("hf")
    assert len(samples) == 191
    assert any(r.startswith("GET /datasets/tomhu/relation_therapy/resolve/") for r in server.requests)
    # the server is gone (offline): the same name reads the Hugging Face cache
    assert len(load_samples("hf")) == 191


def test_release_jsonl_in_a_snapshot_prefers_the_benchmark_file(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    for name in ("benchmark_191.jsonl", "er.jsonl", "vp.jsonl"):
        (tmp_path / "data" / name).write_text("{}\n")
    assert release.release_jsonl_in(tmp_path) == tmp_path / "data" / "benchmark_191.jsonl"
    (tmp_path / "data" / "benchmark_191.jsonl").unlink()
    assert release.release_jsonl_in(tmp_path) == tmp_path
