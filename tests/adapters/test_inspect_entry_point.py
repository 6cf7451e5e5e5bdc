"""``inspect eval rescue_bench/itp`` finds our tasks through the ``inspect_ai`` entry point we declare."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.subprocess

pytest.importorskip("inspect_ai")

LOOKUP = "from inspect_ai._util.registry import registry_lookup as r; print(r('task', 'rescue_bench/rpp'))"


def lookup(extra_path: Path) -> str:
    # Not the checkout's src/ on the path: the build leaves src/rescue_bench.egg-info there, which has no
    # direct_url.json, and inspect then takes the package for a plain directory and drops its namespace.
    env = {**os.environ, "PYTHONPATH": str(extra_path)}
    done = subprocess.run(
        [sys.executable, "-c", LOOKUP], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_declared_entry_point_registers_the_tasks(tmp_path: Path) -> None:
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["entry-points"][
        "inspect_ai"
    ]
    # A distribution on the path whose only content is the declared entry point, as an install makes it.
    # (Named apart from rescue_bench so that the installed copy's metadata cannot stand in for it.)
    info = tmp_path / "rescue_bench_entry_point_probe-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: rescue-bench-entry-point-probe\nVersion: 0\n"
    )
    lines = "".join(f"{name} = {target}\n" for name, target in declared.items())
    (info / "entry_points.txt").write_text(f"[inspect_ai]\n{lines}")
    assert declared == {"rescue_bench": "rescue_bench.adapters.inspect._registry"}
    assert "rpp" in lookup(tmp_path)
