"""A task from outside the package: ``tests/plugins/xtp_plugin`` (ITP under the name ``xtp``) is installed for
real into a temporary target, and the CLI, run in a subprocess that sees its dist-info, takes it through every
command that lists, runs, reports, compares, estimates and exports tasks."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGIN = Path(__file__).resolve().parent / "xtp_plugin"
PIP_INSTALL = (
    sys.executable,
    "-m",
    "pip",
    "install",
    "--quiet",
    "--no-deps",
    "--no-build-isolation",
    "--no-index",
)
CLI = "import sys; from rescue_bench.cli.main import app; app(prog_name='rescue-bench')"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The installed plugin (a pip ``--target`` directory holding ``xtp_plugin`` and its dist-info)."""
    root = tmp_path_factory.mktemp("xtp")
    source = root / "source"
    shutil.copytree(PLUGIN, source)  # setuptools builds in the source tree: keep that out of the repository
    target = root / "site"
    subprocess.run(
        [*PIP_INSTALL, "--target", str(target), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    assert list(target.glob("xtp_plugin-*.dist-info/entry_points.txt"))
    return target


def cli(plugin: Path, *args: str, cwd: Path) -> str:
    """Run ``rescue-bench ARGS`` with the plugin and this checkout's sources on the path; its stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(REPO_ROOT / "src")])}
    env["COLUMNS"] = "200"  # rich wraps tables to the terminal; keep task names on one line
    done = subprocess.run(
        [sys.executable, "-c", CLI, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"rescue-bench {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_registry_sees_the_plugin_after_the_built_ins(plugin_path: Path, tmp_path: Path) -> None:
    code = "from rescue_bench.tasks import TASK_NAMES; print(','.join(TASK_NAMES))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), str(REPO_ROOT / "src")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "itp,rpp,stp,ssp,er,vp,xtp"


def test_tasks_commands_list_show_and_export_the_plugin(plugin_path: Path, tmp_path: Path) -> None:
    summary = cli(plugin_path, "tasks", "summary", "demo", "--format", "json", cwd=tmp_path)
    assert "xtp" in summary
    cli(
        plugin_path,
        "tasks",
        "export",
        "demo",
        "--task",
        "xtp",
        "--out",
        str(tmp_path / "x.jsonl"),
        cwd=tmp_path,
    )
    lines = [json.loads(line) for line in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert lines and all(line["task"] == "xtp" for line in lines)
    first = lines[0]
    shown = cli(
        plugin_path,
        "tasks",
        "show",
        "demo",
        "--task",
        "xtp",
        "--row",
        f"{first['sample_id']}:{first['row_index']}",
        "--json",
        cwd=tmp_path,
    )
    assert json.loads(shown)["task"] == "xtp"


def test_run_report_compare_with_the_plugin(plugin_path: Path, tmp_path: Path) -> None:
    runs = []
    for seed in ("0", "1"):
        out = tmp_path / f"run{seed}"
        cli(
            plugin_path,
            "run",
            "--model",
            "baseline/random",
            "--data",
            "demo",
            "--tasks",
            "xtp,itp",
            "--seed",
            seed,
            "--out",
            str(out),
            cwd=tmp_path,
        )
        runs.append(out)
    scores = json.loads((runs[0] / "scores.json").read_text())
    # xtp builds ITP's instances, so both have the same count; the random answers differ (seeded by id)
    assert {"xtp", "itp"} <= set(scores) and scores["xtp"]["all"]["n"] == scores["itp"]["all"]["n"] > 0

    report = tmp_path / "report"
    cli(plugin_path, "report", str(runs[0]), "--out", str(report), cwd=tmp_path)
    assert "XTP" in (report / "report.md").read_text()
    assert "XTP" in (report / "report.html").read_text()
    assert "XTP" in (report / "table.tex").read_text()
    with (report / "results.csv").open(newline="") as handle:
        assert any("xtp" in row for row in csv.reader(handle))
    with zipfile.ZipFile(report / "results.xlsx") as book:
        assert any("XTP" in book.read(name).decode() for name in book.namelist() if name.endswith(".xml"))

    compared = cli(plugin_path, "compare", str(runs[0]), str(runs[1]), "--json", cwd=tmp_path)
    assert "xtp" in json.loads(compared)


def test_estimate_and_batch_export_take_the_plugin(plugin_path: Path, tmp_path: Path) -> None:
    estimate = cli(
        plugin_path,
        "estimate",
        "--model",
        "openai/gpt-4o",
        "--data",
        "demo",
        "--tasks",
        "xtp,itp",
        cwd=tmp_path,
    )
    assert "xtp" in estimate.lower()
    out = tmp_path / "batch.jsonl"
    cli(
        plugin_path,
        "batch",
        "export",
        "--model",
        "openai/gpt-4o",
        "--data",
        "demo",
        "--tasks",
        "xtp",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines and all("xtp" in line["custom_id"] for line in lines)
