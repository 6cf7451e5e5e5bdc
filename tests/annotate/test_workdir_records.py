"""The work-directory files read into typed records: unknown keys ignored, wrong types named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.annotate.workdirs import make_workdir

from rescue_bench.errors import DataError
from rescue_bench.workdir import (
    Draft,
    SegmentManifest,
    manifest_paths,
    read_draft,
    read_info,
    read_manifest,
    write_draft,
)


def _manifest(root: Path) -> tuple[Path, dict[str, object]]:
    path = manifest_paths(root)[0]
    return path, json.loads(path.read_text())


def test_records_round_trip_and_ignore_unknown_keys(tmp_path: Path) -> None:
    root = make_workdir(tmp_path / "w")
    path, obj = _manifest(root)
    before = read_manifest(path)
    assert isinstance(before, SegmentManifest) and before.rows[0].cue == 1
    obj["added_by_a_newer_version"] = {"x": 1}
    obj["rows"][0]["lip_sync"] = 0.4  # type: ignore[index]
    path.write_text(json.dumps(obj))
    assert read_manifest(path) == before
    info = json.loads((root / "workdir.json").read_text())
    (root / "workdir.json").write_text(json.dumps({**info, "future": True}))
    assert read_info(root).participants == ("Nora", "Eli")
    draft = Draft("m", ({"row_index": 1},), {"1": ["too short"]}, "violations", ("overall",))
    written = write_draft(root, before.segment_id, draft)
    assert read_draft(written) == draft


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("start_time", "0.5", r"rows\[0\]\.start_time: Input should be a valid number"),
        ("start_time", True, r"rows\[0\]\.start_time: Input should be a valid number"),
        ("index", "1", r"rows\[0\]\.index: Input should be a valid integer"),
        ("index", 1.0, r"rows\[0\]\.index: Input should be a valid integer"),
    ],
)
def test_wrong_json_types_are_errors_naming_file_and_field(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    root = make_workdir(tmp_path / "w")
    path, obj = _manifest(root)
    obj["rows"][0][field] = value  # type: ignore[index]
    path.write_text(json.dumps(obj))
    with pytest.raises(DataError, match=rf"manifest\.json: {message}"):
        read_manifest(path)


def test_participants_as_a_string_is_an_error(tmp_path: Path) -> None:
    root = make_workdir(tmp_path / "w")
    info = json.loads((root / "workdir.json").read_text())
    (root / "workdir.json").write_text(json.dumps({**info, "participants": "Nora, Eli"}))
    with pytest.raises(DataError, match=r"workdir\.json: participants: "):
        read_info(root)
