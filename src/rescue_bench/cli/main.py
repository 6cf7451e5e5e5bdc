"""The ``rescue-bench`` command.

Each command group lives in its own small module with a ``register`` function.
"""

from __future__ import annotations

import importlib
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup, TyperOption

from rescue_bench import __version__
from rescue_bench.errors import BenchError, ConfigError, UnfinishedWork
from rescue_bench.printable import echo, printable

# Modules under rescue_bench.cli, each with ``register(app: typer.Typer) -> None``.
COMMAND_MODULES = (
    "data",
    "tasks",
    "run",
    "cache",
    "batch",
    "report",
    "judge",
    "annotate",
    "review",
    "view",
    "export",
    "study",
)


class _BenchGroup(TyperGroup):
    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _plain_flags(command, ctx)
        return command

    def get_help_option(self, ctx: Any) -> Any:
        for param in self.params:  # --version
            if isinstance(param, TyperOption) and param.is_flag:
                _no_metavar(param)
        return _no_metavar(super().get_help_option(ctx))

    def invoke(self, ctx: Any) -> Any:
        from rescue_bench.data.load import SourceNotFound

        try:
            return super().invoke(ctx)
        except (SourceNotFound, ConfigError) as exc:
            _fail(str(exc), 2)
        except BenchError as exc:
            _fail(str(exc), exc.exit_code if isinstance(exc, UnfinishedWork) else 1)


def _plain_flags(command: Any, ctx: Any) -> None:
    """A flag takes no value, so ``--help`` shows none beside it (typer writes ``<bool>`` for every flag)."""
    for param in (*command.params, command.get_help_option(ctx)):
        if isinstance(param, TyperOption) and param.is_flag:
            _no_metavar(param)
    for sub in getattr(command, "commands", {}).values():
        _plain_flags(sub, ctx)


def _no_metavar(option: Any) -> Any:
    if option is not None:
        option.metavar = ""
    return option


def _fail(message: str, exit_code: int) -> NoReturn:
    # typer vendors its own click, so a click.ClickException raised here would escape as a traceback;
    # typer.Exit is handled by whichever click typer runs on.
    # The message may quote a server's error body or a data file: printed, never obeyed by the terminal.
    echo(f"error: {printable(message, one_line=True)}", err=True)
    raise typer.Exit(exit_code)


app = typer.Typer(
    cls=_BenchGroup,
    name="rescue-bench",
    help="Evaluate models on RESCUE-Bench and build relation-aware data.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,  # locals in tracebacks could hold API keys
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        echo(f"rescue-bench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """Evaluate models on RESCUE-Bench and build relation-aware data."""


for _name in COMMAND_MODULES:
    importlib.import_module(f"rescue_bench.cli.{_name}").register(app)


def main() -> None:
    """The ``rescue-bench`` console script."""
    app()
