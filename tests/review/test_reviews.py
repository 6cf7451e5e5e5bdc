"""Independent reviews from files, their agreement, and the export that holds back what is unresolved
(`review init --reviews`, `import-reviews`, `agreement --json`, `export --provenance`)."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import read_source
from rescue_bench.taxonomy import UTTERANCE_TYPES

runner = CliRunner()
MOVED = "demo_couple/nadia_and_tom_s01"
RETYPED = "demo_family/hartley_family_s01"


def _run(*args: str) -> Any:
    result = runner.invoke(app, ["review", *args], env={"REVIEW_PW": "a long enough password"})
    return result


def demo_samples() -> list[dict[str, Any]]:
    text = resources.files("rescue_bench.data.demo").joinpath("demo.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _write(path: Path, samples: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    return path


def _moved(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every intensity of one sample one point higher (one lower at 10)."""
    out = json.loads(json.dumps(samples))
    for sample in out:
        if sample["sample_id"] == MOVED:
            for row in sample["rows"]:
                for emotion in row["internal_emotion"]:
                    emotion["intensity"] += 1 if emotion["intensity"] < 10 else -1
    return out


def _retyped(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Some utterance types of another sample changed."""
    out = json.loads(json.dumps(samples))
    sample = next(s for s in out if s["sample_id"] == RETYPED)
    typed = [row for row in sample["rows"] if row["utterance_type"]][:4]
    for row in typed:
        row["utterance_type"] = next(t for t in UTTERANCE_TYPES if t != row["utterance_type"])
    return out


@pytest.fixture
def project(tmp_path: Path) -> str:
    """A triple-review store with the demo data and three annotators."""
    db = f"sqlite:///{tmp_path / 'review.db'}"
    demo = _write(tmp_path / "demo.jsonl", demo_samples())
    assert _run("init", "--reviews", "3", "--db", db).output.endswith("3 review(s) per row, blind\n")
    assert _run("load", str(demo), "--db", db).exit_code == 0
    for name in ("ann", "ben", "cat"):
        assert (
            _run("add-user", name, "--role", "annotator", "--password-env", "REVIEW_PW", "--db", db).exit_code
            == 0
        )
    return db


def _import_three(tmp_path: Path, db: str) -> None:
    samples = demo_samples()
    for name, changed in (("ann", samples), ("ben", _moved(samples)), ("cat", _retyped(samples))):
        result = _run(
            "import-reviews", str(_write(tmp_path / f"{name}.jsonl", changed)), "--user", name, "--db", db
        )
        assert result.exit_code == 0, result.output
        assert "imported 242 row(s) of 6 sample(s)" in result.output


def test_export_holds_back_disputed_samples_and_keeps_integers(project: str, tmp_path: Path) -> None:
    _import_three(tmp_path, project)
    out, prov = tmp_path / "release.jsonl", tmp_path / "provenance.jsonl"
    result = _run("export", "--out", str(out), "--provenance", str(prov), "--db", project)
    assert result.exit_code == 0, result.output
    assert "wrote 4 resolved segment(s)" in result.output
    assert f"held back: {MOVED}: " in result.output and f"held back: {RETYPED}: " in result.output
    assert "reviews disagree, not adjudicated" in result.output

    written = [json.loads(line) for line in out.read_text().splitlines()]
    original = {s["sample_id"]: s for s in demo_samples()}
    assert sorted(s["sample_id"] for s in written) == sorted(set(original) - {MOVED, RETYPED})
    for sample in written:  # exactly the data, in its JSON form (6 == 6.0 in Python: compare the text)
        assert json.dumps(sample, sort_keys=True) == json.dumps(original[sample["sample_id"]], sort_keys=True)
    intensities = [e["intensity"] for s in written for r in s["rows"] for e in r["internal_emotion"]]
    assert intensities and all(type(i) is int for i in intensities)
    assert read_source(out).errors == ()

    provenance = [json.loads(line) for line in prov.read_text().splitlines()]
    assert len(provenance) == sum(len(s["rows"]) for s in written)
    assert {tuple(r["user"] for r in p["reviewers"]) for p in provenance} == {("ann", "ben", "cat")}
    assert {p["resolution"] for p in provenance} == {"agreed"} and provenance[0]["adjudicator"] is None


def test_import_names_the_line_of_a_row_that_matches_nothing(project: str, tmp_path: Path) -> None:
    samples = demo_samples()
    samples[2]["rows"].append({**samples[2]["rows"][-1], "row_index": len(samples[2]["rows"]) + 1})
    samples[4]["sample_id"] = "demo_family/nobody"
    bad = _write(tmp_path / "bad.jsonl", samples)
    result = _run("import-reviews", str(bad), "--user", "ann", "--db", project)
    assert result.exit_code == 1
    assert f"{bad}:3 sample {samples[2]['sample_id']} row {len(samples[2]['rows'])}" in result.output
    assert f"{bad}:5 sample demo_family/nobody" in result.output
    assert "nothing imported" in result.output
    assert (
        "no segment has every row resolved"
        in _run("export", "--out", str(tmp_path / "o.jsonl"), "--db", project).output
    )
    unknown = _run("import-reviews", str(bad), "--user", "zoe", "--db", project)
    assert unknown.exit_code == 2 and "no user 'zoe'" in unknown.output


def _units(samples: list[dict[str, Any]], pick: Any) -> dict[tuple[Any, ...], Any]:
    return {
        (s["sample_id"], r["row_index"], *k): v
        for s in samples
        for r in s["rows"]
        for k, v in pick(r).items()
    }


def test_agreement_json_matches_the_krippendorff_package(project: str, tmp_path: Path) -> None:
    _import_three(tmp_path, project)
    result = _run("agreement", "--json", "--db", project)
    assert result.exit_code == 0, result.output
    dims = {d["dimension"]: d for d in json.loads(result.output)["dimensions"]}

    # intensity: units are (sample, row, person), the first emotion given for the person; the same units
    # formed here by hand
    def intensity(row: dict[str, Any]) -> dict[tuple[Any, ...], Any]:
        out: dict[tuple[Any, ...], Any] = {}
        for e in row["internal_emotion"]:
            out.setdefault((e["person"],), e["intensity"])
        return out

    samples = demo_samples()
    raters = [_units(s, intensity) for s in (samples, _moved(samples), _retyped(samples))]
    units = sorted(raters[0])
    data = np.array([[r[u] for u in units] for r in raters], dtype=float)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    got = dims["intensity"]
    assert (got["units"], got["raters"], got["level"]) == (len(units), 3, "ordinal")
    assert math.isclose(got["alpha"], expected, rel_tol=1e-9) and got["alpha"] < 1
    ann_ben = next(p for p in got["pairwise_cohen_kappa"] if p["raters"] == ["ann", "ben"])
    kappa = cohen_kappa_score(data[0], data[1], weights="linear")
    assert ann_ben["units"] == len(units) and math.isclose(ann_ben["kappa"], kappa, rel_tol=1e-9)

    # utterance type: one unit per row on which someone gave a type; nominal
    def utterance(row: dict[str, Any]) -> dict[tuple[Any, ...], Any]:
        return {(): row["utterance_type"]} if row["utterance_type"] else {}

    typed = [_units(s, utterance) for s in (samples, _moved(samples), _retyped(samples))]
    keys = sorted(set().union(*typed))
    codes = {
        label: i for i, label in enumerate(sorted({str(v) for t in typed for v in t.values()} | {"(none)"}))
    }
    matrix = np.array([[codes[t.get(k, "(none)")] for k in keys] for t in typed], dtype=float)
    nominal = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    assert dims["utterance_type"]["units"] == len(keys)
    assert math.isclose(dims["utterance_type"]["alpha"], nominal, rel_tol=1e-9)
    assert dims["relation_pattern"]["alpha"] == 1.0  # nobody changed one
    assert set(dims) == {
        "intensity",
        "utterance_type",
        "relation_pattern",
        "strategy",
        "emotion",
        "target",
        "viewpoint",
    }

    table = _run("agreement", "--db", project)
    assert table.exit_code == 0 and "intensity" in table.output and "ann/ben" in table.output


def test_assign_segments_from_the_command_line(project: str) -> None:
    given = _run("assign", MOVED, RETYPED, "--user", "ann", "--db", project)
    assert given.exit_code == 0 and "assigned 2 segment(s) to ann (0 already theirs)" in given.output
    assert (
        "assigned 0 segment(s) to ann (1 already theirs)"
        in _run("assign", MOVED, "--user", "ann", "--db", project).output
    )
    unknown = _run("assign", "demo_couple/nobody", "--user", "ann", "--db", project)
    assert (
        unknown.exit_code == 2 and "no such sample in the review store: demo_couple/nobody" in unknown.output
    )
