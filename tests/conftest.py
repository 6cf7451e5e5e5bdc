"""Shared fixtures: where the shared real samples are, and isolation of user-level state; and the check that a
test which starts a process says so by a marker, which keeps ``make test-fast`` free of them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
SUBSET = SHARED_DATA / "rescue_subset.jsonl"
EXPECTED = SHARED_DATA / "expected_instances.json"


OUTSIDE_MARKERS = ("slow", "subprocess", "model", "browser", "postgres", "ffmpeg")
"""The markers that ``make test-fast`` leaves out (pyproject.toml says what each means). A test with none of
them runs in this process alone: one that starts a child process fails (:func:`pytest_runtest_call`)."""

LOOKUPS = frozenset({"git", "uname"})
"""Commands an unmarked test may start through the code it calls: run.json's ``git rev-parse HEAD`` stamp and
``platform``'s ``uname -p`` (the openai SDK's client headers, once per process), a few milliseconds each."""


@contextmanager
def _started_processes() -> Iterator[list[str]]:
    """The processes started meanwhile (subprocess, asyncio's subprocesses, multiprocessing, ``os``), other
    than :data:`LOOKUPS`. They are only noted: refusing them would change what the code under test does."""
    started: list[str] = []
    popen = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def execute_child(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> Any:
        argv = [args] if isinstance(args, str | bytes) else list(args)
        if Path(os.fsdecode(argv[0])).name not in LOOKUPS:
            started.append(" ".join(os.fsdecode(a) for a in argv)[:200])
        return popen(self, args, *rest, **kwargs)

    def noting(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def note(*args: Any, **kwargs: Any) -> Any:
            started.append(f"os.{name}")
            return real(*args, **kwargs)

        return note

    names = [n for n in ("fork", "forkpty", "system", "posix_spawn", "posix_spawnp") if hasattr(os, n)]
    saved = {name: getattr(os, name) for name in names}
    subprocess.Popen._execute_child = execute_child  # type: ignore[attr-defined]
    for name, real in saved.items():
        setattr(os, name, noting(name, real))
    try:
        yield started
    finally:
        subprocess.Popen._execute_child = popen  # type: ignore[attr-defined]
        for name, real in saved.items():
            setattr(os, name, real)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for a fixture named like one of :data:`OUTSIDE_MARKERS` (``ffmpeg``, which skips
    without it; ``browser``) gets that marker, wherever the test and the fixture live."""
    for item in items:
        for name in OUTSIDE_MARKERS:
            if name in getattr(item, "fixturenames", ()):
                item.add_marker(name)


def _checked(item: pytest.Item) -> Iterator[None]:
    if any(item.get_closest_marker(name) for name in OUTSIDE_MARKERS):
        return (yield)
    with _started_processes() as started:
        result = yield
    if started:
        pytest.fail(
            f"{item.nodeid} started a process ({started[0]}): mark it @pytest.mark.subprocess (or set "
            "pytestmark in its module) so that `make test-fast` leaves it out"
        )
    return result


# The check runs in `make test` too, so that a missing marker is caught there. Setup and call only: a module
# or session fixture set up by a marked test may stop its process in the teardown of whichever test runs last.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _checked(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _checked(item))


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep caches and configs of the tests out of the user's home."""
    home = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("RESCUE_BENCH_CACHE_DIR", str(home / "cache"))
    monkeypatch.setenv("RESCUE_BENCH_CONFIG_DIR", str(home / "config"))


@pytest.fixture
def real_subset() -> Path:
    """The 4 real release samples in ../shared/data.

    The test is skipped, with the reason shown, when they are absent.
    """
    if not SUBSET.exists():
        pytest.skip(
            f"shared real samples not found at {SUBSET} (third-party data, not shipped with the project)"
        )
    return SUBSET


@pytest.fixture
def expected_instances() -> Path:
    if not EXPECTED.exists():
        pytest.skip(
            f"expected instances not found at {EXPECTED} (third-party data, not shipped with the project)"
        )
    return EXPECTED


SCHEMA_CHECKED = ("run.json", "scores.json")
"""Run-directory files each test's ``tmp_path`` is searched for after it (:func:`_published_schemas`)."""


@pytest.fixture(autouse=True)
def _published_schemas(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used ``tmp_path``: every ``run.json`` and ``scores.json`` in it that the toolkit's
    own reader accepts validates against the JSON Schema shipped in the package. A file the reader refuses
    (a test that writes a broken one on purpose) is not the writer's, and is left alone."""
    if "tmp_path" not in request.fixturenames:
        yield
        return
    tmp = request.getfixturevalue("tmp_path")
    yield
    found = [p for name in SCHEMA_CHECKED for p in tmp.rglob(name) if p.is_file()]
    if found:
        _validate_run_files(found)


def _validate_run_files(paths: list[Path]) -> None:
    import json

    import jsonschema

    from rescue_bench.errors import BenchError
    from rescue_bench.rundir.jsonschemas import shipped
    from rescue_bench.rundir.manifest import Manifest
    from rescue_bench.rundir.scores import Scores

    readers = {"run.json": Manifest.from_json, "scores.json": Scores.of}
    for path in paths:
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
            readers[path.name](obj)
        except (ValueError, TypeError, AttributeError, BenchError):
            continue
        errors = list(jsonschema.Draft202012Validator(shipped(path.name)).iter_errors(obj))
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "(top)"
            pytest.fail(f"{path}: does not match the published schema at {where}: {errors[0].message}")
