"""Values that used to be converted or dropped without a word: wrong JSON types, rows without a speaker,
rows too large to send unremarked. Each is a warning naming file, line, sample, row and field, so strict
loading (``load_samples(strict=True)``, ``data validate --strict``) refuses it, and lenient loading keeps
what it read before."""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.checks import DEFAULT_MAX_ROW_CHARS
from rescue_bench.data.load import load_samples, read_source
from rescue_bench.errors import DataError

MakeSample = Callable[..., dict[str, Any]]
Jsonl = Callable[..., Path]
runner = CliRunner()
DATA_SRC = Path(__file__).parents[2] / "src" / "rescue_bench" / "data"


def _set(sample: dict[str, Any], key: str, value: Any, row: int | None) -> dict[str, Any]:
    if row is None:
        sample[key] = value
    else:
        sample["rows"][row][key] = value
    return sample


@pytest.mark.parametrize(
    ("key", "value", "row", "path", "words"),
    [
        ("row_index", "3", 2, "rows[2].row_index", 'row_index is a string ("3"), not an integer; read as 3'),
        ("row_index", 3.0, 2, "rows[2].row_index", "row_index is a number with a decimal point (3.0)"),
        (
            "row_index",
            True,
            0,
            "rows[0].row_index",
            "row_index is a boolean (true), not an integer; read as 1",
        ),
        ("start_time", "12.5", 1, "rows[1].start_time", 'start_time is a string ("12.5"), not a number'),
        ("start_time", True, 1, "rows[1].start_time", "start_time is a boolean (true), not a number"),
        ("end_time", "18", 1, "rows[1].end_time", 'end_time is a string ("18"), not a number; read as 18.0'),
        ("relation_cycle_evidence_rows", [1, "2"], 2, "rows[2].relation_cycle_evidence_rows[1]", "read as 2"),
        ("sample_id", 7, None, "sample_id", "sample_id is a number (7), not a string; it is ignored"),
        ("participants", "Ann, Bo", None, "participants", 'participants is a string ("Ann, Bo"), not a list'),
        ("participants", ["Ann", 2], None, "participants", "participants is a list with non-string items"),
        ("source_file", False, None, "source_file", "source_file is a boolean (false), not a string"),
    ],
)
def test_a_wrong_json_type_is_a_located_warning_and_strict_refuses_it(
    make_sample: MakeSample, jsonl: Jsonl, key: str, value: Any, row: int | None, path: str, words: str
) -> None:
    sample = _set(make_sample(), key, value, row)
    file = jsonl(make_sample(sample_id="ann_and_bo/000"), sample)
    report = read_source(file)
    assert report.errors == () and len(report.samples) == 2  # lenient: read as before
    [warning] = report.warnings
    assert words in warning.message
    expected_id = "data/line2" if key == "sample_id" else "ann_and_bo/001"
    expected_row = None if row is None else row + 1
    assert (warning.file, warning.line, warning.sample_id, warning.row_index, warning.path) == (
        str(file),
        2,
        expected_id,
        expected_row,
        path,
    )
    with pytest.raises(DataError, match=r"not (an integer|a number|a string|a list)"):
        load_samples(file, strict=True)
    strict = runner.invoke(app, ["data", "validate", str(file), "--strict"])
    assert strict.exit_code == 1 and warning.render() in strict.stdout


def test_coerced_values_are_still_read_as_before(make_sample: MakeSample, jsonl: Jsonl) -> None:
    sample = _set(make_sample(), "row_index", "3", 2)
    sample = _set(sample, "start_time", "12.5", 1)
    [loaded] = load_samples(jsonl(sample))
    assert (loaded.rows[2].row_index, loaded.rows[1].start_time) == (3, 12.5)
    participants = _set(make_sample(), "participants", "Ann, Bo", None)
    assert load_samples(jsonl(participants))[0].participants == ("Ann", "Bo")  # inferred from the rows


def test_a_directory_file_reports_its_wrong_types_too(tmp_path: Path, make_sample: MakeSample) -> None:
    (tmp_path / "s1.json").write_text(json.dumps(_set(make_sample(), "sample_id", 12, None)))
    [warning] = read_source(tmp_path).warnings
    assert (warning.file, warning.sample_id, warning.path) == (str(tmp_path / "s1.json"), "s1", "sample_id")


