"""A hostile run directory: foreign and junk lines, a file as ``--out``, a full disk (issue 13).

Each test drives the real command line (``rescue-bench run`` with the random baseline on the demo data, which
needs no endpoint) against a run directory damaged the way a user or a crash could damage it, and checks
that nothing is lost, nothing is dropped silently, and the error is one line naming the file and line.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.rundir import JsonlAppender, RunDirError, atomic_write_json, files, read_jsonl

runner = CliRunner()
RUN = ("run", "--model", "baseline/random", "--data", "demo", "--tasks", "itp", "--quiet")


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def run_into(out: Path) -> Any:
    return invoke(*RUN, "--out", str(out))


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def ids_of(path: Path) -> list[str]:
    return [json.loads(line)["instance_id"] for line in lines_of(path)]


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    result = run_into(out)
    assert result.exit_code == 0, result.output
    return out


def test_a_foreign_record_is_set_aside_and_the_run_still_finishes(finished: Path) -> None:
    predictions = finished / "predictions.jsonl"
    planned = ids_of(predictions)
    scores = (finished / "scores.json").read_bytes()
    foreign = {**json.loads(lines_of(predictions)[0]), "instance_id": "not_planned::itp::7"}
    with predictions.open("a", encoding="utf-8") as out:
        out.write(json.dumps(foreign) + "\n")
    number = len(planned) + 1

    result = run_into(finished)

    assert result.exit_code == 0, result.output  # not 3, the budget code
    assert (
        f"predictions.jsonl:{number}: instance 'not_planned::itp::7' is not in this run's plan"
        in result.output
    )
    assert "predictions.rejected.jsonl" in result.output
    run = json.loads((finished / "run.json").read_text())
    assert run["status"] == "finished" and run["counts"]["itp"]["done"] == len(planned)
    assert (finished / "scores.json").read_bytes() == scores  # results kept, not deleted
    assert ids_of(predictions) == planned
    assert [json.loads(x) for x in lines_of(finished / "predictions.rejected.jsonl")] == [foreign]
    again = run_into(finished)  # and the directory is not wedged: the next resume is clean
    assert again.exit_code == 0 and "set aside" not in again.output


def test_a_foreign_task_is_set_aside_too(finished: Path) -> None:
    predictions = finished / "predictions.jsonl"
    foreign = {**json.loads(lines_of(predictions)[0]), "instance_id": "x::zz::1", "task": "zz"}
    with predictions.open("a", encoding="utf-8") as out:
        out.write(json.dumps(foreign) + "\n")
    result = run_into(finished)
    assert result.exit_code == 0, result.output
    assert "'x::zz::1' is not in this run's plan" in result.output
    assert "zz" not in json.loads((finished / "scores.json").read_text())


def test_a_junk_line_is_set_aside_with_its_line_number_and_its_instance_asked_again(finished: Path) -> None:
    predictions = finished / "predictions.jsonl"
    lines = lines_of(predictions)
    planned = ids_of(predictions)
    lines[2] = "this is not json"
    predictions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = invoke("report", str(finished), "--out", str(finished.parent / "rep"))
    assert report.exit_code == 1
    assert f"{predictions}:3: not valid JSON" in report.output
    assert "delete line 3 of" in report.output and "re-run the same command" in report.output
    assert "Traceback" not in report.output and len(report.output.strip().splitlines()) == 1

    result = run_into(finished)

    assert result.exit_code == 0, result.output
    assert "predictions.jsonl:3: not valid JSON" in result.output and "set aside" in result.output
    assert sorted(ids_of(predictions)) == sorted(planned)  # every instance once, the junk gone from here
    assert lines_of(finished / "predictions.rejected.jsonl") == ["this is not json"]  # ... and kept there


def test_a_line_with_a_misspelt_field_is_set_aside(finished: Path) -> None:
    predictions = finished / "predictions.jsonl"
    lines = lines_of(predictions)
    bad = {**json.loads(lines[0]), "prediciton": "yes"}
    predictions.write_text("\n".join([*lines, json.dumps(bad)]) + "\n", encoding="utf-8")
    result = run_into(finished)
    assert result.exit_code == 0, result.output
    assert f"predictions.jsonl:{len(lines) + 1}: field 'prediciton'" in result.output
    assert json.loads(lines_of(finished / "predictions.rejected.jsonl")[0]) == bad


def test_out_naming_an_existing_file_is_a_one_line_error_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine\n")
    result = run_into(target)
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {target} is a file, not a run directory; choose another --out"
    assert target.read_text() == "mine\n" and sorted(os.listdir(tmp_path)) == ["notes.txt"]
    below = run_into(target / "run")
    assert below.exit_code == 2 and "is a file" in below.output


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mount)], capture_output=True, check=False
        )
    except FileNotFoundError:
        pytest.skip("no mount command: cannot make a small file system")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        # Lazy: a descriptor the failed run left open (the process lives on in-test) must not keep it mounted.
        subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.mark.subprocess
def test_a_full_disk_is_a_one_line_error_and_the_run_resumes_elsewhere(
    small_disk: Path, tmp_path: Path
) -> None:
    """A 96 KiB file system holds run.json but not the ~100 KiB of ITP and RPP predictions."""
    out = small_disk / "run"
    result = invoke(*RUN[:-2], "itp,rpp", "--quiet", "--out", str(out))
    assert result.exit_code == 1, result.output
    message = result.output.strip().splitlines()
    assert len(message) == 1 and "No space left on device" in message[0] and str(out) in message[0]
    run = json.loads((out / "run.json").read_text())  # consistent: parsable, the last complete write
    assert run["status"] in ("running", "stopped")
    assert not any(".tmp" in p.name for p in out.iterdir())
    for line in lines_of(out / "predictions.jsonl"):  # whatever is there is whole
        json.loads(line)
    # Nothing written is lost: copied to a roomier disk, the same run resumes and finishes.
    roomy = tmp_path / "roomy"
    subprocess.run(["cp", "-a", str(out), str(roomy)], check=True)
    (roomy / ".lock").unlink()
    finished = invoke(*RUN[:-2], "itp,rpp", "--quiet", "--out", str(roomy))
    assert finished.exit_code == 0, finished.output


def test_enospc_mid_append_leaves_no_torn_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.jsonl"
    appender = JsonlAppender(path)
    appender.append([{"instance_id": "a"}])
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        if len(data) > 10:
            return real_write(fd, data[:10])  # a short write, as a filling disk gives
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "write", half_then_full)
    with pytest.raises(RunDirError, match=r"p\.jsonl: cannot write \(No space left on device\)"):
        appender.append([{"instance_id": "b", "text": "x" * 100}])
    monkeypatch.setattr(files.os, "write", real_write)
    appender.append([{"instance_id": "c"}])
    appender.close()
    assert [r["instance_id"] for r in read_jsonl(path)] == ["a", "c"]


def test_a_failed_atomic_write_keeps_the_old_file_and_removes_the_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.json"
    atomic_write_json(path, {"status": "running"})

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    with pytest.raises(RunDirError, match=r"run\.json: cannot write \(No space left on device\)"):
        atomic_write_json(path, {"status": "finished"})
    assert json.loads(path.read_text()) == {"status": "running"}
    assert sorted(os.listdir(tmp_path)) == ["run.json"]


def test_a_junk_request_line_is_named_and_does_not_stop_the_run(finished: Path, tmp_path: Path) -> None:
    out = finished  # the baseline sends no requests: its requests.jsonl is written here by hand
    (out / "requests.jsonl").write_text('{"request_key": "k", "task": "itp"}\nnot json\n')
    resumed = run_into(out)
    assert resumed.exit_code == 0, resumed.output
    assert (
        f"{out / 'requests.jsonl'}:2: not valid JSON" in resumed.output
        and "left out of the counts" in resumed.output
    )
    assert json.loads((out / "run.json").read_text())["counts"]["itp"]["requests"] == 1
    report = invoke("report", str(out), "--out", str(tmp_path / "rep"))
    assert report.exit_code == 1 and "delete line 2 of" in report.output
