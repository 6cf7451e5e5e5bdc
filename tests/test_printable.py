"""Text from a server, a data file or a run directory reaches the terminal with control characters escaped:
an ``ESC ]0;`` window-title sequence is shown, never obeyed."""

from __future__ import annotations

import ast
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
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.printable import has_hidden, printable, table_cell

runner = CliRunner()

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


# -- every command, every printer (issue 42: failure 5, W45-W48) ---------------------------------------

HOSTILE = "\x1b]0;pwned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x1b[8m[bold]x\u202e\u200b"
"""OSC 0 (window title), OSC 52 (clipboard write), clear screen, hidden text, Rich markup, a bidi override and
a zero-width space."""
CLI_DIR = Path(__file__).resolve().parents[1] / "src" / "rescue_bench" / "cli"


def hidden(text: str) -> list[str]:
    """What a terminal would obey or hide: control characters, bidi marks, zero-width characters."""
    return sorted({c for c in text if has_hidden(c) and c not in "\t\n"})


def test_every_cli_line_goes_through_the_one_escaping_path() -> None:
    """The class, not the example: no CLI module prints but through ``printable.echo`` (or a Rich renderable
    whose text is escaped): no ``typer.echo``, ``print`` or ``sys.stdout.write``, and no f-string handed to
    ``console.print`` (Rich would read its markup and pass its control characters)."""
    offences = []
    for path in sorted(CLI_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            # A printer handed on as a callback (``log=typer.echo``) prints outside text too.
            if isinstance(node, ast.Attribute) and ast.unparse(node) in ("typer.echo", "click.echo"):
                offences.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
                continue
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            bad = name in ("typer.echo", "print", "sys.stdout.write", "sys.stderr.write", "click.echo")
            bad |= name.endswith("console.print") and any(
                isinstance(arg, ast.JoinedStr | ast.Constant) for arg in node.args
            )
            if bad:
                offences.append(f"{path.name}:{node.lineno}: {name}")
    assert offences == []


def _finished_run(out: Path, model: str) -> Path:
    made = runner.invoke(app, ["run", "--model", "baseline/random", "--data", "demo", "--tasks", "itp",
                               "--limit-samples", "1", "--quiet", "--out", str(out)])  # fmt: skip
    assert made.exit_code in (0, 5), made.output
    manifest = json.loads((out / "run.json").read_text(encoding="utf-8"))
    manifest["model"] = {"provider": "vllm", "model": model}
    (out / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def hostile_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hostile")
    return _finished_run(root / f"a{HOSTILE}", f"m{HOSTILE}"), _finished_run(root / "b", "m<b>\u200b")


@pytest.mark.parametrize(
    "command",
    [
        ["compare", "{a}", "{b}"],
        ["compare", "{a}", "{b}", "--json"],
        ["report", "{a}", "--out", "{tmp}/r"],
        ["report", "{a}", "{b}", "--out", "{tmp}/r2"],
        ["export", "{a}", "--format", "eee", "--out", "{tmp}/e"],
        ["score", "{a}", "--bertscore-model", "none"],
        ["view", "{a}", "--bundle", "{tmp}/v"],
    ],
    ids=lambda c: " ".join(c[:1] + [a for a in c[1:] if a.startswith("--")]),
)
def test_no_command_prints_outside_text_raw(
    hostile_runs: tuple[Path, Path], tmp_path: Path, command: list[str]
) -> None:
    """Model names from ``run.json`` and a run directory's name, through every command that prints them."""
    a, b = hostile_runs
    args = [part.format(a=a, b=b, tmp=tmp_path) for part in command]
    result = runner.invoke(app, args)
    assert hidden(result.output) == [], result.output


def test_names_from_the_user_s_own_flags_are_escaped_too(tmp_path: Path) -> None:
    """W46: ``--model`` and ``--judge`` names reach the terminal escaped, markup shown as text."""
    flags = ["--model", f"vllm/m{HOSTILE}", "--judge", f"vllm/j{HOSTILE}", "--data", "demo", "--tasks", "itp"]
    flags += ["--limit-samples", "1", "--max-retries", "0", "--base-url", "http://127.0.0.1:9/v1"]
    result = runner.invoke(app, ["run", *flags, "--out", str(tmp_path / "r")])
    assert hidden(result.output) == [] and "\\x1b]0;pwned" in result.output, result.output


def test_invisible_characters_are_shown_so_two_names_never_look_alike() -> None:
    """W45: a zero-width space or a bidi override in a name is shown as an escape."""
    assert printable("gpt\u200b-4o") == "gpt\\u200b-4o" != printable("gpt-4o")
    assert printable("a\u202eb\ufeffc\u2060") == "a\\u202eb\\ufeffc\\u2060"
    assert has_hidden("ok\u200d") and not has_hidden("café – ok")


def test_data_validate_warns_of_a_name_with_hidden_characters(tmp_path: Path) -> None:
    source = tmp_path / "data.jsonl"
    demo = resources.files("rescue_bench.data.demo").joinpath("demo.jsonl").read_text(encoding="utf-8")
    sample = json.loads(demo.splitlines()[0])
    speaker = sample["rows"][0]["primary_speaker"]
    sample["rows"][0]["primary_speaker"] = f"{speaker[:1]}\u200b{speaker[1:]}"
    source.write_text(json.dumps(sample) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["data", "validate", str(source)])
    assert "primary_speaker" in result.output and "\\u200b" in result.output, result.output
    assert "can look like another name" in result.output and hidden(result.output) == []


def test_a_workbook_holds_a_model_name_with_control_characters(hostile_runs: tuple[Path, Path]) -> None:
    """W47: openpyxl refuses control characters in a cell; the report writes them escaped."""
    from openpyxl import load_workbook

    a, _ = hostile_runs
    out = a.parent / "xlsx"
    result = runner.invoke(app, ["report", str(a), "--out", str(out)])
    assert result.exit_code == 0, result.output
    cells = [str(c.value) for sheet in load_workbook(out / "results.xlsx") for row in sheet.iter_rows()
             for c in row if c.value is not None]  # fmt: skip
    assert any("\\x1b]0;pwned" in cell for cell in cells)
    assert all(hidden(cell) == [] for cell in cells)


def test_the_hub_card_shows_html_in_a_model_name_as_text(
    hostile_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    """W48: raw HTML from a model name never reaches the Hub card's Markdown."""
    _, b = hostile_runs
    manifest = json.loads((b / "run.json").read_text(encoding="utf-8"))
    manifest["model"]["model"] = "m<img src=x onerror=alert(1)>"
    (b / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = runner.invoke(app, ["export", str(b), "--format", "hf", "--out", str(tmp_path / "hf")])
    assert result.exit_code == 0, result.output
    card = (tmp_path / "hf" / "README.md").read_text(encoding="utf-8")
    body = card.split("\n---\n", 1)[1]
    assert "<img" not in body and "&lt;img src=x onerror=alert(1)&gt;" in body


def test_json_output_stays_valid_json_with_every_control_escaped(hostile_runs: tuple[Path, Path]) -> None:
    """The one escaping path never breaks JSON output: names holding DEL, C1 controls and bidi marks come out
    as JSON escapes, which read back as the names."""
    a, b = hostile_runs
    manifest = json.loads((b / "run.json").read_text(encoding="utf-8"))
    manifest["model"]["model"] = "m\x7f\x85\u202e"
    (b / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = runner.invoke(app, ["compare", str(a), str(b), "--json"])
    assert result.exit_code == 0, result.output
    assert hidden(result.output) == []
    json.loads(result.output[result.output.index("{") :])
