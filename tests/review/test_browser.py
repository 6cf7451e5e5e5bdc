"""End to end in a real browser: Debian's chromium driven by Playwright against the app served by uvicorn.

Set ``RESCUE_BENCH_REVIEW_SCREENSHOTS=DIR`` to also save the screenshots used in ``docs/review.md``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from review_helpers import PASSWORD, settings_for
from tests.fakes.live_server import served

from rescue_bench.data.load import load_samples, read_source
from rescue_bench.review.app import create_app

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [pytest.mark.browser, pytest.mark.ffmpeg]


def _make_clip(path: Path, seconds: int = 3) -> None:
    """A real H.264/AAC clip: colour bars with a counter, and a sine tone."""
    subprocess.run(
        [
            "ffmpeg",
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            f"testsrc=duration={seconds}:size=320x240:rate=25",
            "-f",
            "lavfi",
            "-i",
            f"sine=frequency=440:duration={seconds}",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-shortest",
            "-movflags",
            "+faststart",
            str(path),
        ],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def live_server(workdir: Path, sqlite_template: Path, tmp_path: Path) -> Iterator[str]:
    """The app on a free loopback port, served by uvicorn in a thread, with real clips in the workdir."""
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg not found (apt-get install -y --no-install-recommends ffmpeg)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found (apt-get install -y --no-install-recommends chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")

    clip = tmp_path / "clip.mp4"
    _make_clip(clip)
    for target in (workdir / "clips").rglob("*.mp4"):
        shutil.copyfile(clip, target)
    shutil.copyfile(sqlite_template, tmp_path / "review.db")
    app = create_app(settings_for(f"sqlite:///{tmp_path / 'review.db'}", workdir))
    with served(app) as url:
        yield url
    app.state.review.sessions.kw["bind"].dispose()


def _shot(page: Any, name: str) -> None:
    target = os.environ.get("RESCUE_BENCH_REVIEW_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(target) / name), full_page=False)


PLAY = """async () => {
  const video = document.getElementById('clip');
  video.muted = true;
  await video.play();
  // Played means the clock moved: wait for it (up to 5 s; a busy machine can take a while to decode).
  for (let waited = 0; waited < 5000 && video.currentTime <= 0.2 && !video.error; waited += 100) {
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  return {time: video.currentTime, duration: video.duration, error: video.error && video.error.code};
}"""


def test_review_in_the_browser(live_server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
        page = context.new_page()
        media_statuses: list[int] = []
        page.on("response", lambda r: media_statuses.append(r.status) if "/media/" in r.url else None)
        try:
            _log_in(page, live_server)
            _open_segment(page)
            _play_and_edit(page, media_statuses)
            _discard_family_segment(page, live_server)
            _review_and_export(page, live_server, tmp_path)
            page.goto(f"{live_server}/")
            expect(page.locator("#reviewed-rows")).to_have_text("4")
            _shot(page, "review-dashboard.png")
        finally:
            context.close()
            browser.close()


def _log_in(page: Any, base: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/segments/1")
    expect(page).to_have_url(f"{base}/login?next=/segments/1")
    page.fill("#name", "ada")
    page.fill("#password", PASSWORD)
    page.click("button:has-text('Log in')")
    expect(page.locator("h1")).to_have_text("Segment couple_s01")
    page.goto(f"{base}/")
    expect(page.locator("#total-segments")).to_have_text("2")
    expect(page.locator("#remaining-rows")).to_have_text("7")


def _open_segment(page: Any) -> None:
    from playwright.sync_api import expect

    page.click("header nav >> text=Segments")
    page.select_option("#group", "demo_couple/ep01")
    page.click("button:has-text('Show')")
    page.select_option("#segment", label="couple_s01 (0/4 reviewed)")
    page.click("button:has-text('Open')")
    expect(page.locator("h1")).to_have_text("Segment couple_s01")
    page.locator("table.rows tr", has_text="He never listens").locator("a:has-text('Open')").click()
    expect(page.locator("h1")).to_contain_text("Row 2")


def _play_and_edit(page: Any, media_statuses: list[int]) -> None:
    from playwright.sync_api import expect

    played = page.evaluate(PLAY)
    assert played["error"] is None and played["time"] > 0.2
    assert abs(played["duration"] - 3.0) < 0.2
    assert media_statuses and set(media_statuses) <= {200, 206}
    expect(page.locator("#subtitle")).to_have_text("He never listens when I bring up the garden plans.")
    page.fill("[name='internal_emotion-0-emotion_description']", "hurt and tired")
    page.fill("[name='internal_emotion-0-intensity']", "8")
    page.evaluate("window.scrollTo(0, 0)")
    _shot(page, "review-row.png")
    page.locator("button[value='save']").first.click()
    expect(page.locator(".notice")).to_have_text("Saved.")
    page.reload()
    expect(page.locator("[name='internal_emotion-0-emotion_description']")).to_have_value("hurt and tired")
    expect(page.locator("[name='internal_emotion-0-intensity']")).to_have_value("8")

    page.click("text=Previous row")  # row 1: the therapist's strategy
    page.select_option("[name='support_strategy-0-strategy_type']", "reframe")
    page.locator("button[value='save']").first.click()
    expect(page.locator(".notice")).to_have_text("Saved.")
    page.reload()
    expect(page.locator("[name='support_strategy-0-strategy_type']")).to_have_value("reframe")


def _discard_family_segment(page: Any, base: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/segments/2")
    page.select_option("#reason", "relational_information")
    page.fill("#note", "only one person speaks")
    page.click("button:has-text('Discard segment')")
    expect(page.locator(".discarded-box")).to_contain_text("Insufficient relational information")
    expect(page.locator(".discarded-box")).to_contain_text("only one person speaks")


def _review_and_export(page: Any, base: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    for row_id in range(1, 5):
        page.goto(f"{base}/rows/{row_id}")
        page.locator("button[value='save_review']").first.click()
        expect(page.locator(".notice")).to_have_text("Saved and marked reviewed.")
    page.goto(f"{base}/admin")
    expect(page.locator("section.card").first).to_contain_text("1 verified segment(s) with 4 rows")
    with page.expect_download() as download_info:
        page.click("#export")
    path = tmp_path / "verified.jsonl"
    download_info.value.save_as(path)
    assert read_source(path).errors == ()
    (sample,) = load_samples(path)
    assert sample.sample_id == "demo_couple/ep01/couple_s01"
    emotion = sample.row(2).internal_emotion[0]
    assert (emotion.emotion_description, emotion.intensity_value) == ("hurt and tired", 8)
    assert sample.row(1).support_strategy[0].strategy_type == "reframe"
