"""Every benchmark script runs to its figures on a tiny configuration.

The scripts are not imported by the package or its tests otherwise, so a renamed function they call goes
unnoticed until someone measures (``bench_bertscore.py`` called two removed helpers for a whole session).
``bench_demo.py`` is left out: it is ``make demo`` with a timer, several minutes long.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

# script, tiny arguments, a phrase of the figures it prints last, the extra it needs (or None)
CASES = [
    ("bench_load.py", ["--samples", "10", "--repeat", "1"], "load+validate:", None),
    ("bench_tasks.py", ["--samples", "10", "--repeat", "1"], "instances built and rendered", None),
    ("bench_engine.py", ["--samples", "10", "--sequential-subset", "1"], "% of the ideal", None),
    ("bench_reference.py", ["--samples", "10", "--subset", "2"], "ratio reference / engine", None),
    ("bench_sweep.py", ["--models", "2", "--samples", "10"], "harness CPU", None),
    ("bench_scale.py", ["--factors", "1"], "CPU per request: largest", None),
    ("bench_view.py", ["--repeats", "1"], "list page:", None),
    (
        "bench_peers.py",
        ["--harnesses", "rescue-bench", "--requests", "100", "--rounds", "1"],
        "| rescue-bench |",
        None,
    ),
    ("bench_bertscore.py", ["--pairs", "20"], "distinct ER+VP pairs on 2 threads", "bert_score"),
    ("bench_local.py", ["--requests", "1", "--rounds", "1"], "the default", "llama_cpp"),
]


@pytest.mark.parametrize(("script", "args", "phrase", "needs"), CASES, ids=[c[0] for c in CASES])
def test_script_prints_its_figures(
    script: str, args: list[str], phrase: str, needs: str | None, tmp_path: Path
) -> None:
    if needs is not None:
        pytest.importorskip(needs, reason=f"{script} needs {needs}")
    env = {**os.environ, "RESCUE_BENCH_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert phrase in done.stdout, f"{script} printed no figures:\n{done.stdout[-3000:]}"
