"""The README's quickstart prints what the README shows (the table of `baseline/random` on the demo data)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import REPO_ROOT
from typer.testing import CliRunner

from rescue_bench.cli.main import app

SHOWN = (" Both ", " Couple ", " Family ", "run directory:", "baseline/random: ")
"""The starts of the lines compared: the table's rows, where the run went and the run's summary line."""


def _quickstart() -> tuple[str, list[str]]:
    """The quickstart's command and the lines it shows: the table's rows and the run directory."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quickstart.*?```console\n(.*?)```", text, re.S)
    assert block is not None, "README.md has no quickstart console block"
    lines = block.group(1).splitlines()
    command = lines[0].removeprefix("$ ")
    shown = [line.rstrip() for line in lines[1:] if line.startswith(SHOWN)]
    return command, shown


def test_the_quickstart_prints_the_table_the_readme_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command, shown = _quickstart()
    assert command == "rescue-bench run --model baseline/random --data demo"
    assert len(shown) == 5
    monkeypatch.chdir(tmp_path)
    # A terminal as wide as the README's block, whatever runs the test (a worker process has no terminal).
    monkeypatch.setenv("COLUMNS", "120")
    # The README shows a core install, where BERTScore is not installed: its columns stay empty.
    result = CliRunner().invoke(app, [*command.split()[1:], "--no-bertscore"])
    assert result.exit_code == 0, result.output
    printed = [line.rstrip() for line in result.stdout.splitlines() if line.startswith(SHOWN)]
    assert printed == shown
