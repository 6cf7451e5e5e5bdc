"""The pages people share, at 1,280 px, for a ten-model study with names as long as real ones: the viewer's
leaderboard, its ten-run compare and a run's matrices, the study's `leaderboard.html` and the report's HTML.
No column is clipped: each table fits its box, or its box scrolls with the model column fixed (still in view
when scrolled to the end); no header overflows its cell (the compare matrix's headers overlapped); every page
says what was measured; no request fails (the favicon included). `RESCUE_BENCH_VIEW_SCREENSHOTS=docs/img`
saves the screenshots docs/viewer.md shows."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.live_server import served
from tests.study.helpers import TEN_NAMES, study_toml, ten_servers
from tests.view.test_browser import CHROMIUM, CHROMIUM_ARGS
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.rundir import expand_run_dirs
from rescue_bench.view.app import create_app
from rescue_bench.view.bundle import write_bundle

pytestmark = pytest.mark.browser
WIDTH = 1280

CHECK = """(table) => {
  const box = table.closest('.scroll') || table.parentElement;
  const outer = box.getBoundingClientRect();
  const heads = [...table.querySelectorAll('thead th')];
  const outside = heads.filter(h => { const r = h.getBoundingClientRect();
    return r.right > outer.right + 1 || r.left < outer.left - 1; }).length;
  const overflowing = heads.filter(h => h.scrollWidth > h.clientWidth + 1).map(h => h.textContent.trim());
  const scrolls = box.scrollWidth > box.clientWidth && getComputedStyle(box).overflowX === 'auto';
  const first = table.querySelector('tbody tr > :first-child');
  const sticky = first !== null && getComputedStyle(first).position === 'sticky';
  box.scrollLeft = box.scrollWidth;
  const shown = first === null ? true : first.getBoundingClientRect().left >= outer.left - 1;
  box.scrollLeft = 0;
  return {outside, overflowing, scrolls, sticky, shown, page: document.documentElement.scrollWidth};
}"""


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten models on two demo conversations, all tasks; one run partial, one degraded."""
    folder = tmp_path_factory.mktemp("ten-pages")
    with ten_servers() as models:
        path = folder / "study.toml"
        path.write_text(study_toml(folder / "study", models, tasks="itp,rpp,stp,ssp,er,vp"))
        result = CliRunner().invoke(app, ["sweep", str(path), "--quiet", "--no-bertscore"])
    assert result.exit_code == 4, result.output
    args = ["report", str(folder / "study"), "--partial", "--out", str(folder / "r")]
    report = CliRunner().invoke(app, args)
    assert report.exit_code == 0, report.output
    return folder / "study"


@pytest.fixture
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found (apt-get install -y --no-install-recommends chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


def _page(browser: Any) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return page, problems


def _shot(page: Any, name: str) -> None:
    target = os.environ.get("RESCUE_BENCH_VIEW_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(target) / name), full_page=False)


def _no_clipped_column(page: Any, selector: str) -> int:
    """Check every table ``selector`` finds; returns how many."""
    tables = page.locator(selector)
    assert tables.count() > 0, selector
    for index in range(tables.count()):
        found = tables.nth(index).evaluate(CHECK)
        where = f"{page.url} {selector} #{index}: {found}"
        assert found["page"] <= WIDTH, f"the page itself is wider than the window: {where}"
        assert found["overflowing"] == [], where
        assert found["outside"] == 0 or (found["scrolls"] and found["sticky"] and found["shown"]), where
    return int(tables.count())


def test_the_viewer_pages_at_1280(study: Path, browser: Any) -> None:
    from playwright.sync_api import expect

    with served(create_app(expand_run_dirs([study]))) as url:
        page, problems = _page(browser)
        page.goto(f"{url}/leaderboard")
        expect(page.locator("#measured")).to_contain_text("Measured: demo data (fictional): 2 samples")
        expect(page.locator("#measured")).to_contain_text("not the official release")
        for name in TEN_NAMES:
            expect(page.locator("#leaderboard")).to_contain_text(name)
        _no_clipped_column(page, "#leaderboard")
        _shot(page, "view-leaderboard-1280.png")
        page.goto(f"{url}/compare")
        assert _no_clipped_column(page, "table.many") >= 6  # a matrix per paper metric with values
        _shot(page, "view-compare-ten-1280.png")
        page.goto(f"{url}/matrices?run=0")
        _no_clipped_column(page, "table.matrix")
        page.goto(f"{url}/")
        expect(page.locator("#runs")).not_to_contain_text("degraded degraded")
        page.close()
    assert problems == []


def test_the_bundle_says_what_was_measured(study: Path, browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    site = tmp_path / "site"
    write_bundle(expand_run_dirs([study]), site)
    page, problems = _page(browser)
    page.goto((site / "leaderboard.html").as_uri())
    expect(page.locator("#measured")).to_contain_text("Measured: demo data (fictional)")
    _no_clipped_column(page, "#leaderboard")
    page.close()
    assert problems == []


def test_the_study_leaderboard_and_report_html_at_1280(study: Path, browser: Any) -> None:
    page, problems = _page(browser)
    page.goto((study / "leaderboard.html").as_uri())
    assert _no_clipped_column(page, "table") == 2  # the leaderboard and its rank groups
    _shot(page, "study-leaderboard-1280.png")
    page.goto((study.parent / "r" / "report.html").as_uri())
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert _no_clipped_column(page, "table") >= 6
    page.close()
    assert problems == []
