"""A failing response cache (damaged file, full disk, a sqlite error on write) never stops a run (issue 13).

The cache only saves requests: whatever it does, the run finishes with every instance answered, one warning
names the cache file and how to clear it, and the commands that need the cache fail in one line.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.engine import tiny_task
from tests.engine.conftest import TINY_TASKS, fast_options, make_samples, provider_on, tiny_config
from tests.fakes.openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.engine.run import RunResult, execute_run
from rescue_bench.records import Reply, Usage
from rescue_bench.rundir import cache as cache_module
from rescue_bench.rundir.cache import ResponseCache

REPLY = Reply(text='{"answer": "yes"}', usage=Usage(1, 1, 0), finish_reason="stop")
IDENTITY = {"provider": "openai", "model": "m"}


def cache_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "rescue_bench.rundir.cache"]


def run_with_cache(cache_path: Path, out: Path) -> RunResult:
    samples = make_samples(3, 5)
    options = fast_options(cache_path=cache_path)
    with FakeOpenAIServer(tiny_task.oracle) as server:
        return asyncio.run(
            execute_run(
                tiny_config(), out, options, tasks=TINY_TASKS, model=provider_on(server), samples=samples
            )
        )


def assert_complete(result: RunResult) -> None:
    assert result.status == "finished" and result.scores is not None
    assert result.counts["echo"].done == result.counts["echo"].instances == 15
    assert result.counts["echo"].valid == 15


def test_a_damaged_cache_file_warns_once_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "responses.sqlite3"
    path.write_bytes(b"this is not a database, it only has the name of one" * 100)
    caplog.set_level(logging.WARNING)
    result = run_with_cache(path, tmp_path / "run")
    assert_complete(result)
    [warning] = cache_warnings(caplog)
    assert str(path) in warning and "going on without the cache" in warning
    assert "rescue-bench cache clear" in warning and "delete the file" in warning


class FullDisk:
    """A sqlite connection whose writes fail as on a full disk; reads pass through."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self.writes = 0

    def execute(self, sql: str, *args: Any) -> Any:
        return self._db.execute(sql, *args)

    def executemany(self, sql: str, rows: Any) -> Any:
        self.writes += 1
        raise sqlite3.OperationalError("database or disk is full")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")


def test_a_full_disk_for_the_cache_warns_once_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[FullDisk] = []
    real_connect = cache_module._connect

    def full(path: Path) -> Any:
        made.append(FullDisk(real_connect(path)))
        return made[-1]

    monkeypatch.setattr(cache_module, "_connect", full)
    caplog.set_level(logging.WARNING)
    result = run_with_cache(tmp_path / "c.sqlite3", tmp_path / "run")
    assert_complete(result)
    assert made and made[0].writes == 1  # given up after the first failed write, not tried per reply
    [warning] = cache_warnings(caplog)
    assert "cannot be written" in warning and "database or disk is full" in warning


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, check=False
        )
    except FileNotFoundError:
        pytest.skip("no mount command: cannot make a small file system")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.mark.subprocess
def test_a_really_full_disk_for_the_cache(
    tiny_disk: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tiny_disk / "responses.sqlite3"
    ResponseCache(path).close()  # the file exists; then the disk fills up
    fd = os.open(tiny_disk / "filler", os.O_WRONLY | os.O_CREAT)
    with pytest.raises(OSError, match="No space left"):
        while True:
            os.write(fd, b"\0" * 512)
    os.close(fd)
    caplog.set_level(logging.WARNING)
    result = run_with_cache(path, tmp_path / "run")
    assert_complete(result)
    [warning] = cache_warnings(caplog)
    assert str(path) in warning and "going on without the cache" in warning


def test_cache_commands_on_a_damaged_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESCUE_BENCH_CACHE_DIR", str(tmp_path))
    path = tmp_path / "responses.sqlite3"
    path.write_bytes(b"\x00garbage" * 512)
    runner = CliRunner()
    stats = runner.invoke(app, ["cache", "stats"], catch_exceptions=False)
    assert stats.exit_code == 1
    errors = [line for line in stats.output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: response cache {path} cannot be used (DatabaseError: file is not a database); "
        f"clear it with `rescue-bench cache clear`, or delete {path}"
    ]
    one = runner.invoke(app, ["cache", "clear", "--model", "openai/m", "--yes"], catch_exceptions=False)
    assert one.exit_code == 1 and "cannot be used" in one.output and path.exists()
    cleared = runner.invoke(app, ["cache", "clear", "--yes"], catch_exceptions=False)
    assert cleared.exit_code == 0 and not path.exists()
    with ResponseCache(path) as fresh:  # usable again
        fresh.put("k", REPLY, IDENTITY)
        assert fresh.get("k") is not None


def test_a_read_failure_gives_the_cache_up(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "c.sqlite3"
    with ResponseCache(path) as cache:
        cache.put("k", REPLY, IDENTITY)
    path.write_bytes(path.read_bytes()[:100] + b"\xff" * 8000)  # a header, then garbage pages
    caplog.set_level(logging.WARNING)
    cache = ResponseCache(path)
    assert cache.get("k") is None and cache.get("k") is None
    cache.put("k2", REPLY, IDENTITY)
    cache.close()
    assert not cache.usable and len(cache_warnings(caplog)) == 1
    with pytest.raises(cache_module.CacheError, match="cache clear"):
        cache.stats()
