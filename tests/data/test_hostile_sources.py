"""Sources that cannot be read, or only partly: every path named, nothing skipped, nothing blocking.

The tests run as root, where permission bits do not stop a read, so "cannot be read" is made by patching the
system calls for one path only (:func:`_deny`): ``os.scandir`` for a directory; ``os.open`` and ``io.open``
(what the loader and :meth:`Path.read_text` open files with) for a file. FIFOs, devices, dangling symlinks
and symlink loops are real.
"""

from __future__ import annotations

import errno
import io
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import LoadReport, SourceNotFound, load_samples, read_source
from rescue_bench.errors import DataError

MakeSample = Callable[..., dict[str, Any]]
runner = CliRunner()


def _deny(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    """Make ``denied`` fail with EACCES for listing and opening, as an unreadable path does for a user."""

    def guard(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(path: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(path, str | os.PathLike) and Path(os.fspath(path)) == denied:
                raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
            return real(path, *args, **kwargs)

        return call

    for module, name in ((os, "scandir"), (os, "open"), (io, "open")):
        monkeypatch.setattr(module, name, guard(getattr(module, name)))


def _tree(root: Path, make_sample: MakeSample) -> Path:
    for sub in ("ann_and_bo", "cy_and_di"):
        (root / sub).mkdir(parents=True)
        (root / sub / "001.json").write_text(json.dumps(make_sample(sample_id=f"{sub}/001")))
    return root


def _in_thread(call: Callable[[], Any], seconds: float = 10.0) -> Any:
    """``call()``'s result or exception; fail (instead of hanging the suite) if it blocks."""
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(call())
        except BaseException as exc:  # handed to the test as the outcome
            box.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    return box[0]


# -- failure 2: part of a directory source cannot be read ----------------------------------------------------


def test_an_unreadable_subdirectory_is_an_error_naming_it(
    tmp_path: Path, make_sample: MakeSample, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "data", make_sample)
    _deny(monkeypatch, root / "cy_and_di")
    report = read_source(root)
    assert [s.sample_id for s in report.samples] == ["ann_and_bo/001"]
    [error] = report.errors
    assert error.file == str(root / "cy_and_di") and "permission denied" in error.message
    with pytest.raises(DataError, match="cy_and_di: directory cannot read: permission denied"):
        load_samples(root)
    result = runner.invoke(app, ["data", "validate", str(root)])
    assert result.exit_code == 1 and f"error: {root / 'cy_and_di'}: directory cannot read" in result.stdout


def test_run_refuses_a_partly_unreadable_source_before_writing(
    tmp_path: Path, make_sample: MakeSample, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "data", make_sample)
    _deny(monkeypatch, root / "cy_and_di")
    out = tmp_path / "run"
    args = ["run", "--model", "baseline/random", "--data", str(root), "--tasks", "itp", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: {root / 'cy_and_di'}: directory cannot read")
    assert not (out / "predictions.jsonl").exists()


def test_an_unreadable_file_is_unreadable_not_invalid_json(
    tmp_path: Path, make_sample: MakeSample, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "data", make_sample)
    denied = root / "cy_and_di" / "001.json"
    _deny(monkeypatch, denied)
    [error] = read_source(root).errors
    assert (error.file, error.message) == (str(denied), "cannot read: permission denied")


def test_an_unreadable_jsonl_source_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text("{}\n")
    _deny(monkeypatch, path)
    [error] = read_source(path).errors
    assert (error.file, error.message) == (str(path), "cannot read: permission denied")


def test_broken_links_and_fifos_inside_a_directory_are_errors(
    tmp_path: Path, make_sample: MakeSample
) -> None:
    root = _tree(tmp_path / "data", make_sample)
    (root / "gone.json").symlink_to(root / "nowhere.json")
    (root / "loop.json").symlink_to(root / "loop.json")
    os.mkfifo(root / "pipe.json")
    report: LoadReport = _in_thread(lambda: read_source(root))
    assert len(report.samples) == 2
    messages = {Path(e.file or "").name: e.message for e in report.errors}
    assert messages == {
        "gone.json": f"broken symbolic link (its target {str(root / 'nowhere.json')!r} does not exist)",
        "loop.json": "symlink loop (too many levels of symbolic links)",
        "pipe.json": "is a FIFO (named pipe), not a regular file",
    }


def test_a_linked_directory_is_read_and_a_looping_link_is_an_error(
    tmp_path: Path, make_sample: MakeSample
) -> None:
    root = _tree(tmp_path / "data", make_sample)
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (elsewhere / "001.json").write_text(json.dumps(make_sample()["rows"]))  # its id comes from its path
    (root / "more").symlink_to(elsewhere, target_is_directory=True)
    (root / "ann_and_bo" / "back").symlink_to(root, target_is_directory=True)
    report = read_source(root)
    assert "more/001" in [s.sample_id for s in report.samples]
    [error] = report.errors
    assert error.file == str(root / "ann_and_bo" / "back") and error.message.startswith("symlink loop")


# -- what the source itself is ------------------------------------------------------------------------------


def test_a_symlink_loop_source_is_reported_as_a_loop(tmp_path: Path) -> None:
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    with pytest.raises(SourceNotFound) as caught:
        read_source(loop)
    assert str(caught.value) == f"{loop}: symlink loop (too many levels of symbolic links)"
    result = runner.invoke(app, ["data", "validate", str(loop)])
    assert result.exit_code == 2 and "no such file" not in result.stderr and "symlink loop" in result.stderr


def test_a_dangling_symlink_source_says_so(tmp_path: Path) -> None:
    link = tmp_path / "data.jsonl"
    link.symlink_to(tmp_path / "moved.jsonl")
    with pytest.raises(SourceNotFound, match="broken symbolic link"):
        read_source(link)


def test_a_fifo_source_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "data.jsonl"
    os.mkfifo(fifo)
    outcome = _in_thread(lambda: read_source(fifo))
    assert isinstance(outcome, SourceNotFound)
    assert str(outcome).startswith(f"{fifo}: is a FIFO (named pipe), not a regular file or a directory")
    result = _in_thread(lambda: runner.invoke(app, ["data", "stats", str(fifo)]))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1


def test_a_device_source_is_refused() -> None:
    with pytest.raises(SourceNotFound, match=r"^/dev/null: is a character device, not a regular file"):
        read_source("/dev/null")
