"""Semantic checks (warnings) and the validation report."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.data.load import SourceNotFound, read_source
from rescue_bench.data.validate import ValidationReport, validate_source
from rescue_bench.problems import Problem

MakeSample = Callable[..., dict[str, Any]]
MakeRow = Callable[..., dict[str, Any]]
Jsonl = Callable[..., Path]


def _warnings(path: Path) -> list[Problem]:
    report = read_source(path)
    assert not report.errors, report.errors
    return list(report.warnings)


def _with_row(sample: dict[str, Any], position: int, **fields: Any) -> dict[str, Any]:
    sample["rows"][position] = {**sample["rows"][position], **fields}
    return sample


def test_clean_sample_has_no_problems(make_sample: MakeSample, jsonl: Jsonl) -> None:
    assert _warnings(jsonl(make_sample())) == []


@pytest.mark.parametrize(
    ("fields", "path", "words"),
    [
        (
            {"relation_cycle_state": "escalation_conflict"},
            "rows[2].relation_cycle_state",
            "not a couple relation",
        ),
        ({"relation_pattern": "stalemate"}, "rows[2].relation_pattern", "'stalemate'"),
        (
            {"support_strategy": [{"strategy_type": "boundary", "target": ["Ann"]}]},
            "rows[2].support_strategy[0].strategy_type",
            "not a couple strategy",
        ),
        ({"utterance_type": "complaint"}, "rows[2].utterance_type", "not an utterance type"),
        ({"start_time": 30.0, "end_time": 25.0}, "rows[2].end_time", "before start_time"),
        ({"relation_cycle_evidence_rows": [1, 9]}, "rows[2].relation_cycle_evidence_rows[1]", "out of range"),
        (
            {"relation_pattern_evidence_rows": [-1]},
            "rows[2].relation_pattern_evidence_rows[0]",
            "out of range",
        ),
        ({"target": ["Ann", "Zed"]}, "rows[2].target[1]", "'Zed' names nobody"),
        (
            {"support_strategy": [{"strategy_type": "evoke", "target": ["Zed"]}]},
            "rows[2].support_strategy[0].target[0]",
            "names nobody",
        ),
        (
            {"viewpoints_attitudes": [{"source": "Ann", "target": "Zed"}]},
            "rows[2].viewpoints_attitudes[0].target",
            "names nobody",
        ),
        (
            {"internal_emotion": [{"person": "Ann", "intensity": 11}]},
            "rows[2].internal_emotion[0].intensity",
            "outside 0-10",
        ),
        (
            {"internal_emotion": [{"person": "Ann", "intensity": "very"}]},
            "rows[2].internal_emotion[0].intensity",
            "not a number",
        ),
        (
            {"relation_cycle_reason": "both partners\u00e2\u0080\u0094again"},
            "rows[2].relation_cycle_reason",
            "probably '—'",
        ),
        ({"dialogue_cleaned": "caf\u00c3\u00a9"}, "rows[2].dialogue_cleaned", "probably 'é'"),
        (
            {"body_posture": [{"person": "Ann", "description": "bad \ufffd byte"}]},
            "rows[2].body_posture[0].description",
            "mojibake",
        ),
    ],
)
def test_each_kind_of_warning_is_located(
    make_sample: MakeSample, jsonl: Jsonl, fields: dict[str, Any], path: str, words: str
) -> None:
    source = jsonl(make_sample(sample_id="clean"), _with_row(make_sample(), 2, **fields))
    [warning] = _warnings(source)
    assert warning.severity == "warning"
    where = (warning.file, warning.line, warning.sample_id, warning.row_index, warning.path)
    assert where == (str(source), 2, "ann_and_bo/001", 3, path)
    assert words in warning.message


@pytest.mark.parametrize("escaped", [True, False], ids=["json-escapes", "utf-8-as-is"])
@pytest.mark.parametrize(
    ("text", "warned"),
    [("caf\u00c3\u00a9", True), ("a \ufffd byte", True), ("Zoë said “fine”", False), ("plain", False)],
)
def test_mojibake_is_found_however_the_file_writes_its_characters(
    make_sample: MakeSample, tmp_path: Path, escaped: bool, text: str, warned: bool
) -> None:
    # The loader skips the field scan when the sample's JSON text shows no mojibake can be in it: the text as
    # written (UTF-8 as it is, or \u escapes) must never hide one.
    sample = _with_row(make_sample(), 1, dialogue_cleaned=text)
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(sample, ensure_ascii=escaped) + "\n", encoding="utf-8")
    found = [w.path for w in _warnings(path) if "mojibake" in w.message]
    assert found == (["rows[1].dialogue_cleaned"] if warned else [])


@pytest.mark.parametrize(
    "fields",
    [
        {"relation_cycle_evidence_rows": [0, 5]},  # row 0 is a release quirk
        {"target": ["Couple"], "support_strategy": [{"strategy_type": "track", "target": ["Ann", "Bo"]}]},
        {"internal_emotion": [{"person": "Ann", "intensity": "6"}, {"person": "Bo", "intensity": None}]},
        {"relation_cycle_state": " pursue_withdraw ", "utterance_type": ""},
        {"dialogue_cleaned": "Zoë said “fine” — naïve café"},  # correct non-ASCII text
    ],
)
def test_release_quirks_and_good_text_give_no_warning(
    make_sample: MakeSample, jsonl: Jsonl, fields: dict[str, Any]
) -> None:
    assert _warnings(jsonl(_with_row(make_sample(), 2, **fields))) == []


def test_family_labels_are_checked_against_the_family_taxonomy(make_sample: MakeSample, jsonl: Jsonl) -> None:
    sample = make_sample(scenario="family", participants=["Ann", "Bo", "Cy"])
    sample = _with_row(
        sample,
        2,
        relation_cycle_state="cross_generational_coalition",
        support_strategy=[{"strategy_type": "evoke", "target": ["Family"]}],
    )
    sample = _with_row(sample, 4, relation_cycle_state="attack_attack")
    messages = sorted(p.message for p in _warnings(jsonl(sample)))
    assert messages == [
        "relation_cycle_state 'attack_attack' is not a family relation pattern",
        "strategy_type 'evoke' is not a family strategy",
    ]


def test_report_json_has_exactly_errors_and_warnings(make_sample: MakeSample, jsonl: Jsonl) -> None:
    path = jsonl(_with_row(make_sample(), 0, utterance_type="complaint"))
    path.write_text(path.read_text() + "not json\n")
    report = validate_source(path)
    payload = report.to_json()
    assert list(payload) == ["errors", "warnings"]
    assert [e["line"] for e in payload["errors"]] == [2]
    keys = {"severity", "message", "file", "line", "sample_id", "row_index", "path"}
    assert all(set(item) == keys for item in payload["errors"] + payload["warnings"])
    assert json.loads(json.dumps(payload)) == payload


def test_report_text_is_one_line_per_problem_then_a_summary(make_sample: MakeSample, jsonl: Jsonl) -> None:
    path = jsonl(_with_row(make_sample(), 0, utterance_type="complaint"))
    path.write_text(path.read_text() + "not json\n")
    lines = validate_source(path).render_text().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"error: {path}:2: not valid JSON")
    assert lines[1].startswith(f"warning: {path}:1 sample ann_and_bo/001 row 1 rows[0].utterance_type:")
    assert lines[2] == f"{path}: 1 usable samples, 5 rows: 1 error, 1 warning"


def test_failed_follows_strictness() -> None:
    warning = Problem("warning", "w")
    report = ValidationReport("s", 1, 1, errors=(), warnings=(warning,))
    assert not report.failed()
    assert report.failed(strict=True)
    assert ValidationReport("s", 0, 0, errors=(Problem("error", "e"),), warnings=()).failed()


def test_missing_source_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SourceNotFound):
        validate_source(tmp_path / "nothing.jsonl")


def test_real_subset_has_no_errors_and_flags_its_mojibake(real_subset: Path) -> None:
    report = validate_source(real_subset)
    assert report.errors == ()
    assert (report.samples, report.rows) == (4, 181)
    # The release's known quirks: mojibake in a few reasons; evidence row 0 is accepted silently.
    assert report.warnings
    assert all("mojibake" in w.message and w.path and w.path.endswith("_reason") for w in report.warnings)


def test_participants_named_like_a_label_are_warned_about(make_sample: MakeSample, jsonl: Jsonl) -> None:
    sample = make_sample(participants=["Ann", "Therapist", "Bo", "couple"])
    warnings = _warnings(jsonl(sample))
    assert [(p.path, p.message) for p in warnings] == [
        (
            "participants[1]",
            "participant 'Therapist' is a label, not a person (Couple, Family, Therapist): left out",
        ),
        (
            "participants[3]",
            "participant 'couple' is named like the label 'Couple': an answer naming it cannot be told from "
            "the label; rename it",
        ),
    ]
    assert all(p.sample_id == sample["sample_id"] and p.line == 1 for p in warnings)
    (loaded,) = read_source(jsonl(sample)).samples
    assert loaded.participants == ("Ann", "Bo", "couple")
