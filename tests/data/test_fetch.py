"""`data get` against a local stand-in for GitHub and the Hugging Face Hub: a good download is checked and
installed whole; a truncated, stalled, killed, oversized or wrong download leaves nothing that is read."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import huggingface_hub.constants
import pytest
from tests.conftest import REPO_ROOT
from tests.fakes.release_server import GITHUB_PATH, HF_COMMIT, ReleaseServer

from rescue_bench.data import fetch, release
from rescue_bench.data.fetch import fetch_release
from rescue_bench.data.load import load_samples
from rescue_bench.data.synth import write_synthetic
from rescue_bench.errors import DataError


@pytest.fixture(scope="module")
def release_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A fictional file with the release's counts (the generator's paper-scale split: 174 + 17, 7,079 rows)"""
    path = tmp_path_factory.mktemp("release") / "benchmark_191.jsonl"
    write_synthetic(path, samples=191, seed=0)
    return path.read_bytes()


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """huggingface_hub's cache in the test's own directory (the library reads HF_HUB_CACHE at import)."""
    cache = tmp_path / "hf"
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    return cache


def _nothing_installed() -> None:
    assert not release.release_file().exists()
    assert not list(release.data_dir().glob(".*"))  # no temporary file left either
    with pytest.raises(DataError, match="not downloaded yet"):
        load_samples("rescue")


def test_from_github_the_pinned_file_is_checked_installed_and_recorded(release_bytes: bytes) -> None:
    with ReleaseServer(release_bytes) as server:
        installed = fetch_release("github", base_url=server.base_url)
    assert server.requests == [f"GET {GITHUB_PATH}"]
    assert release.GITHUB_COMMIT in GITHUB_PATH and GITHUB_PATH.endswith("/data/benchmark_191.jsonl")
    assert installed.downloaded and installed.path == release.release_file()
    assert installed.path.read_bytes() == release_bytes
    record = release.read_record()
    assert record == installed.record
    assert record.sha256 == hashlib.sha256(release_bytes).hexdigest()
    assert (record.source, record.size, record.counts) == ("github", len(release_bytes), release.EXPECTED)
    samples = load_samples("rescue")
    assert (len(samples), sum(len(s.rows) for s in samples)) == (191, 7079)


def test_from_hugging_face_through_huggingface_hub(release_bytes: bytes, hf_cache: Path) -> None:
    with ReleaseServer(release_bytes) as server:
        installed = fetch_release("hf", base_url=server.base_url)
    assert installed.record.source == "hf"
    # Through a mirror (the local stand-in): recorded as a copy from its address, not the official release.
    assert (
        installed.record.url
        == f"{server.base_url}/datasets/{release.HF_REPO}@{HF_COMMIT}/data/benchmark_191.jsonl"
    )
    assert not installed.record.official
    assert installed.path.read_bytes() == release_bytes
    assert len(load_samples("rescue")) == 191


def test_a_good_copy_is_kept_and_force_downloads_again(release_bytes: bytes) -> None:
    with ReleaseServer(release_bytes) as server:
        fetch_release("github", base_url=server.base_url)
        again = fetch_release("github", base_url=server.base_url)
        assert not again.downloaded and len(server.requests) == 1
        assert fetch_release("github", base_url=server.base_url, force=True).downloaded
        assert len(server.requests) == 2


def test_a_truncated_download_is_refused_and_nothing_is_saved(release_bytes: bytes) -> None:
    with ReleaseServer(release_bytes, fault="truncate") as server, pytest.raises(DataError) as caught:
        fetch_release("github", base_url=server.base_url)
    message = str(caught.value)
    assert f"of {len(release_bytes):,} bytes" in message and "nothing was saved" in message
    assert "\n" not in message
    _nothing_installed()


def test_a_failed_download_leaves_the_earlier_copy_as_it_was(release_bytes: bytes) -> None:
    with ReleaseServer(release_bytes) as server:
        fetch_release("github", base_url=server.base_url)
    with ReleaseServer(release_bytes, fault="truncate") as server, pytest.raises(DataError):
        fetch_release("github", base_url=server.base_url, force=True)
    assert release.installed_release().read_bytes() == release_bytes
    assert sorted(p.name for p in release.data_dir().iterdir()) == [
        "benchmark_191.json",
        "benchmark_191.jsonl",
    ]


