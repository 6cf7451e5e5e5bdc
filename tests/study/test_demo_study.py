"""The demo study (``examples/demo-study.toml``, what ``make demo`` runs) is a valid study over the demo data,
and the Makefile's report step names the directory of the study's local model."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from rescue_bench.data.load import load_samples
from rescue_bench.study import validate_study

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "examples" / "demo-study.toml"


def test_the_demo_study_names_demo_conversations_of_both_scenarios_and_a_local_judge() -> None:
    study = validate_study(tomllib.loads(STUDY.read_text()), where=str(STUDY))
    base = study.base
    samples = {s.sample_id: s for s in load_samples(base.data)}
    chosen = base.sample_ids or ()
    assert chosen and set(chosen) <= set(samples)
    assert {samples[i].scenario for i in chosen} == {"couple", "family"}
    names = [m.name for m in study.models]
    assert any(n.startswith("local/") for n in names)
    assert {"baseline/random", "baseline/majority"} <= set(names)
    assert [j.name for j in base.judges] == [n for n in names if n.startswith("local/")]


def test_the_makefile_reports_the_run_of_the_study_s_local_model() -> None:
    study = validate_study(tomllib.loads(STUDY.read_text()), where=str(STUDY))
    makefile = (REPO / "Makefile").read_text()
    assert "DEMO_STUDY ?= examples/demo-study.toml" in makefile
    match = re.search(r"^DEMO_RUN \?= (\S+)$", makefile, re.MULTILINE)
    assert match is not None
    dirs = {run.model: run.out.name for run in study.runs()}
    local = next(m for m in dirs if m.startswith("local/"))
    assert dirs[local] == match.group(1)
