"""Three annotators in a real browser (Debian's chromium, Playwright), on SQLite and PostgreSQL: blind
independent reviews of one segment through their queues, an adjudicator resolving the disagreements beside
the clip, the agreement page, and an export that holds back the unreviewed segment.

Set ``RESCUE_BENCH_REVIEW_SCREENSHOTS=DIR`` to also save the screenshots used in ``docs/review.md``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from review_helpers import FAST_HASHER, PASSWORD, settings_for
from test_browser import CHROMIUM, CHROMIUM_ARGS, PLAY, _make_clip, _shot
from tests.fakes.live_server import served

from rescue_bench.data.load import read_source
from rescue_bench.review.app import create_app
from rescue_bench.review.auth import create_user
from rescue_bench.review.db import open_store
from rescue_bench.review.settings import ProjectSettings, save_project_settings

pytestmark = [pytest.mark.browser, pytest.mark.ffmpeg]

ROWS = 4  # couple_s01: rows 1-4 (ids 1-4); family_s01 follows (ids 5-7)


@pytest.fixture
def triple_server(db_url: str, workdir: Path, tmp_path: Path) -> Iterator[str]:
    """The app for a triple-review project (annotators ann, ben, cat; adjudicator judy), with real clips."""
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg not found (apt-get install -y --no-install-recommends ffmpeg)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found (apt-get install -y --no-install-recommends chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    clip = tmp_path / "clip.mp4"
    _make_clip(clip)
    for target in (workdir / "clips").rglob("*.mp4"):
        shutil.copyfile(clip, target)
    sessions = open_store(db_url)
    with sessions() as session:
        save_project_settings(session, ProjectSettings(3))
        create_user(session, "cat", "annotator", PASSWORD, FAST_HASHER)
        create_user(session, "judy", "adjudicator", PASSWORD, FAST_HASHER)
    sessions.kw["bind"].dispose()
    app = create_app(settings_for(db_url, workdir))
    with served(app) as url:
        yield url
    app.state.review.sessions.kw["bind"].dispose()


def _log_in(browser: Any, base: str, name: str) -> Any:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.goto(f"{base}/login")
    page.fill("#name", name)
    page.fill("#password", PASSWORD)
    page.click("button:has-text('Log in')")
    expect(page.locator("#next-row")).to_be_visible()
    return page


def _review_through_queue(page: Any, base: str, changes: dict[int, tuple[str, str]], shot: str = "") -> None:
    """Take the first segment's rows from the queue; ``changes``: row -> (field, value) to type first."""
    from playwright.sync_api import expect

    page.click("#next-row")
    for row in range(1, ROWS + 1):
        expect(page).to_have_url(f"{base}/rows/{row}")
        expect(page.locator("#review-status")).to_contain_text("your review: not yet")
        if row in changes:
            field, value = changes[row]
            page.fill(f"[name='{field}']", value)
        if shot and row == 2:
            page.evaluate("window.scrollTo(0, 0)")
            _shot(page, shot)
        page.locator("button[value='save_review_next']").first.click()
    expect(page).to_have_url(f"{base}/rows/{ROWS + 1}")  # the queue moves on to the next segment


def test_three_annotators_adjudication_agreement_and_export(triple_server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    base = triple_server
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            ann = _log_in(browser, base, "ann")
            _review_through_queue(ann, base, {2: ("internal_emotion-0-intensity", "9")})
            ben = _log_in(browser, base, "ben")
            ben.goto(f"{base}/rows/2")  # blind: ben starts from the draft and sees nothing of ann's review
            expect(ben.locator("#review-status")).to_contain_text("1 of 3 reviews")
            expect(ben.locator("[name='internal_emotion-0-intensity']")).not_to_have_value("9")
            expect(ben.locator("details.other-review")).to_have_count(0)
            ben.goto(f"{base}/")
            _review_through_queue(ben, base, {}, shot="review-independent.png")
            cat = _log_in(browser, base, "cat")
            _review_through_queue(cat, base, {3: ("f-tone_of_voice", "icy")})

            judy = _adjudicate(browser, base)
            _agreement(judy, base)
            _export(browser, base, tmp_path)
        finally:
            browser.close()


def _adjudicate(browser: Any, base: str) -> Any:
    from playwright.sync_api import expect

    judy = _log_in(browser, base, "judy")
    judy.click("header nav >> text=Adjudicate")
    disputed = judy.locator("table.disputed tbody tr")
    expect(disputed).to_have_count(2)  # rows 2 and 3; rows 1 and 4 agree
    judy.locator("a[href='/adjudicate/2']").click()
    expect(judy.locator("table.side-by-side")).to_contain_text("internal_emotion")
    played = judy.evaluate(PLAY)
    assert played["error"] is None and played["time"] > 0.2
    _shot(judy, "review-adjudicate.png")
    judy.click('button:has-text("Take ben\'s values")')
    expect(disputed).to_have_count(1)
    judy.locator("a[href='/adjudicate/3']").click()
    expect(judy.locator("table.side-by-side")).to_contain_text("icy")
    judy.fill("[name='f-tone_of_voice']", "cool, then icy")
    judy.locator("button[value='adjudicate']").first.click()
    expect(judy.locator("#none-disputed")).to_be_visible()
    return judy


def _agreement(page: Any, base: str) -> None:
    from playwright.sync_api import expect

    page.click("header nav >> text=Agreement")
    intensity = page.locator("#dim-intensity")
    expect(intensity).to_contain_text("ordinal")
    expect(intensity.locator(".alpha")).not_to_have_text("-")
    expect(page.locator("#dim-utterance_type")).to_contain_text("nominal")
    _shot(page, "review-agreement.png")


def _export(browser: Any, base: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    ada = _log_in(browser, base, "ada")
    expect(ada.locator("#reviewed-rows")).to_have_text(str(ROWS))  # resolved rows
    ada.click("header nav >> text=Admin")
    expect(ada.locator("table.held-back")).to_contain_text("0 of 3 review(s)")
    with ada.expect_download() as download_info:
        ada.click("#export")
    path = tmp_path / "verified.jsonl"
    download_info.value.save_as(path)
    assert read_source(path).errors == ()
    (sample,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert sample["sample_id"] == "demo_couple/ep01/couple_s01"
    assert sample["rows"][1]["internal_emotion"][0]["intensity"] != 9  # ben's value, as judy decided
    assert sample["rows"][2]["tone_of_voice"] == "cool, then icy"
