"""Export: load, edit, review, discard, export; the file validates, loads in the benchmark, has the edits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from review_helpers import Client, form_fields, post_form, replace, review_all

from rescue_bench.data.load import load_samples, read_source
from rescue_bench.errors import DataError
from rescue_bench.review.db import open_store
from rescue_bench.review.export import export_jsonl
from rescue_bench.review.loader import load_work


def _review_segment(client: TestClient, segment_pk: int) -> None:
    page = client.get(f"/segments/{segment_pk}").text
    for row_id in sorted({int(part.split('"')[0]) for part in page.split('href="/rows/')[1:]}):
        url = f"/rows/{row_id}"
        response = post_form(client, url, form_fields(client.get(url).text), action="save_review")
        assert response.status_code == 303


def test_export_round_trip(app: FastAPI, ann: Client, ada: Client, db_url: str, tmp_path: Path) -> None:
    fields = form_fields(ann.get("/rows/2").text)
    fields = replace(fields, "internal_emotion-0-emotion_description", "ashamed")
    fields = replace(fields, "internal_emotion-0-intensity", "3")
    post_form(ann, "/rows/2", fields, action="save_review")
    fields = replace(form_fields(ann.get("/rows/4").text), "support_strategy-0-strategy_type", "evoke")
    post_form(ann, "/rows/4", fields)
    _review_segment(ann, 1)
    ann.post("/segments/2/discard", data={"csrf_token": ann.csrf, "reason": "incomplete_context"})

    out = tmp_path / "verified.jsonl"
    with app.state.review.sessions() as session:
        result = export_jsonl(session, out)
    assert (result.samples, result.rows, result.unverified, result.discarded) == (1, 4, 0, 1)
    report = read_source(out)
    assert report.errors == ()
    (sample,) = load_samples(out)
    assert sample.sample_id == "demo_couple/ep01/couple_s01" and sample.scenario == "couple"
    emotion = sample.row(2).internal_emotion[0]
    assert (emotion.emotion_description, emotion.intensity_value) == ("ashamed", 3)
    assert sample.row(4).support_strategy[0].strategy_type == "evoke"
    assert sample.row(2).to_release()["annotator_note"] == "kept through every save"

    download = ada.get("/admin/export")
    assert download.status_code == 200 and "attachment" in download.headers["content-disposition"]
    assert download.text == out.read_text(encoding="utf-8")

    again = tmp_path / "again.db"  # the export loads back into a new store unchanged
    sessions = open_store(f"sqlite:///{again}")
    with sessions() as session:
        load_work(session, out)
        review_all(session)
        export_jsonl(session, tmp_path / "again.jsonl")
    sessions.kw["bind"].dispose()
    reloaded = (tmp_path / "again.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in reloaded] == [
        json.loads(line) for line in out.read_text().splitlines()
    ]


def test_nothing_verified_is_an_error(app: FastAPI, tmp_path: Path) -> None:
    with (
        app.state.review.sessions() as session,
        pytest.raises(DataError, match="no segment has every row resolved"),
    ):
        export_jsonl(session, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_real_release_passes_through_unchanged(real_subset: Path, tmp_path: Path) -> None:
    sessions = open_store(f"sqlite:///{tmp_path / 'r.db'}")
    with sessions() as session:
        load_work(session, real_subset)
        review_all(session)
        result = export_jsonl(session, tmp_path / "out.jsonl")
    sessions.kw["bind"].dispose()
    source = {s.sample_id: s.to_release() for s in load_samples(real_subset)}
    exported = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert result.samples == len(source) == len(exported)
    for record in exported:
        original = source[record["sample_id"]]
        assert record["rows"] == original["rows"] and record["participants"] == original["participants"]
