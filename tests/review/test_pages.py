"""The annotator's pages over HTTP: editing with versions, optimistic locking, review status, discards,
comments, the dashboard's figures, and stored text shown inert."""

from __future__ import annotations

import html
import json
from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient
from review_helpers import FAST_HASHER, PASSWORD, Client, form_fields, login, post_form, replace, settings_for
from sqlalchemy import select

from rescue_bench.review.app import create_app
from rescue_bench.review.auth import create_user
from rescue_bench.review.db import Conflict, RowRecord, RowVersion, Segment
from rescue_bench.review.loader import load_work

MARA_ROW = 2  # couple_s01, row 2: Mara, with an emotion, cues, a viewpoint and an unknown key
THERAPIST_ROW = 1  # couple_s01, row 1: therapist, with a strategy


def _row(app: FastAPI, pk: int) -> RowRecord:
    with app.state.review.sessions() as session:
        row: RowRecord | None = session.get(RowRecord, pk)
        assert row is not None
        return row


def _versions(app: FastAPI, pk: int) -> list[RowVersion]:
    with app.state.review.sessions() as session:
        return list(
            session.scalars(select(RowVersion).where(RowVersion.row_id == pk).order_by(RowVersion.version))
        )


def test_pages_show_the_work(ann: Client) -> None:
    dashboard = ann.get("/").text
    assert 'id="total-segments">2<' in dashboard and 'id="remaining-rows">7<' in dashboard
    assert 'id="prepared-files">2<' in dashboard
    picker = ann.get("/segments", params={"group": "demo_family/ep01"}).text
    assert "family_s01" in picker and "couple_s01" not in picker
    assert ann.get("/segments", params={"segment": 1}).headers["location"] == "/segments/1"
    segment = ann.get("/segments/1").text
    for text in (
        "Mara",
        "Therapist",
        "Couple",
        "3.5 s",
        "to review",
        "draft",
        "He never listens",
        "Draft status: <strong>violations</strong>",
        "no relation pattern changes in the segment",
    ):
        assert text in segment
    row = ann.get(f"/rows/{MARA_ROW}").text
    assert '<video id="clip"' in row and 'src="/media/clips/couple_s01/row_0002.mp4"' in row
    assert "He never listens when I bring up the garden plans." in row
    assert "frustrated and unheard" in row and "Tom does not care about her plans" in row
    assert "tone_of_voice is vague" in ann.get("/rows/3").text  # the draft's rule violations, per row


def test_row_editor_offers_the_scenario_labels(ann: Client) -> None:
    couple = ann.get(f"/rows/{THERAPIST_ROW}").text
    family = ann.get("/rows/7").text  # family_s01 row 3, a therapist row
    assert 'value="detach"' in couple and 'value="boundary"' not in couple
    assert 'value="boundary"' in family and 'value="detach"' not in family
    assert 'value="constructive_alignment"' in couple and 'value="cross_generational_coalition"' in family
    assert 'value="accusation"' in couple  # utterance types


def test_saving_without_changes_changes_nothing(app: FastAPI, ann: Client) -> None:
    before = _row(app, MARA_ROW).data
    response = post_form(ann, f"/rows/{MARA_ROW}", form_fields(ann.get(f"/rows/{MARA_ROW}").text))
    assert response.status_code == 303 and response.headers["location"].endswith("notice=unchanged")
    assert _row(app, MARA_ROW).data == before and _row(app, MARA_ROW).version == 1
    assert len(_versions(app, MARA_ROW)) == 1


def test_edit_emotion_and_strategy_makes_versions(app: FastAPI, ann: Client) -> None:
    fields = form_fields(ann.get(f"/rows/{MARA_ROW}").text)
    fields = replace(fields, "internal_emotion-0-emotion_description", "hurt")
    fields = replace(fields, "internal_emotion-0-intensity", "9")
    assert post_form(ann, f"/rows/{MARA_ROW}", fields).headers["location"].endswith("notice=saved")
    fields = form_fields(ann.get(f"/rows/{THERAPIST_ROW}").text)
    fields = replace(fields, "support_strategy-0-strategy_type", "reframe")
    assert post_form(ann, f"/rows/{THERAPIST_ROW}", fields).status_code == 303

    row = _row(app, MARA_ROW)
    assert row.version == 2 and row.edited
    assert row.data["internal_emotion"] == [{"person": "Mara", "emotion_description": "hurt", "intensity": 9}]
    assert row.data["annotator_note"] == "kept through every save"  # keys the editor does not show survive
    assert row.data["self_directed_behavior"] == row.draft["self_directed_behavior"]  # untouched list kept
    assert _row(app, THERAPIST_ROW).data["support_strategy"][0]["strategy_type"] == "reframe"
    first, second = _versions(app, MARA_ROW)
    assert first.action == "load" and second.action == "edit" and second.user_id is not None
    assert second.before is not None and second.before["internal_emotion"][0]["intensity"] == 7
    assert second.after["internal_emotion"][0]["intensity"] == 9
    history = ann.get(f"/rows/{MARA_ROW}/history").text
    assert "Version 2 · edit · ann" in history and "internal_emotion" in history
    assert "edited" in ann.get("/segments/1").text


