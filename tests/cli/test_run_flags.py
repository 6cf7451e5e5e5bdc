"""`rescue-bench run --help` reads well at 100 columns: grouped in panels, every option name whole, and no
`<bool>` beside a flag."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest
import typer
from tests.conftest import REPO_ROOT

from rescue_bench.cli.flags import ENGINE, GENERATION, MODEL, PANELS, FlagValues
from rescue_bench.cli.main import app
from rescue_bench.cli.run_flags import model_settings
from rescue_bench.models.base import Generation
from rescue_bench.spec import EngineSpec, ModelSpec, RunSpec

pytestmark = pytest.mark.subprocess


def _help(*command: str) -> str:
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(REPO_ROOT / "src"), "TERM": "dumb"}
    env.pop("TERMINAL_WIDTH", None)
    cli = "from rescue_bench.cli.main import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", cli, *command, "--help"], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_run_help_at_100_columns_shows_every_option_whole_in_its_panel() -> None:
    text = _help("run")
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "…" not in text and "<bool>" not in text
    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    names = [n for p in command.params if not p.hidden for n in (*p.opts, *p.secondary_opts)]
    assert len(names) > 50
    for name in names:
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), f"{name} is not shown whole"
    titles = re.findall(r"╭─ (.+?) ─", text)
    assert titles == ["Options", *PANELS]


def test_an_alias_is_its_own_hidden_option_named_in_the_help() -> None:
    # (that the aliases still work is tests/cli/test_spec.py's and tests/engine/test_task_options.py's)
    flat = re.sub(r"[│\s]+", " ", _help("run"))  # the help text as one line, without the table's borders
    for alias in ("--rpp-current-turn", "--ssp-target-emotion"):
        assert f"Also {alias}." in flat, alias
    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    hidden = {n for p in command.params if p.hidden for n in p.opts}
    assert hidden == {"--rpp-current-turn", "--ssp-target-emotion"}


def test_flags_of_other_commands_show_no_value_either() -> None:
    for command in (("data", "validate"), ("view",), ()):
        assert "<bool>" not in _help(*command), command


def _panels(*command: str) -> dict[str, set[str]]:
    """The options each help panel of ``command`` lists, by panel."""
    group: Any = typer.main.get_command(app)
    for name in command:
        group = group.commands[name]
    shown: dict[str, set[str]] = {}
    for param in group.params:
        if not param.hidden:
            shown.setdefault(getattr(param, "rich_help_panel", None) or "", set()).update(param.opts)
    return shown


@pytest.mark.parametrize("command", [("score",), ("annotate", "draft")])
def test_score_and_draft_take_runs_model_generation_and_engine_flags(command: tuple[str, ...]) -> None:
    run, other = _panels("run"), _panels(*command)
    assert other[GENERATION] == run[GENERATION] - {"--repeats"}
    assert {"--top-p", "--seed", "--reasoning-effort", "--temperature"} <= other[GENERATION]
    assert other[ENGINE] == {
        "--concurrency",
        "--fixed-concurrency",
        "--rpm",
        "--tpm",
        "--timeout",
        "--max-retries",
        "--no-cache",
    }
    assert other[ENGINE] <= run[ENGINE] and other[MODEL] <= run[MODEL]
    assert ("--model" in other[MODEL]) is (command != ("score",))  # score names its judges with --judge


def test_the_shared_flags_default_as_run_does() -> None:
    given = model_settings(FlagValues({}))
    assert given.engine == EngineSpec() == RunSpec(model="vllm/m").engine
    assert given.engine.concurrency == 16 and given.engine.timeout == 120.0
    assert given.validate(ModelSpec, name="vllm/m").generation() == Generation()


def test_fixed_concurrency_pins_the_window_that_runs_otherwise_adapt() -> None:
    from rescue_bench.engine.execute import EngineOptions

    adapting = model_settings(FlagValues({"concurrency": 4})).engine
    pinned = model_settings(FlagValues({"concurrency": 4, "fixed_concurrency": True})).engine
    assert pinned.fixed_concurrency and not adapting.fixed_concurrency
    assert EngineOptions.of(adapting).adaptive and not EngineOptions.of(pinned).adaptive
    assert EngineOptions.of(pinned).concurrency == EngineOptions.of(adapting).concurrency == 4
