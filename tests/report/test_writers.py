"""Writing the report files: a failed write is one line with the advice that fits (issue 42, W42, W43)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from rescue_bench.report.writers import writing
from rescue_bench.rundir import RunDirError


@pytest.mark.parametrize(
    ("code", "advice"),
    [
        (errno.ENOSPC, "free some space"),
        (errno.EROFS, "the folder is read-only: make it writable, or work on a copy"),
        (errno.EACCES, "the folder is read-only"),
    ],
)
def test_a_failed_report_write_is_one_line_with_the_right_advice(
    tmp_path: Path, code: int, advice: str
) -> None:
    target = tmp_path / "report" / "results.xlsx"
    with pytest.raises(RunDirError) as raised, writing(tmp_path / "report"):
        raise OSError(code, "refused", str(target))
    message = str(raised.value)
    assert message.startswith(f"{target}: cannot write (refused)") and advice in message
    assert "\n" not in message
    if code != errno.ENOSPC:
        assert "free some space" not in message