def test_entries_are_added_and_removed(app: FastAPI, ann: Client) -> None:
    url = f"/rows/{MARA_ROW}"
    page = post_form(ann, url, form_fields(ann.get(url).text), action="add:internal_emotion")
    assert (
        page.status_code == 200 and "internal_emotion-1-person" in page.text
    )  # a blank entry, not yet saved
    assert _row(app, MARA_ROW).version == 1
    fields = form_fields(page.text)
    fields = replace(fields, "internal_emotion-1-person", "Tom")
    fields = replace(fields, "internal_emotion-1-emotion_description", "embarrassed")
    fields = replace(fields, "internal_emotion-1-intensity", "4")
    post_form(ann, url, fields)
    emotions = _row(app, MARA_ROW).data["internal_emotion"]
    assert [e["person"] for e in emotions] == ["Mara", "Tom"] and emotions[1]["intensity"] == 4

    page = post_form(ann, url, form_fields(ann.get(url).text), action="remove:body_posture:0")
    assert "body_posture-0-person" not in page.text
    post_form(ann, url, form_fields(page.text))
    assert _row(app, MARA_ROW).data["body_posture"] == []


def test_invalid_input_is_shown_and_not_saved(app: FastAPI, ann: Client) -> None:
    url = f"/rows/{MARA_ROW}"
    fields = replace(form_fields(ann.get(url).text), "internal_emotion-0-intensity", "eleven")
    response = post_form(ann, url, fields)
    assert response.status_code == 400 and "intensity must be a whole number from 0 to 10" in response.text
    assert 'value="eleven"' in response.text  # what was typed is still there
    forged = replace(form_fields(ann.get(url).text), "f-utterance_type", "gaslighting")
    assert post_form(ann, url, forged).status_code == 400
    evidence = replace(form_fields(ann.get(url).text), "rel-evidence", "2, three")
    assert "evidence rows" in post_form(ann, url, evidence).text.lower()
    assert _row(app, MARA_ROW).version == 1


def test_concurrent_edit_is_a_conflict_and_nothing_is_lost(app: FastAPI, ann: Client, ben: Client) -> None:
    url = f"/rows/{MARA_ROW}"
    ann_form = replace(form_fields(ann.get(url).text), "f-tone_of_voice", "ann's tone")
    ben_form = replace(form_fields(ben.get(url).text), "f-tone_of_voice", "ben's tone")
    assert post_form(ben, url, ben_form).headers["location"].endswith("notice=saved")
    refused = post_form(ann, url, ann_form)
    assert refused.status_code == 303 and refused.headers["location"].startswith("/conflicts/")
    assert _row(app, MARA_ROW).data["tone_of_voice"] == "ben's tone"  # the first save stands
    with app.state.review.sessions() as session:
        kept = session.scalars(select(Conflict)).one()
        assert (
            kept.data["tone_of_voice"] == "ann's tone"
            and kept.base_version == 1
            and kept.current_version == 2
        )

    page = ann.get(refused.headers["location"])
    assert page.status_code == 200
    shown = html.unescape(page.text)
    assert '"ben\'s tone"' in shown and '"ann\'s tone"' in shown  # both versions, side by side
    assert "saved by ben" in shown
    assert ben.get(refused.headers["location"]).status_code == 404  # a conflict is its author's only
    assert "Compare and resolve it" in ann.get(url).text

    saved = post_form(ann, url, form_fields(page.text))  # save "mine" knowingly, from the conflict page
    assert saved.headers["location"].endswith("notice=saved")
    row = _row(app, MARA_ROW)
    assert row.data["tone_of_voice"] == "ann's tone" and row.version == 3
    assert [v.after["tone_of_voice"] for v in _versions(app, MARA_ROW)[1:]] == ["ben's tone", "ann's tone"]
    assert "Compare and resolve it" not in ann.get(url).text


