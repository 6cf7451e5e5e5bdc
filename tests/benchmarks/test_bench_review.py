"""``benchmarks/bench_review.py`` runs end to end on a tiny store and its figures describe what it built.

The figures in docs/review.md come from this script; a change to the review app it drives (a route, the login
form, the editor's field names, the import's summary) breaks it here rather than at the next measurement.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_review.py"
PAGES = ("dashboard", "segment page", "row view")


def test_bench_review_times_every_figure_of_a_tiny_store(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="bench_review.py needs the review extra")
    out = tmp_path / "figures.json"
    tiny = ["--samples", "6", "--repeats", "2", "--slow-repeats", "1", "--json", str(out)]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *tiny],
        cwd=tmp_path,
        env={**os.environ, "RESCUE_BENCH_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "import-reviews" in done.stdout and "agreement page" in done.stdout, done.stdout
    found = json.loads(out.read_text())

    single, triple = found["one annotator"], found["three annotators"]
    assert single["segments"] == triple["segments"] == 6
    assert single["rows"] == triple["rows"] > 6 and triple["reviews"] == 3 * triple["rows"]
    assert single["load"]["said"].startswith(f"loaded 6 segment(s), {single['rows']} row(s)")
    for name in (*PAGES, "saving a row", "export"):
        assert 0 < single[name]["median_ms"] <= single[name]["max_ms"], name
        assert single[name]["cpu_median_ms"] > 0, name
    for name in (*PAGES, "agreement page", "export"):
        assert 0 < triple[name]["median_ms"] <= triple[name]["max_ms"], name
        assert triple[name]["cpu_median_ms"] > 0, name

    # every row reviewed: the whole store is exported; with three annotators, the segments one of them
    # changed (the first and the sixth) are held back
    assert single["export"]["segments"] == 6
    assert triple["export"]["segments"] == 6 - 2
    imports = triple["imports"]
    assert [i["user"] for i in imports] == ["ann", "ben", "cat", "ann"]
    assert all(f"imported {triple['rows']} row(s) of 6 sample(s)" in i["said"] for i in imports)
    assert all(f"({triple['rows']} new or changed)" in i["said"] for i in imports[:3])
    assert "(0 new or changed)" in imports[3]["said"]
    assert all(i["s"] > 0 and i["cpu_s"] > 0 for i in [*imports, single["load"]])
