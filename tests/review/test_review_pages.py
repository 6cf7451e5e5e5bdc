"""Independent reviews over HTTP: per-annotator queues, blind and open review, adjudication, the agreement
page, the held-back export, and the single-review flow's "save, mark reviewed and go on"."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from review_helpers import FAST_HASHER, PASSWORD, Client, form_fields, login, post_form, replace, settings_for
from review_workdir import write_workdir
from sqlalchemy import select

from rescue_bench.review.app import create_app
from rescue_bench.review.auth import create_user
from rescue_bench.review.db import Adjudication, Review, RowRecord, Segment, open_store, user_by_name
from rescue_bench.review.export import export_jsonl
from rescue_bench.review.loader import load_work
from rescue_bench.review.reviews import assign
from rescue_bench.review.settings import ProjectSettings, save_project_settings

COUPLE_ROWS = 4  # couple_s01 (the first segment in reading order) has rows 1-4


def _setup(db_url: str, settings: ProjectSettings) -> None:
    sessions = open_store(db_url)
    with sessions() as session:
        save_project_settings(session, settings)
        create_user(session, "cat", "annotator", PASSWORD, FAST_HASHER)
        create_user(session, "judy", "adjudicator", PASSWORD, FAST_HASHER)
    sessions.kw["bind"].dispose()


@pytest.fixture
def signed_in(app: FastAPI) -> Iterator[Callable[[str], Client]]:
    """Sign a user in on a new client (closed at the end)."""
    opened: list[Client] = []

    def make(name: str) -> Client:
        client = Client(app, follow_redirects=False)
        opened.append(client)
        client.csrf = login(client, name)
        return client

    yield make
    for client in opened:
        client.close()


@pytest.fixture
def triple(db_url: str, signed_in: Callable[[str], Client]) -> dict[str, Client]:
    _setup(db_url, ProjectSettings(3))
    return {name: signed_in(name) for name in ("ann", "ben", "cat", "judy")}


def _review_segment(client: Client, tone: str | None = None) -> list[str]:
    """Walk the user's queue through the first segment with "save and go on"; ``tone`` replaces the tone of
    voice of its row 2. Returns the row pages' URLs in the order the queue gave them."""
    seen = []
    location = client.get("/next").headers["location"]
    for position in range(1, COUPLE_ROWS + 1):
        seen.append(location)
        page = client.get(location).text
        assert 'accesskey="n"' in page
        fields = form_fields(page)
        if tone is not None and position == 2:
            fields = replace(fields, "f-tone_of_voice", tone)
        response = post_form(client, location, fields, "save_review_next")
        assert response.headers["location"] == "/next", response.text
        location = client.get("/next").headers["location"]
    return seen


def test_three_blind_reviews_adjudication_agreement_and_export(
    triple: dict[str, Client], app: FastAPI, tmp_path: Path
) -> None:
    ann, ben, cat, judy = triple["ann"], triple["ben"], triple["cat"], triple["judy"]
    rows = _review_segment(ann, tone="ann hears it sharp")
    assert rows == [f"/rows/{i}" for i in range(1, COUPLE_ROWS + 1)]
    assert "your review saved" in ann.get(rows[1]).text
    # blind: ben sees the draft, not ann's value, and the row shows one review of three
    ben_page = ben.get(rows[1]).text
    assert "ann hears it sharp" not in ben_page and "1 of 3 reviews" in ben_page
    assert _review_segment(ben) == rows and _review_segment(cat) == rows
    # every row of the segment has three reviews: ann's queue moves on to the next segment
    assert ann.get("/next").headers["location"] == f"/rows/{COUPLE_ROWS + 1}"

    assert judy.get("/adjudicate/1").status_code == 200
    assert ann.get("/adjudicate").status_code == 403  # annotators do not adjudicate
    listing = judy.get("/adjudicate").text
    assert 'href="/adjudicate/2"' in listing and 'href="/adjudicate/1"' not in listing
    compare = judy.get("/adjudicate/2").text
    assert "ann hears it sharp" in compare and "tone_of_voice" in compare and '<video id="clip"' in compare
    with app.state.review.sessions() as session:
        ben_review = session.scalars(
            select(Review).where(Review.row_id == 2, Review.user.has(name="ben"))
        ).one()
    picked = judy.post("/adjudicate/2/pick", data={"csrf_token": judy.csrf, "review_id": str(ben_review.id)})
    assert picked.status_code == 303 and 'id="none-disputed"' in judy.get("/adjudicate").text

    agreement = ann.get("/agreement").text
    assert 'id="dim-intensity"' in agreement and "ann/ben" in agreement

    with app.state.review.sessions() as session:
        decision = session.scalars(select(Adjudication)).one()
        assert (decision.user.name, decision.picked_review_id) == ("judy", ben_review.id)
        result = export_jsonl(session, tmp_path / "out.jsonl", tmp_path / "prov.jsonl")
        draft_tone = session.get(RowRecord, 2).draft["tone_of_voice"]  # type: ignore[union-attr]
        family = session.scalars(select(Segment).where(Segment.segment_id == "family_s01")).one()
    assert (result.samples, result.rows) == (1, COUPLE_ROWS)
    assert [h.sample_id for h in result.held_back] == [family.sample_id]
    assert "0 of 3 review(s)" in result.held_back[0].reason
    exported = json.loads((tmp_path / "out.jsonl").read_text())
    assert exported["rows"][1]["tone_of_voice"] == draft_tone  # ben's value, as judy decided
    provenance = [json.loads(line) for line in (tmp_path / "prov.jsonl").read_text().splitlines()]
    assert provenance[1]["resolution"] == "adjudicated" and provenance[1]["adjudicator"]["user"] == "judy"
    assert provenance[0]["resolution"] == "agreed"


