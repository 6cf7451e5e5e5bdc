"""Structural rules of the package: no import circles, and a command line built plainly from its rows."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
import typer

from rescue_bench.cli.main import app

REPO_ROOT = Path(__file__).resolve().parents[1]
CLI = REPO_ROOT / "src" / "rescue_bench" / "cli"
MAX_OWN_PARAMETERS = 8


def _circles() -> list[list[str]]:
    """The strongly connected groups of two modules or more in the package's import graph (every import:
    top-level, in a function, or for type checkers only), by Tarjan's algorithm."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (pip install -e '.[dev]')")
    graph = grimp.build_graph("rescue_bench")
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in edges[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = [stack.pop()]
            while group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for module in edges:
        if module not in index:
            visit(module)
    return found


def test_the_package_has_no_import_circle() -> None:
    assert _circles() == []


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        return [(" ".join(path), command)]
    return [found for name, sub in subcommands.items() for found in _commands(sub, (*path, name))]


def test_no_command_takes_more_than_eight_parameters_of_its_own() -> None:
    """The rest of a command's options reach it as the run spec or a typed options record (``cli.flags``)."""
    commands = _commands(typer.main.get_command(app))
    assert len(commands) > 30
    counts = {
        name: len(inspect.signature(inspect.unwrap(command.callback)).parameters)
        for name, command in commands
    }
    assert {name: n for name, n in counts.items() if n > MAX_OWN_PARAMETERS} == {}


def test_the_command_line_is_built_without_signatures_or_silenced_types() -> None:
    """Options come from rows (``cli.flags.options_of``): no synthesized ``__signature__``, no throwaway
    typer app harvested for its parameters, no ``type: ignore``."""
    sources = {path.name: path.read_text(encoding="utf-8") for path in CLI.glob("*.py")}
    markers = ("__signature__", "type: ignore", "typer.Typer(add_completion=False)", "get_command(holder)")
    for marker in markers:
        assert [name for name, text in sources.items() if marker in text] == [], marker


def test_a_fact_has_one_place() -> None:
    """The study's placeholder model is declared once; a task's prompt hash is read from its INFO."""
    package = REPO_ROOT / "src" / "rescue_bench"
    sources = {path: path.read_text(encoding="utf-8") for path in package.rglob("*.py")}
    assert sum(text.count('"study/none"') for text in sources.values()) == 1
    assert [path for path, text in sources.items() if 'getattr(task, "PROMPT_HASH"' in text] == []