# -- rows without a speaker ---------------------------------------------------------------------------------


def test_rows_without_a_speaker_are_counted_per_sample(
    make_sample: MakeSample, jsonl: Jsonl, caplog: pytest.LogCaptureFixture
) -> None:
    sample = make_sample()
    for position in (0, 1, 3):
        del sample["rows"][position]["primary_speaker"]
    sample["rows"][4]["primary_speaker"] = " "
    path = jsonl(sample, make_sample(sample_id="ann_and_bo/002"))
    report = read_source(path)
    [warning] = [w for w in report.warnings if "primary_speaker" in w.message]
    assert (warning.file, warning.line, warning.sample_id) == (str(path), 1, "ann_and_bo/001")
    assert warning.message.startswith("4 of 5 rows have no primary_speaker (rows 1, 2, 4, 5)")
    assert warning in report.notices
    with caplog.at_level(logging.WARNING, logger="rescue_bench.data"):
        assert len(load_samples(path)) == 2  # still used: lenient loading only warns
    assert [r.getMessage() for r in caplog.records] == [warning.render()]


# -- oversized rows -----------------------------------------------------------------------------------------


def test_a_row_over_the_text_limit_is_reported_before_use(
    make_sample: MakeSample, jsonl: Jsonl, caplog: pytest.LogCaptureFixture
) -> None:
    sample = make_sample()
    sample["rows"][3]["dialogue_cleaned"] = "word " * 50_000  # 250,000 characters
    path = jsonl(sample)
    [warning] = read_source(path).warnings
    assert (warning.sample_id, warning.row_index, warning.path) == (
        "ann_and_bo/001",
        4,
        "rows[3].dialogue_cleaned",
    )
    assert "250,0" in warning.message and f"limit {DEFAULT_MAX_ROW_CHARS:,}" in warning.message
    with caplog.at_level(logging.WARNING, logger="rescue_bench.data"):
        load_samples(path)
    assert [r.getMessage() for r in caplog.records] == [warning.render()]
    assert read_source(path, max_row_chars=300_000).warnings == ()
    small = runner.invoke(app, ["data", "validate", str(path), "--max-row-chars", "1000", "--format", "json"])
    warned_rows = [w["row_index"] for w in json.loads(small.stdout)["warnings"]]
    assert warned_rows == [4]


def test_the_cli_default_limit_is_the_loader_default() -> None:
    result = runner.invoke(app, ["data", "validate", "--help"], env={"COLUMNS": "200"})
    assert f"default: {DEFAULT_MAX_ROW_CHARS}" in result.output.replace("_", "")


# -- module structure ---------------------------------------------------------------------------------------


def _project_imports(tree: ast.Module) -> tuple[set[str], list[str]]:
    """(modules imported at module level, function-level imports) of ``rescue_bench``."""
    top: set[str] = set()
    nested: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in (n for n in names if n.startswith("rescue_bench")):
            if node in tree.body:
                top.add(name)
            else:
                nested.append(name)
    return top, nested


def test_data_modules_import_one_way_at_module_level() -> None:
    graph: dict[str, set[str]] = {}
    for path in sorted(DATA_SRC.glob("*.py")):
        top, nested = _project_imports(ast.parse(path.read_text(encoding="utf-8")))
        assert nested == [], f"{path.name} imports {nested} inside a function"
        graph[f"rescue_bench.data.{path.stem}"] = {m for m in top if m.startswith("rescue_bench.data.")}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(
            m == goal or (m not in seen and reaches(m, goal, seen | {m})) for m in graph.get(start, ())
        )

    cycles = [m for m in graph if reaches(m, m, set())]
    assert cycles == []
    assert "rescue_bench.data.validate" not in graph["rescue_bench.data.load"]


def test_run_shows_the_oversized_row_warning_before_asking(
    make_sample: MakeSample, jsonl: Jsonl, tmp_path: Path
) -> None:
    sample = make_sample()
    sample["rows"][3]["dialogue_cleaned"] = "word " * 50_000
    path = jsonl(sample)
    out = tmp_path / "run"
    args = ["run", "--model", "baseline/random", "--data", str(path), "--tasks", "itp", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    [warning] = read_source(path).warnings
    assert warning.render() in result.stderr.splitlines()