def test_open_review_shows_the_others_values(db_url: str, signed_in: Callable[[str], Client]) -> None:
    _setup(db_url, ProjectSettings(2, blind=False))
    ann, ben = signed_in("ann"), signed_in("ben")
    url = "/rows/2"
    post_form(
        ann, url, replace(form_fields(ann.get(url).text), "f-tone_of_voice", "ann's open tone"), "save_review"
    )
    page = ben.get(url).text
    assert "ann&#39;s open tone" in page and "ann's review (version 1)" in page
    # a page opened before ann's save (version 0 of her review) cannot overwrite it
    old_page = replace(form_fields(ben.get(url).text), "csrf_token", ann.csrf)
    stale = post_form(ann, url, old_page, "save_review")
    assert stale.headers["location"] == f"{url}?notice=stale"


def test_assigned_segments_are_in_their_assignees_queues_only(
    db_url: str, signed_in: Callable[[str], Client]
) -> None:
    _setup(db_url, ProjectSettings(2))
    sessions = open_store(db_url)
    with sessions() as session:
        couple = session.scalars(select(Segment).where(Segment.segment_id == "couple_s01")).one()
        ben_user = user_by_name(session, "ben")
        assert ben_user is not None and assign(session, [couple], ben_user) == 1
    sessions.kw["bind"].dispose()
    ann, ben = signed_in("ann"), signed_in("ben")
    assert ben.get("/next").headers["location"] == "/rows/1"
    assert ann.get("/next").headers["location"] == f"/rows/{COUPLE_ROWS + 1}"  # the family segment


def test_single_review_save_mark_and_go_on(ann: Client, ben: Client, app: FastAPI, tmp_path: Path) -> None:
    page = ann.get("/rows/1").text
    assert 'value="save_review_next" accesskey="n"' in page and 'accesskey="m"' in page
    assert post_form(ann, "/rows/1", form_fields(page), "save_review_next").headers["location"] == "/next"
    assert ann.get("/next").headers["location"] == "/rows/2"
    assert 'id="continue" href="/rows/1"' in ann.get("/").text
    # a plain save by someone else puts the row back to review: the release never carries unapproved values
    edited = replace(form_fields(ben.get("/rows/1").text), "f-tone_of_voice", "ben's unreviewed tone")
    post_form(ben, "/rows/1", edited, "save")
    with app.state.review.sessions() as session:
        row = session.get(RowRecord, 1)
        assert row is not None and not row.reviewed
        assert not any(r.active for r in session.scalars(select(Review).where(Review.row_id == 1)))
    assert ann.get("/next").headers["location"] == "/rows/1"


def test_row_list_flags_rule_violations(ann: Client) -> None:
    segment = ann.get("/segments/1").text
    assert "<th>Rule violations</th>" in segment and 'class="tag bad"' in segment


def test_several_work_directories_in_one_app(db_url: str, workdir: Path, tmp_path: Path) -> None:
    """A second episode's work directory, with clips at the same relative paths: each segment's clips come
    from the directory it was loaded from."""
    second = write_workdir(tmp_path / "ep02", clip=b"episode two" * 400)
    for manifest in second.glob("segments/*/manifest.json"):
        data = json.loads(manifest.read_text())
        data["sample_id"] = data["sample_id"].replace("/ep01/", "/ep02/")
        data["segment_id"] += "_ep02"
        manifest.write_text(json.dumps(data))
    sessions = open_store(db_url)
    with sessions() as session:
        assert len(load_work(session, second).added) == 2
        row = session.scalars(
            select(RowRecord)
            .join(Segment)
            .where(Segment.segment_id == "couple_s01_ep02", RowRecord.row_index == 2)
        ).one()
    sessions.kw["bind"].dispose()
    app = create_app(settings_for(db_url, workdir, extra_media_roots=(second.resolve(),)))
    try:
        with Client(app, follow_redirects=False) as ann:
            login(ann, "ann")
            page = ann.get(f"/rows/{row.id}").text
            assert 'src="/media/clips/couple_s01/row_0002.mp4?root=1"' in page and "missing" not in page
            assert ann.get("/media/clips/couple_s01/row_0002.mp4?root=1").content.startswith(b"episode two")
            assert ann.get("/media/clips/couple_s01/row_0002.mp4").content == b"\x00" * 4096  # episode one
            assert 'src="/media/clips/couple_s01/row_0002.mp4"' in ann.get("/rows/2").text
            assert ann.get("/media/clips/couple_s01/row_0002.mp4?root=2").status_code == 404
    finally:
        app.state.review.sessions.kw["bind"].dispose()


def test_dashboard_counts_each_annotators_reviews(triple: dict[str, Client]) -> None:
    _review_segment(triple["ann"])
    _review_segment(triple["ben"])
    dashboard = triple["cat"].get("/").text
    assert "<tr><td>ann</td><td>annotator</td><td>4</td>" in dashboard
    assert "<tr><td>cat</td><td>annotator</td><td>0</td>" in dashboard
    assert 'id="reviewed-rows">0<' in dashboard  # two of three reviews: nothing resolved yet