@pytest.mark.slow  # waits out a real timeout
def test_a_download_that_stalls_half_way_times_out(release_bytes: bytes) -> None:
    with ReleaseServer(release_bytes, fault="stall") as server, pytest.raises(DataError, match="cut off"):
        fetch_release("github", base_url=server.base_url, timeout=0.5)
    _nothing_installed()


@pytest.mark.subprocess
def test_a_download_killed_half_way_is_never_used(release_bytes: bytes, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    with ReleaseServer(release_bytes, fault="stall") as server:
        cli = "from rescue_bench.cli.main import main; main()"
        command = [sys.executable, "-c", cli, "data", "get", "--base-url", server.base_url]
        child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while not [p for p in release.data_dir().glob(".*.part") if p.stat().st_size > 0]:
                assert child.poll() is None and time.monotonic() < deadline, child.communicate()
                time.sleep(0.05)
        finally:
            child.send_signal(signal.SIGKILL)
            child.communicate()
    [leftover] = release.data_dir().glob(".*.part")
    assert not release.release_file().exists()
    with pytest.raises(DataError, match="not downloaded yet"):
        load_samples("rescue")
    with ReleaseServer(release_bytes) as server:
        fetch_release("github", base_url=server.base_url)
    assert not leftover.exists()  # the dead process's temporary file is cleared by the next download
    assert len(load_samples("rescue")) == 191


def test_a_file_with_other_counts_is_not_the_release(tmp_path: Path) -> None:
    small = tmp_path / "small.jsonl"
    write_synthetic(small, samples=11, seed=1)
    with ReleaseServer(small.read_bytes()) as server, pytest.raises(DataError) as caught:
        fetch_release("github", base_url=server.base_url)
    assert "holds 11 samples (10 couple, 1 family)" in str(caught.value)
    assert "the release holds 191 samples (174 couple, 17 family), 7,079 rows" in str(caught.value)
    _nothing_installed()


def test_a_file_that_is_not_jsonl_is_named_with_its_first_problem() -> None:
    page = b"<!DOCTYPE html>\n<html><body>Rate limited</body></html>\n"
    with ReleaseServer(page) as server, pytest.raises(DataError) as caught:
        fetch_release("github", base_url=server.base_url)
    url = release.github_url(server.base_url)
    assert str(caught.value).startswith(f"the downloaded file is not the release: {url}:1: not valid JSON")
    assert "(and 1 more)" in str(caught.value)
    _nothing_installed()


def test_the_wrong_file_from_hugging_face_is_refused_too(hf_cache: Path) -> None:
    with ReleaseServer(b'{"not": "a sample"}\n') as server, pytest.raises(DataError, match="not the release"):
        fetch_release("hf", base_url=server.base_url)
    _nothing_installed()


@pytest.mark.slow  # huggingface_hub retries the cut download, with real waits
def test_a_truncated_hub_download_is_refused(release_bytes: bytes, hf_cache: Path) -> None:
    with ReleaseServer(release_bytes, fault="truncate") as server, pytest.raises(DataError) as caught:
        fetch_release("hf", base_url=server.base_url)
    assert "cannot fetch the Hugging Face dataset" in str(caught.value)
    _nothing_installed()


def test_more_bytes_than_any_release_are_refused(
    release_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch, "MAX_BYTES", 1 << 20)
    with ReleaseServer(release_bytes) as server, pytest.raises(DataError, match="sent more than 1 MB"):
        fetch_release("github", base_url=server.base_url)
    _nothing_installed()


def test_a_missing_file_names_the_http_status() -> None:
    with ReleaseServer(b"", fault="404") as server, pytest.raises(DataError, match="HTTP 404"):
        fetch_release("github", base_url=server.base_url)
    _nothing_installed()


def test_offline_one_line_names_the_command_and_the_manual_route() -> None:
    with ReleaseServer(b"") as server:
        closed = server.base_url  # nothing listens here once the server is gone
    with pytest.raises(DataError) as caught:
        fetch_release("github", base_url=closed)
    message = str(caught.value)
    assert "run `rescue-bench data get`" in message
    assert f"download {release.github_url()} by hand and pass its path to --data" in message
    assert "\n" not in message
    _nothing_installed()
