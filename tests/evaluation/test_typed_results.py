"""A run's results are typed records: per-task counts (`Counts`), scope entries (`ScoreEntry`), and `run.json`
read and written as a `Manifest`; the package docstring's example runs as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import rescue_bench
from rescue_bench.evaluation.run import run
from rescue_bench.rundir import Counts, Manifest, ScoreEntry, load_run
from rescue_bench.spec import RunSpec


def test_a_run_outcome_holds_typed_counts_and_score_entries(tmp_path: Path) -> None:
    spec = RunSpec(model="baseline/random", data="demo", tasks=["itp", "rpp"], limit_samples=2)
    outcome = run(spec, out=tmp_path / "x")
    assert outcome.status == "finished" and outcome.scores is not None
    counts = outcome.counts["itp"]
    assert isinstance(counts, Counts)
    assert counts.done == counts.instances == counts.valid + counts.invalid > 0
    assert counts.requests > 0 and counts.failed_answers == counts.invalid - counts.request_failures
    entry = outcome.scores.entry("itp")
    assert isinstance(entry, ScoreEntry) and entry.n == counts.instances
    f1 = entry.metric("f1")
    assert f1 is not None and 0.0 <= f1 <= 1.0
    assert outcome.scores.entry("er").empty  # not asked: an empty entry, not an error
    written = json.loads((tmp_path / "x" / "run.json").read_text())
    manifest = Manifest.from_json(written)
    assert manifest.counts == outcome.counts and manifest.to_json() == written  # read back as written
    assert load_run(tmp_path / "x").manifest.counts["rpp"].instances == outcome.counts["rpp"].instances


def test_the_package_docstring_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = rescue_bench.__doc__ or ""
    found = re.search(r"::\n\n((?:    .*\n|\n)+)", doc)
    assert found is not None
    code = "\n".join(line[4:] for line in found.group(1).splitlines())
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "rescue_bench.__doc__", "exec"), {})
    assert (tmp_path / "runs" / "x" / "scores.json").is_file()
