"""The root command: --version, and --help on every command and group that is registered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from rescue_bench import __version__
from rescue_bench.cli.main import app

runner = CliRunner()


def _command_paths(command: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command path below ``command`` (typer runs its own vendored click, so no click types here)."""
    yield prefix
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _command_paths(sub, (*prefix, name))


COMMANDS = list(_command_paths(typer.main.get_command(app)))


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"rescue-bench {__version__}\n"


def test_data_commands_are_registered() -> None:
    assert {("data", "validate"), ("data", "stats"), ("data", "synth")} <= set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "root")
def test_help(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout
    assert "Traceback" not in result.output


def test_every_data_option_has_help_text() -> None:
    missing = []
    for path in (p for p in COMMANDS if p[:1] == ("data",)):
        command: Any = typer.main.get_command(app)
        for name in path:
            command = command.commands[name]
        missing += [
            f"{' '.join(path)} {p.name}"
            for p in command.params
            if getattr(p, "help", None) in (None, "") and p.name != "help"
        ]
    assert missing == []


def test_unknown_command_is_a_usage_error() -> None:
    assert runner.invoke(app, ["no-such-command"]).exit_code == 2
