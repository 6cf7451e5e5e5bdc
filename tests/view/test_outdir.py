"""Where ``view --bundle DIR`` may write: never over what the tool did not write (issue #35.1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app as cli
from rescue_bench.view.bundle import write_bundle
from rescue_bench.view.outdir import MARKER, BundleDirError


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_folder_of_the_user_is_refused_and_left_alone(runs: dict[str, Path], tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    (mine / "sub").mkdir(parents=True)
    (mine / "index.html").write_text("my own page")
    (mine / "sub" / "notes.txt").write_text("keep me")
    before = _tree(mine)
    result = CliRunner().invoke(cli, ["view", str(runs["majority"]), "--bundle", str(mine)])
    assert result.exit_code == 1
    assert "holds no bundle written by this tool" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert _tree(mine) == before
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]  # no staging directory left behind


def test_the_run_being_viewed_and_the_current_directory_are_refused(
    runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _tree(runs["majority"])
    with pytest.raises(BundleDirError, match="not empty"):
        write_bundle([runs["majority"]], runs["majority"])
    assert _tree(runs["majority"]) == before
    monkeypatch.chdir(runs["majority"])
    result = CliRunner().invoke(cli, ["view", ".", "--bundle", "."])
    assert result.exit_code == 1 and "holds no bundle written by this tool" in result.output
    assert _tree(runs["majority"]) == before


def test_a_file_and_a_read_only_directory_get_one_line(runs: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "file.html"
    target.write_text("x")
    result = CliRunner().invoke(cli, ["view", str(runs["majority"]), "--bundle", str(target)])
    assert result.exit_code == 1 and "is a file, not a directory" in result.output
    assert "Traceback" not in result.output and target.read_text() == "x"
    result = CliRunner().invoke(cli, ["view", str(runs["majority"]), "--bundle", str(target / "site")])
    assert (
        result.exit_code == 1
        and result.output.startswith("error: --bundle")
        and "Traceback" not in result.output
    )
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories: the read-only case cannot be checked as root")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        for out in (locked, locked / "site"):
            result = CliRunner().invoke(cli, ["view", str(runs["majority"]), "--bundle", str(out)])
            assert result.exit_code == 1 and "not writable" in result.output, result.output
            assert "Traceback" not in result.output
    finally:
        locked.chmod(0o755)


def test_a_bundle_of_ours_is_replaced_whole_and_only_ours(runs: dict[str, Path], tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_bundle([runs["random"], runs["majority"]], site)
    assert (site / MARKER).is_file() and (site / "matrices-1.html").is_file()
    write_bundle([runs["majority"]], site)  # one run now: the second run's files go
    assert not (site / "matrices-1.html").exists() and (site / "matrices-0.html").exists()
    assert not list(site.glob("data/rows-1-*"))
    (site / "added-by-me.txt").write_text("mine")
    with pytest.raises(BundleDirError, match=r"added-by-me\.txt"):
        write_bundle([runs["majority"]], site)
    assert (site / "added-by-me.txt").read_text() == "mine" and (site / "index.html").exists()


def test_an_empty_directory_is_used(runs: dict[str, Path], tmp_path: Path) -> None:
    site = tmp_path / "empty"
    site.mkdir()
    written = write_bundle([runs["majority"]], site)
    assert written.files == len(_tree(site)) and (site / "index.html").exists()


def test_a_dangling_link_as_the_bundle_is_one_line_naming_it(runs: dict[str, Path], tmp_path: Path) -> None:
    """W41: not "cannot write (File exists)": the link and where it points."""
    link = tmp_path / "bundle"
    link.symlink_to(tmp_path / "gone")
    result = CliRunner().invoke(cli, ["view", str(runs["majority"]), "--bundle", str(link)])
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1, result.output
    assert "is a symbolic link to" in result.output and "does not exist" in result.output
    assert not (tmp_path / "gone").exists()
