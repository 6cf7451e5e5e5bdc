"""`rescue-bench view` on a core install: serving names the extra to install in one line; --bundle works."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app

runner = CliRunner()


@pytest.mark.parametrize("missing", ["fastapi", "uvicorn"])
def test_serving_without_the_view_extra_names_it(
    missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # what an uninstalled package looks like to find_spec
    result = runner.invoke(app, ["view", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output == f"error: {missing} is not installed: run `pip install 'rescue-bench[view]'`\n"


def test_the_bundle_needs_no_web_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    args = ["run", "--model", "baseline/majority", "--data", "demo", "--tasks", "itp", "--limit-samples", "1"]
    made = runner.invoke(app, [*args, "--out", str(run), "--quiet", "--no-bertscore"])
    assert made.exit_code == 0, made.output
    for module in ("fastapi", "uvicorn", "starlette"):
        monkeypatch.setitem(sys.modules, module, None)
    result = runner.invoke(app, ["view", str(run), "--bundle", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "site" / "index.html").is_file()
