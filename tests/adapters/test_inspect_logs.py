"""``import inspect`` of logs that are damaged, hostile or partial: one line naming the file, nothing written;
scores made again from the completions; a ``--limit`` subset imported as partial."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

inspect_ai = pytest.importorskip("inspect_ai")

from inspect_ai.log import EvalLog, write_eval_log  # noqa: E402
from tests.adapters.conftest import LIMIT, Served  # noqa: E402

from rescue_bench.adapters.inspect import logs as inspect_logs  # noqa: E402
from rescue_bench.adapters.inspect import tasks as inspect_tasks  # noqa: E402
from rescue_bench.adapters.inspect.logs import import_logs  # noqa: E402
from rescue_bench.errors import DataError  # noqa: E402
from rescue_bench.rundir import load_run  # noqa: E402


def eval_task(served: Served, log_dir: Path, task: str, **more: Any) -> EvalLog:
    (log,) = inspect_ai.eval(
        inspect_tasks.FACTORIES[task](limit_samples=LIMIT),
        model="openai/fake",
        model_base_url=served.server.base_url,
        model_args={"api_key": "sk-fake", "responses_api": False},
        log_dir=str(log_dir),
        display="none",
        max_retries=1,
        timeout=30,
        **more,
    )
    assert log.status == "success", log.error
    return log


@pytest.fixture(scope="module")
def itp_log(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(eval_task(served, tmp_path_factory.mktemp("logs"), "itp").location)


def refused(paths: list[Path], out: Path) -> str:
    with pytest.raises(DataError) as caught:
        import_logs(paths, out)
    assert not out.exists()
    return str(caught.value)


def test_damaged_logs_are_one_line_naming_the_file(itp_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    data = itp_log.read_bytes()
    truncated = tmp_path / "truncated.eval"
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.eval"
    garbage.write_bytes(b"this is not a zip archive\n")
    header = tmp_path / "header.json"
    header.write_text('{"version": 2, "status": "success", "eval": {"task": 5}')
    fifo = tmp_path / "fifo.eval"
    os.mkfifo(fifo)
    cases = {
        truncated: "not a readable inspect log (",
        garbage: "not a readable inspect log (",
        header: "not a readable inspect log (",
        tmp_path: "a directory; give inspect log files (.eval or .json)",
        fifo: "not a regular file; give inspect log files (.eval or .json)",
        tmp_path / "missing.eval": "cannot read (No such file or directory)",
    }
    for path, words in cases.items():
        message = refused([path], out)
        assert message.startswith(f"{path}: {words}") and "\n" not in message, message


def test_a_zip_bomb_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = tmp_path / "bomb.eval"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", b"\0" * 40_000_000)
    assert bomb.stat().st_size < 100_000
    monkeypatch.setattr(inspect_logs, "MAX_LOG_BYTES", 20_000_000)
    message = refused([bomb], tmp_path / "run")
    assert message == (
        f"{bomb}: holds 40,000,000 bytes (unpacked), over the 20,000,000 an inspect log of this benchmark "
        "needs; not read"
    )


def test_forged_score_records_are_made_again_from_the_completions(itp_log: Path, tmp_path: Path) -> None:
    honest = import_logs([itp_log], tmp_path / "honest")
    log = inspect_ai.log.read_eval_log(str(itp_log))
    assert log.samples is not None
    for sample in log.samples:
        for score in (sample.scores or {}).values():
            records = score.metadata["records"] if score.metadata else []
            for record in records:  # every answer right, and every instance valid
                record.update(valid=True, problems=[], scores={**record["scores"], "correct": 1.0})
    forged = tmp_path / "forged.eval"
    write_eval_log(log, str(forged))
    assert import_logs([forged], tmp_path / "forged") == honest
    assert honest["itp"]["all"]["accuracy"] < 1


def test_two_logs_of_one_task_are_refused(itp_log: Path, tmp_path: Path) -> None:
    copy = tmp_path / "again.eval"
    copy.write_bytes(itp_log.read_bytes())
    message = refused([itp_log, copy], tmp_path / "run")
    assert message == f"{copy}: a second log of task 'itp' (the first: {itp_log}); import one log per task"


def test_one_log_given_twice_is_refused_not_imported_twice(itp_log: Path, tmp_path: Path) -> None:
    """W20: ``import inspect itp.eval itp.eval`` (or a link to it) would import every instance twice."""
    link = tmp_path / "link.eval"
    link.symlink_to(itp_log)
    assert (
        refused([itp_log, itp_log], tmp_path / "run")
        == f"{itp_log}: given twice (as {itp_log}); import each log once"
    )
    assert refused([itp_log, link], tmp_path / "run2").startswith(f"{link}: given twice (as {itp_log})")
    assert not (tmp_path / "run").exists()


def test_a_limited_log_imports_as_a_partial_run(served: Served, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app

    log = eval_task(served, tmp_path / "logs", "stp", limit=2)
    args = ["import", "inspect", str(log.location), "--out", str(tmp_path / "run")]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0 and "incomplete: a subset: inspect asked stp 2 of " in result.output
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["status"] == "incomplete"
    subset = run["imported_from"]["subset"]["stp"]
    assert subset["asked"] == 2 and subset["limit"] == 2 and subset["samples"] > 2
    assert run["stop_reason"] == f"a subset: inspect asked stp 2 of {subset['samples']} samples (--limit)"
    counts = run["counts"]["stp"]
    assert counts["done"] == len(load_run(tmp_path / "run").predictions) < counts["instances"]
