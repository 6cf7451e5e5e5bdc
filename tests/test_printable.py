"""Text from a server, a data file or a run directory reaches the terminal with control characters escaped:
an ``ESC ]0;`` window-title sequence is shown, never obeyed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, Script

from rescue_bench.printable import printable, table_cell

TITLE = "\x1b]0;pwned\x07"
"""Sets the terminal's window title; ``ESC ]52;`` the same way writes the clipboard."""
SHOWN = "\\x1b]0;pwned\\x07"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    code = "from rescue_bench.cli.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=dict(os.environ)
    )


def raw_control(text: str) -> list[str]:
    """Control characters a terminal would act on (tab and newline are plain text)."""
    return sorted({c for c in text if (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F})


@pytest.mark.subprocess
def test_a_server_error_body_is_printed_escaped_on_one_line(tmp_path: Path) -> None:
    def hostile(request: ChatRequest) -> Script:
        return Script(status=401, error={"message": f"bad key {TITLE}\x1b[2J\r\nsecond line"})

    with FakeOpenAIServer(hostile) as server:
        result = cli(
            "run", "--model", "vllm/fake", "--base-url", server.base_url, "--data", "demo", "--tasks", "itp",
            "--limit-samples", "1", "--no-cache", "--out", str(tmp_path / "run"),
        )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert SHOWN in result.stderr and "\\x1b[2J\\x0d\\x0asecond line" in result.stderr
    assert raw_control(result.stdout + result.stderr) == []
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.subprocess
def test_a_data_file_s_text_is_printed_escaped_by_tasks_show(tmp_path: Path) -> None:
    demo = resources.files("rescue_bench.data.demo").joinpath("demo.jsonl").read_text(encoding="utf-8")
    sample = json.loads(demo.splitlines()[0])
    sample["rows"][1]["dialogue_cleaned"] = f"I said {TITLE} and left\u202e."
    data = tmp_path / "hostile.jsonl"
    data.write_text(json.dumps(sample) + "\n", encoding="utf-8")
    row = sample["rows"][2].get("row_index", 3)
    result = cli("tasks", "show", str(data), "--task", "itp", "--row", f"{sample['sample_id']}:{row}")
    assert result.returncode == 0, result.stderr
    assert f"I said {SHOWN} and left\\u202e." in result.stdout
    assert raw_control(result.stdout + result.stderr) == [] and "\u202e" not in result.stdout


def test_table_cells_escape_controls_and_rich_markup() -> None:
    table = Table("Run", "Reason")
    table.add_row(table_cell("[bold red]openai/x[/]"), table_cell(f"HTTP 500: {TITLE}"))
    console = Console(width=120, record=True, force_terminal=False)
    console.print(table)
    shown = console.export_text()
    assert "[bold red]openai/x[/]" in shown and SHOWN in shown and raw_control(shown) == []
    assert printable("tab\tand\nnewline") == "tab\tand\nnewline"
    assert printable("a\tb\nc", one_line=True) == "a\\x09b\\x0ac"
