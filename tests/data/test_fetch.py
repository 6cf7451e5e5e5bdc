"""`data get` against a local stand-in for GitHub and the Hugging Face Hub: a good download is checked and
installed whole; a truncated, stalled, killed, oversized or wrong download leaves nothing that is read."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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
    with ReleaseServer(release_bytes, fault="stall") as server, pytest.raises(DataError, match="stalled"):
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


# -- issue 42: what makes the official release, and bounds on the whole download -----------------------------


def test_a_dripping_server_is_given_up_by_the_minimum_rate(release_bytes: bytes) -> None:
    """Failure 4: a server sending 2 bytes every 50 ms never stalls, but is too slow: ended, and said so."""
    started = time.monotonic()
    with ReleaseServer(release_bytes, fault="drip") as server, pytest.raises(DataError) as raised:
        fetch_release("github", base_url=server.base_url, timeout=0.5)
    assert time.monotonic() - started < 10
    assert "too slow" in str(raised.value) and "KiB/s after --timeout 0.5 s" in str(raised.value)
    _nothing_installed()


def test_the_hub_download_has_an_overall_deadline(
    release_bytes: bytes, hf_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failure 4: ``--source hf`` honours the deadline too (--timeout 0.5 plus 32 KiB at the minimum rate)."""
    monkeypatch.setattr(fetch, "RELEASE_BOUND", 32 << 10)
    started = time.monotonic()
    with ReleaseServer(release_bytes, fault="drip") as server, pytest.raises(DataError) as raised:
        fetch_release("hf", base_url=server.base_url, timeout=0.5)
    assert time.monotonic() - started < 10
    assert "overall deadline of 2 s" in str(raised.value)
    _nothing_installed()


def test_a_mirror_s_file_is_a_copy_not_the_official_release(release_bytes: bytes, tmp_path: Path) -> None:
    """Failure 3: a mirror serving a file with the release's counts is installed as a copy from where it came,
    and a run on ``--data rescue`` and its exports say so (no Hub dataset, no model-index)."""
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app

    with ReleaseServer(release_bytes) as server:
        installed = fetch_release("github", base_url=server.base_url)
    assert not installed.record.official and installed.record.origin == installed.record.url
    runner = CliRunner()
    out = tmp_path / "run"
    made = runner.invoke(app, ["run", "--model", "baseline/random", "--data", "rescue", "--tasks", "itp",
                               "--limit-samples", "0", "--quiet", "--out", str(out)])  # fmt: skip
    if made.exit_code == 2:  # a limit of 0 is not taken: the whole (fictional) release, 191 samples
        made = runner.invoke(app, ["run", "--model", "baseline/random", "--data", "rescue", "--tasks", "itp",
                                   "--quiet", "--out", str(out)])  # fmt: skip
    assert made.exit_code in (0, 5), made.output
    dataset = json.loads((out / "run.json").read_text())["dataset"]
    assert dataset["origin"].startswith(server.base_url)
    exported = runner.invoke(app, ["export", str(out), "--format", "hf", "--out", str(tmp_path / "hf")])
    assert exported.exit_code == 0, exported.output
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "\nmodel-index:" not in card and "not verified as the official release" in card
    assert release.HF_REPO not in card


def test_only_the_pinned_sources_are_official() -> None:
    pinned = release.github_url(release.GITHUB_BASE)
    assert release.is_official("github", pinned, "0" * 64)
    assert not release.is_official("github", release.github_url("https://mirror.example"), "0" * 64)
    assert release.is_official("hf", f"hf://datasets/{release.HF_REPO}@{'a' * 40}/data/x.jsonl", "0" * 64)
    assert not release.is_official("hf", f"https://mirror.example/datasets/{release.HF_REPO}@a/x", "0" * 64)
    # A record written before the field: judged by where it came from.
    old = {"source": "github", "url": "https://mirror.example/x", "sha256": "0" * 64, "size": 1,
           "counts": {"samples": 191, "couple": 174, "family": 17, "rows": 7079}}  # fmt: skip
    assert not release.ReleaseRecord.from_json(old).official
    assert release.ReleaseRecord.from_json({**old, "url": pinned}).official


def test_a_secret_in_the_base_url_is_never_printed_and_its_query_follows_the_path(
    release_bytes: bytes,
) -> None:
    """W37: ``user:token@`` and ``?token=`` stay out of every message and record; the query goes after the
    path, so the file is still found."""
    with ReleaseServer(release_bytes) as server:
        host = server.base_url.partition("://")[2]
        installed = fetch_release("github", base_url=f"http://ann:pw-SECRET-1@{host}/?token=SECRET-TOKEN-2")
        assert server.requests == [f"GET {GITHUB_PATH}"]
    assert "SECRET" not in json.dumps(installed.record.to_json())
    with ReleaseServer(release_bytes, fault="404") as server:
        host = server.base_url.partition("://")[2]
        with pytest.raises(DataError) as raised:
            fetch_release(
                "github", base_url=f"http://ann:pw-SECRET-1@{host}/?token=SECRET-TOKEN-2", force=True
            )
    assert "SECRET" not in str(raised.value) and "HTTP 404" in str(raised.value)
    with pytest.raises(DataError) as raised:
        fetch_release(
            "github", base_url="http://ann:pw-SECRET-1@127.0.0.1:9/?token=SECRET-TOKEN-2", force=True
        )
    assert "SECRET" not in str(raised.value)


def test_a_local_write_error_is_named_as_such(release_bytes: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """W38: a full or read-only cache is a local write error, never "the download was cut off"."""
    real_open = Path.open

    def full_disk(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name.endswith(".part"):
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", full_disk)
    with ReleaseServer(release_bytes) as server, pytest.raises(DataError) as raised:
        fetch_release("github", base_url=server.base_url)
    message = str(raised.value)
    assert "No space left on device" in message and "cannot write the release into the cache" in message
    assert "cut off" not in message
