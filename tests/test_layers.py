"""The one-way layers of pyproject.toml's import contract hold, and every top-level module sits in a layer."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE = REPO_ROOT / "src" / "rescue_bench"


def _layers() -> list[str]:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return [name.strip().strip("()") for layer in layers for name in layer.replace(":", "|").split("|")]


def test_every_top_level_module_sits_in_a_layer() -> None:
    """A module outside the contract would be free to import anything: none may be left out."""
    modules = {
        f"rescue_bench.{path.stem if path.is_file() else path.name}"
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    }
    assert modules - set(_layers()) == set()


@pytest.mark.subprocess
def test_lint_imports_keeps_the_layer_contract() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    if not lint_imports.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    done = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 kept, 0 broken" in done.stdout
