"""Importing work: annotation work directories (manifests, drafts, clips) and release JSONL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from review_workdir import write_workdir
from sqlalchemy import select

from rescue_bench.errors import DataError
from rescue_bench.review.db import RowRecord, RowVersion, Segment, open_store
from rescue_bench.review.loader import load_work, read_work


def test_workdir_segments_rows_and_clips(tmp_path: Path) -> None:
    segments, warnings = read_work(write_workdir(tmp_path / "w"))
    assert warnings == []
    couple = next(s for s in segments if s.segment_id == "couple_s01")
    assert couple.sample_id == "demo_couple/ep01/couple_s01" and couple.group_name == "demo_couple/ep01"
    assert (
        couple.scenario == "couple"
        and couple.participants == ("Mara", "Tom")
        and couple.model == "fake/drafter"
    )
    assert [r.clip_path for r in couple.rows][:2] == [
        "clips/couple_s01/row_0001.mp4",
        "clips/couple_s01/row_0002.mp4",
    ]
    assert couple.rows[2].violations == ("tone_of_voice is vague",)
    assert couple.draft_notes == {
        "status": "violations",
        "segment_violations": ["no relation pattern changes in the segment"],
    }
    assert couple.rows[1].subtitle_text == "He never listens when I bring up the garden plans."
    assert couple.rows[1].duration_sec == pytest.approx(4.5)


def test_loading_twice_keeps_edits(empty_db_url: str, tmp_path: Path) -> None:
    work = write_workdir(tmp_path / "w")
    sessions = open_store(empty_db_url)
    with sessions() as session:
        first = load_work(session, work)
        assert first.added == ("couple_s01", "family_s01") and first.rows == 7
        row = session.scalars(select(RowRecord).where(RowRecord.row_index == 2)).first()
        assert row is not None
        row.data = {**row.data, "tone_of_voice": "edited"}
        session.commit()
        again = load_work(session, work)
        assert again.added == () and again.skipped == ("couple_s01", "family_s01")
        assert (
            session.scalars(select(RowRecord.data).where(RowRecord.id == row.id)).one()["tone_of_voice"]
            == "edited"
        )
        assert len(list(session.scalars(select(RowVersion)))) == 7  # version 1 of every row
    sessions.kw["bind"].dispose()


def test_missing_draft_starts_from_the_manifest(tmp_path: Path) -> None:
    work = write_workdir(tmp_path / "w")
    (work / "segments" / "family_s01" / "draft.json").unlink()
    segments, warnings = read_work(work)
    family = next(s for s in segments if s.segment_id == "family_s01")
    assert family.rows[0].data == {
        "row_index": 1,
        "start_time": 0.0,
        "end_time": 4.0,
        "primary_speaker": "Ines",
        "dialogue_cleaned": "Rafa stopped talking to us after the move.",
    }
    assert any("no draft.json" in w for w in warnings)


def test_missing_clip_is_a_warning(tmp_path: Path) -> None:
    work = write_workdir(tmp_path / "w")
    (work / "clips" / "couple_s01" / "row_0003.mp4").unlink()
    _, warnings = read_work(work)
    assert warnings == [
        f"{work / 'segments' / 'couple_s01' / 'manifest.json'}: row 3: clip "
        "clips/couple_s01/row_0003.mp4 is missing"
    ]


def _manifest(work: Path) -> tuple[Path, dict[str, object]]:
    path = work / "segments" / "couple_s01" / "manifest.json"
    return path, json.loads(path.read_text())


@pytest.mark.parametrize("clip", ["../outside.mp4", "/etc/passwd.mp4", "clips/x%2e.mp4", "clips/notes.txt"])
def test_clip_paths_must_stay_inside_the_workdir(tmp_path: Path, clip: str) -> None:
    work = write_workdir(tmp_path / "w")
    path, manifest = _manifest(work)
    manifest["rows"][0]["clip_path"] = clip  # type: ignore[index]
    path.write_text(json.dumps(manifest))
    with pytest.raises(DataError, match=r"manifest\.json: rows\[0\]\.clip_path"):
        read_work(work)


def test_bad_files_name_the_file_and_field(tmp_path: Path) -> None:
    work = write_workdir(tmp_path / "w")
    path, manifest = _manifest(work)
    path.write_text("{not json")
    with pytest.raises(DataError, match=r"couple_s01/manifest\.json: not valid JSON"):
        read_work(work)
    manifest["scenario"] = "group"
    path.write_text(json.dumps(manifest))
    with pytest.raises(DataError, match="scenario must be 'couple' or 'family'"):
        read_work(work)
    manifest["scenario"] = "couple"
    path.write_text(json.dumps(manifest))
    draft = work / "segments" / "couple_s01" / "draft.json"
    data = json.loads(draft.read_text())
    data["rows"][1]["start_time"] = "soon"
    draft.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"draft\.json.*row 2.*start_time"):
        read_work(work)


def test_release_jsonl(tmp_path: Path, empty_db_url: str) -> None:
    source = tmp_path / "release.jsonl"
    rows = [
        {
            "row_index": 1,
            "start_time": 0,
            "end_time": 2.5,
            "primary_speaker": "Ana",
            "target": "Bo",
            "dialogue_cleaned": "Hello",
        }
    ]
    source.write_text(
        json.dumps({"sample_id": "couple_therapy/a/seg1", "scenario": "couple", "rows": rows}) + "\n"
    )
    sessions = open_store(empty_db_url)
    with sessions() as session:
        result = load_work(session, source)
        assert result.added == ("couple_therapy/a/seg1",)
        segment = session.scalars(select(Segment)).one()
        assert segment.group_name == "couple_therapy/a" and segment.participants == ["Ana", "Bo"]
        assert segment.rows[0].clip_path is None and segment.rows[0].duration_sec == 2.5
        assert segment.rows[0].data == {**rows[0], "target": ["Bo"]}
    sessions.kw["bind"].dispose()
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"sample_id": "x", "rows": []}\n')
    with pytest.raises(DataError, match=r"broken\.jsonl:1 sample x rows: 'rows' is empty"):
        read_work(broken)