def test_review_status_is_locked_to_the_version_seen(app: FastAPI, ann: Client, ben: Client) -> None:
    url = f"/rows/{MARA_ROW}"
    stale = ann.post(f"{url}/review", data={"csrf_token": ann.csrf, "base_version": "1", "reviewed": "1"})
    assert stale.headers["location"].endswith("notice=reviewed")
    # ben's plain save changes values ann did not review: the row is to review again
    post_form(ben, url, replace(form_fields(ben.get(url).text), "f-tone_of_voice", "flat"))
    assert not _row(app, MARA_ROW).reviewed
    again = ann.post(f"{url}/review", data={"csrf_token": ann.csrf, "base_version": "1", "reviewed": "1"})
    assert again.headers["location"].endswith("notice=stale")  # marking is tied to the version seen
    assert not _row(app, MARA_ROW).reviewed
    done = post_form(ann, url, form_fields(ann.get(url).text), action="save_review")
    assert done.headers["location"].endswith("notice=reviewed")
    assert 'id="reviewed-rows">1<' in ann.get("/").text


def test_discard_with_reason_and_undo(app: FastAPI, ann: Client) -> None:
    bad = ann.post("/segments/2/discard", data={"csrf_token": ann.csrf, "reason": "boredom"})
    assert bad.status_code == 303
    with app.state.review.sessions() as session:
        segment = session.get(Segment, 2)
        assert segment is not None and not segment.discarded
    ann.post(
        "/segments/2/discard",
        data={
            "csrf_token": ann.csrf,
            "reason": "video_evidence",
            "note": "camera never shows Lucia",
        },
    )
    page = ann.get("/segments/2").text
    assert "Missing or ambiguous video evidence" in page and "camera never shows Lucia" in page
    assert 'id="remaining-rows">4<' in ann.get("/").text  # the family rows no longer count
    ann.post("/segments/2/restore", data={"csrf_token": ann.csrf})
    with app.state.review.sessions() as session:
        segment = session.get(Segment, 2)
        assert segment is not None and not segment.discarded and segment.discard_reason is None
    history = ann.get("/segments/2").text
    assert "Discard history" in history and "restore" in history


def test_comments_count_on_the_dashboard(ann: Client) -> None:
    ann.post("/segments/1/comments", data={"csrf_token": ann.csrf, "text": "speaker of row 3 unsure"})
    ann.post(
        "/segments/1/comments", data={"csrf_token": ann.csrf, "text": "on a row", "row_id": str(MARA_ROW)}
    )
    assert 'id="commented-segments">1<' in ann.get("/").text
    assert "on a row" in ann.get(f"/rows/{MARA_ROW}").text
    assert "speaker of row 3 unsure" in ann.get("/segments/1").text


def test_progress_per_annotator(ann: Client, ben: Client) -> None:
    url = f"/rows/{MARA_ROW}"
    post_form(ben, url, form_fields(ben.get(url).text), action="save_review")
    post_form(ann, "/rows/3", replace(form_fields(ann.get("/rows/3").text), "f-tone_of_voice", "soft"))
    table = ann.get("/").text.split("Progress per annotator")[1].split("</table>")[0]
    assert "<td>ben</td><td>annotator</td><td>1</td><td>0</td>" in table
    assert "<td>ann</td><td>annotator</td><td>0</td><td>1</td>" in table


XSS = '<script>alert("x")</script>'
NAME_XSS = '"><img src=x onerror=alert(1)>'


def test_stored_script_is_shown_inert(tmp_path: Path, empty_db_url: str) -> None:
    release = tmp_path / "evil.jsonl"
    row = {
        "row_index": 1,
        "start_time": 0,
        "end_time": 2,
        "primary_speaker": NAME_XSS,
        "target": ["Therapist"],
        "dialogue_cleaned": XSS,
        "internal_emotion": [{"person": NAME_XSS, "emotion_description": XSS, "intensity": 3}],
    }
    release.write_text(
        json.dumps({"sample_id": f"x/{XSS}", "scenario": "couple", "participants": [NAME_XSS], "rows": [row]})
        + "\n",
        encoding="utf-8",
    )
    app = create_app(settings_for(empty_db_url, tmp_path))
    with app.state.review.sessions() as session:
        create_user(session, "ann", "annotator", PASSWORD, FAST_HASHER)
        load_work(session, release)
    with TestClient(app, follow_redirects=False) as client:
        csrf = login(client, "ann")
        client.post("/segments/1/comments", data={"csrf_token": csrf, "text": XSS})
        for path in ("/", "/segments", "/segments/1", "/rows/1", "/rows/1/history"):
            page = client.get(path).text
            assert "<script" not in page.lower(), path
            assert "<img src=x" not in page, path
        assert html.escape(XSS, quote=False) in client.get("/rows/1").text.replace("&#34;", '"')
    app.state.review.sessions.kw["bind"].dispose()


def test_unknown_pages_are_404(ann: Client) -> None:
    for path in (
        "/rows/999",
        "/segments/999",
        "/conflicts/999",
        "/rows/999/history",
        "/ratings/999",
        "/rows/abc",
        "/segments?segment=abc",
        "/nowhere",
    ):
        assert ann.get(path).status_code == 404, path
