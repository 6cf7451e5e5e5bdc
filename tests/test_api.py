"""The public Python API: a curated, sorted ``__all__`` whose names all import, and a run from Python."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import rescue_bench
from rescue_bench.data.load import load_samples
from rescue_bench.tasks import get_task
from rescue_bench.tasks.base import TaskConfig


def test_exported_members() -> None:
    names = rescue_bench.__all__
    assert names == sorted(names) and len(set(names)) == len(names)
    assert not [n for n in names if n.startswith("_")]
    for name in names:
        assert getattr(rescue_bench, name) is not None, name
    assert {"RunSpec", "run", "load_samples", "get_task", "get_model", "RunOutcome"} <= set(names)
    assert {"Instance", "Prediction", "Request", "Reply", "Score"} <= set(names)


@pytest.mark.subprocess
def test_import_stays_light() -> None:
    """``import rescue_bench`` loads neither the engine nor pydantic; a name does, on first use."""
    prefixes = "('rescue_bench.', 'pydantic')"
    code = f"import sys, rescue_bench; print(sorted(m for m in sys.modules if m.startswith({prefixes})))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_run_from_python_returns_the_scores_it_wrote(tmp_path: Path) -> None:
    spec = rescue_bench.RunSpec(model="baseline/random", data="demo", tasks=["itp"])  # type: ignore[arg-type]
    result = rescue_bench.run(spec, out=tmp_path / "x")
    assert result.status == "finished" and result.scores is not None
    written = json.loads((tmp_path / "x" / "scores.json").read_text())
    assert written == json.loads(json.dumps(result.scores.to_json()))
    instances = [i for s in load_samples("demo") for i in get_task("itp").build(s, TaskConfig())]
    assert result.counts["itp"].instances == len(instances) == result.counts["itp"].done
    f1 = result.scores.entry("itp").metric("f1")
    assert isinstance(f1, float) and 0.0 <= f1 <= 1.0
