"""The markers that keep `make test-fast` in this process: an unmarked test that starts a process fails."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import re
import subprocess
import sys
from collections.abc import Callable

import pytest
from tests.conftest import OUTSIDE_MARKERS, REPO_ROOT, _checked, _started_processes


def started_by(action: Callable[[], object]) -> list[str]:
    with _started_processes() as started:
        action()
    return started


@pytest.mark.subprocess
def test_every_way_to_start_a_process_is_noted() -> None:
    python = [sys.executable, "-c", "pass"]

    async def shell() -> None:
        child = await asyncio.create_subprocess_exec(*python)
        await child.wait()

    def forked() -> None:
        child = multiprocessing.get_context("fork").Process(target=int)
        child.start()
        child.join()

    assert started_by(lambda: subprocess.run(python, check=True)) == [" ".join(python)]
    assert started_by(lambda: asyncio.run(shell())) == [" ".join(python)]
    assert started_by(lambda: os.system("true")) == ["os.system"]
    assert started_by(forked) == ["os.fork"]
    assert started_by(lambda: subprocess.run(["git", "--version"], capture_output=True)) == []


@pytest.mark.subprocess
def test_a_marked_test_may_start_one() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "print('child')"], capture_output=True, text=True, check=True
    )
    assert done.stdout == "child\n"


@pytest.fixture
def ffmpeg() -> None:
    """Named like a marker: the test that asks for it gets the marker."""


def test_a_fixture_named_like_a_marker_marks_its_test(ffmpeg: None, request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("ffmpeg") is not None
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_every_outside_marker_is_registered(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(OUTSIDE_MARKERS) <= registered


def test_make_test_fast_leaves_out_exactly_these_markers() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    skips = re.search(r"^FAST_SKIPS := not \((.*)\)$", makefile, re.M)
    assert skips is not None, "the Makefile has no FAST_SKIPS line"
    assert skips.group(1).split(" or ") == list(OUTSIDE_MARKERS)


class Unmarked:
    """The part of a ``pytest.Item`` that the check reads."""

    nodeid = "tests/test_x.py::test_x"

    def get_closest_marker(self, name: str) -> None:
        return None


@pytest.mark.subprocess
def test_an_unmarked_test_that_starts_a_process_fails() -> None:
    phase = _checked(Unmarked())  # type: ignore[arg-type]
    next(phase)
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    with pytest.raises(pytest.fail.Exception, match=r"test_x started a process \(.* -c pass\): mark it"):
        phase.send(None)
    quiet = _checked(Unmarked())  # type: ignore[arg-type]
    next(quiet)
    with pytest.raises(StopIteration):
        quiet.send(None)
