"""The published JSON Schemas of run.json and scores.json: shipped, current, and checking what runs write."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from rescue_bench.rundir.jsonschemas import SCHEMA_FILES, schema_text, shipped


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_the_shipped_schema_is_the_one_the_records_give(name: str) -> None:
    folder = Path(__file__).resolve().parents[2] / "src" / "rescue_bench" / "rundir" / "schemas"
    assert (folder / SCHEMA_FILES[name]).read_text() == schema_text(name), (
        "regenerate with: python -m rescue_bench.rundir.jsonschemas"
    )
    jsonschema.Draft202012Validator.check_schema(shipped(name))


def test_a_baseline_run_validates_and_a_wrong_file_does_not(tmp_path: Path) -> None:
    import json

    from rescue_bench.evaluation.run import run
    from rescue_bench.spec import ModelSpec, RunSpec

    spec = RunSpec(model=ModelSpec(name="baseline/random", seed=1), tasks=("itp", "vp"), data="demo")
    run(spec, tmp_path / "run")
    for name in SCHEMA_FILES:
        obj = json.loads((tmp_path / "run" / name).read_text())
        jsonschema.validate(obj, shipped(name))
    broken = json.loads((tmp_path / "run" / "run.json").read_text()) | {"status": 3}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, shipped("run.json"))
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**scores, "_meta": {"unknown": 1}}, shipped("scores.json"))
