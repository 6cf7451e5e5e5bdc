"""The one atomic write: a file is replaced whole or left as it was, and every writer uses it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rescue_bench.atomic import atomic_path, write_atomic

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "rescue_bench"


def test_a_write_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_text("old")
    write_atomic(target, b"new")
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_a_failure_keeps_the_old_file_and_removes_the_temporary(tmp_path: Path) -> None:
    target = tmp_path / "clip.mp4"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".mp4" and tmp.name.startswith(".")
        tmp.write_text("half")
        raise RuntimeError("killed while writing")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4"]


def test_no_module_renames_a_temporary_over_a_file_of_its_own() -> None:
    """``os.replace`` appears in ``atomic.py`` only, and in the download that renames a finished part file."""
    users = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if re.search(r"os\.replace\(|\.replace\((tmp|partial|part)\b", path.read_text(encoding="utf-8"))
    }
    assert users == {"atomic.py", "data/fetch.py"}
