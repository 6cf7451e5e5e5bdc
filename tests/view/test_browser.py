"""End to end in a real browser: Debian's chromium driven by Playwright against the viewer served by uvicorn,
then the static bundle opened from disk.

Set ``RESCUE_BENCH_VIEW_SCREENSHOTS=DIR`` to also save the screenshots used in ``docs/viewer.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from tests.fakes.live_server import served
from tests.view.conftest import HOSTILE, records

from rescue_bench.data.load import load_samples
from rescue_bench.view.app import create_app
from rescue_bench.view.bundle import write_bundle

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-sync",
]

pytestmark = pytest.mark.browser


@pytest.fixture
def live(runs: dict[str, Path]) -> Iterator[str]:
    """The viewer of random (0), majority (1) and hostile (2) on a free loopback port."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found (apt-get install -y --no-install-recommends chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")

    app = create_app([runs["random"], runs["majority"], runs["hostile"]])
    with served(app) as url:
        yield url


def _shot(page: Any, name: str) -> None:
    target = os.environ.get("RESCUE_BENCH_VIEW_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(target) / name), full_page=False)


def _wrong_of(run: Path, task: str, label: str) -> list[str]:
    def top(r: dict[str, Any]) -> Any:
        return r["prediction"][0] if isinstance(r["prediction"], list) else r["prediction"]

    return [
        str(r["instance_id"])
        for r in records(run)
        if r["task"] == task and r["gold"] == label and not (r["valid"] and top(r) == label)
    ]


def test_viewer_in_the_browser(live: str, runs: dict[str, Path], tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        errors: list[str] = []
        # a CSP violation is a console error; every page names its icon, so no request may fail
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        failed: list[str] = []
        page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
        try:
            _filter_and_step(page, live, runs)
            _compare(page, live, runs)
            _matrix_cell(page, live)
            _hostile(page, live, runs, dialogs)
            _bundle(page, runs, tmp_path)
        finally:
            context.close()
            browser.close()
    assert dialogs == [] and failed == []
    assert [e for e in errors if not e.startswith("Failed to load resource")] == []


def _filter_and_step(page: Any, base: str, runs: dict[str, Path]) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/")
    expect(page.locator("h1")).to_have_text("Runs")
    _shot(page, "view-overview.png")
    page.locator("#runs tr", has_text="baseline/random").locator("a:has-text('RPP')").click()
    label = str(next(r["gold"] for r in records(runs["random"]) if r["task"] == "rpp"))
    expected = _wrong_of(runs["random"], "rpp", label)
    page.select_option("#f-gold", label)
    page.select_option("#f-correct", "no")
    page.click("#apply")
    expect(page.locator("#shown-count")).to_have_text(str(len(expected)))
    expect(page.locator("#instances tbody tr")).to_have_count(min(len(expected), 50))
    _shot(page, "view-instances.png")
    page.locator("#instances tbody tr a.open").first.click()
    expect(page.locator("#instance-id")).to_have_text(expected[0])
    sample_id, _, row = expected[0].split("::")
    sample = next(s for s in load_samples("demo") if s.sample_id == sample_id)
    expect(page.locator(".turn.target .said")).to_have_text(sample.row(int(row)).dialogue_cleaned)
    expect(page.locator("#verdict")).to_have_text("wrong")
    _dimmed_target(page)
    _shot(page, "view-instance.png")
    page.locator(".turn.target").scroll_into_view_if_needed()
    _shot(page, "view-transcript.png")
    page.click("#next")
    expect(page.locator("#instance-id")).to_have_text(expected[1])
    page.click("#prev")
    expect(page.locator("#instance-id")).to_have_text(expected[0])


def _compare(page: Any, base: str, runs: dict[str, Path]) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/compare?a=0&b=1")
    right_b = {str(r["instance_id"]): r["prediction"] == r["gold"] for r in records(runs["majority"])}
    expected = [
        str(r["instance_id"])
        for r in records(runs["random"])
        if r["task"] == "itp" and r["prediction"] == r["gold"] and not right_b[str(r["instance_id"])]
    ]
    row = page.locator("#discordant tr", has_text="ITP")
    expect(row.locator("a.a-only")).to_have_text(str(len(expected)))
    expect(page.locator("#compare")).to_contain_text("McNemar")
    _shot(page, "view-compare.png")
    row.locator("a.a-only").click()
    expect(page.locator("#shown-count")).to_have_text(str(len(expected)))
    cells = page.locator("#instances tbody tr td:nth-child(5)")
    expect(cells).to_have_count(min(len(expected), 50))
    assert set(cells.all_inner_texts()) == {"right"}
    # the other run's cell: its prediction (the gold's opposite, for ITP), then its verdict
    others = page.locator("#instances tbody tr td:nth-child(9)").all_inner_texts()
    preds = page.locator("#instances tbody tr td:nth-child(4)").all_inner_texts()
    assert {o.split()[-1] for o in others} == {"wrong"}
    for other, pred in zip(others, preds, strict=True):
        assert other.split()[0] in ("yes", "no") and other.split()[0] != pred


def _matrix_cell(page: Any, base: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/matrices?run=0")
    cell = page.locator("#rpp-confusion-couple td a").first
    count = cell.inner_text()
    _shot(page, "view-matrices.png")
    cell.click()
    expect(page.locator("#shown-count")).to_have_text(count)
    page.goto(f"{base}/matrices?run=0")
    heat = page.locator("#rpp-transitions-couple td a").first
    count = heat.inner_text()
    heat.click()
    expect(page.locator("#shown-count")).to_have_text(count)


def _hostile(page: Any, base: str, runs: dict[str, Path], dialogs: list[str]) -> None:
    from playwright.sync_api import expect

    instance = next(str(r["instance_id"]) for r in records(runs["hostile"]) if r["task"] == "er")
    page.goto(f"{base}/instances/{quote(instance, safe='')}?run=2")
    expect(page.locator("#reply")).to_contain_text(HOSTILE)
    expect(page.locator("#prediction")).to_contain_text("onerror=alert(2)")
    assert page.locator("img").count() == 0 and page.locator("main script").count() == 0
    page.goto(f"{base}/instances?run=2&task=er")
    expect(page.locator("#instances")).to_contain_text("<script>alert(1)</script>")
    assert page.locator("img").count() == 0
    page.wait_for_timeout(300)
    assert dialogs == []


def _bundle(page: Any, runs: dict[str, Path], tmp_path: Path) -> None:
    from playwright.sync_api import expect

    out = tmp_path / "site"
    write_bundle([runs["random"], runs["majority"], runs["hostile"]], out)
    page.goto((out / "index.html").as_uri())
    expect(page.locator("h1")).to_have_text("Runs")
    page.locator("#runs tr", has_text="baseline/random").locator("a:has-text('RPP')").click()
    label = str(next(r["gold"] for r in records(runs["random"]) if r["task"] == "rpp"))
    expected = _wrong_of(runs["random"], "rpp", label)
    expect(page.locator("#instances")).to_be_visible()  # drawn by bundle.js from data/*.js, under the CSP
    page.select_option("#f-gold", label)
    page.select_option("#f-correct", "no")
    page.click("#apply")
    expect(page.locator("#shown-count")).to_have_text(str(len(expected)))
    expect(page.locator("#instances tbody tr")).to_have_count(min(len(expected), 100))
    page.locator("#instances tbody tr a.open").first.click()
    expect(page.locator("#instance-id")).to_have_text(expected[0])
    expect(page.locator(".turn.target")).to_have_count(1)
    _dimmed_target(page)
    page.click("#next")
    expect(page.locator("#instance-id")).to_have_text(expected[1])
    # hostile text of a reply is shown as text in the bundle too
    instance = next(str(r["instance_id"]) for r in records(runs["hostile"]) if r["task"] == "er")
    page.goto((out / "instances.html").as_uri() + "#" + urlencode({"run": "2", "task": "er", "id": instance}))
    expect(page.locator("#reply")).to_contain_text(HOSTILE)
    assert page.locator("img").count() == 0


def _dimmed_target(page: Any) -> None:
    """The RPP target row, which the model did not see, is drawn dimmed like every row it did not see."""
    target = page.locator(".turn.target")
    expect_hidden = "hidden-row" in (target.get_attribute("class") or "")
    assert expect_hidden, "the RPP target row is not shown to the model"
    opacity = float(target.evaluate("e => getComputedStyle(e).opacity"))
    assert opacity < 0.6
    assert "not shown to the model" in target.inner_text()
