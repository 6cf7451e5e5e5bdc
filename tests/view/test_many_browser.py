"""Ten runs in chromium (issue #33.4, #33.5): names instead of indices, navigation on one line, the
leaderboard sorted by a click, the many-way compare page whose cells open the discordant instances; then the
same from the static bundle opened from ``file://`` and from a local static server (``http.server`` on
127.0.0.1)."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.live_server import served
from tests.view.conftest import _run
from tests.view.test_browser import CHROMIUM, CHROMIUM_ARGS, _shot

from rescue_bench.view.app import create_app
from rescue_bench.view.bundle import write_bundle

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def ten(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Ten finished runs on the demo data: the majority baseline and nine seeds of the random one."""
    root = tmp_path_factory.mktemp("ten")
    made = [_run(root / "majority", "--model", "baseline/majority")]
    return made + [
        _run(root / f"random-{s}", "--model", "baseline/random", "--seed", str(s)) for s in range(1, 10)
    ]


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
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("dialog", lambda d: (problems.append(d.message), d.dismiss()))
    return page, problems


def _names(page: Any) -> None:
    from playwright.sync_api import expect

    nav = page.locator("#nav")
    assert nav.bounding_box()["height"] < 40  # one line at ten runs
    assert "0:" not in nav.inner_text() and "Compare:" not in page.content()
    page.click("#nav-runs summary")
    menu = page.locator("#nav-runs .menu-body tr")
    expect(menu).to_have_count(10)
    expect(menu.first).to_contain_text("baseline/majority")
    expect(menu.nth(4)).to_contain_text("baseline/random (random-4)")
    page.click("#nav-runs summary")


def _sorting(page: Any) -> None:
    from playwright.sync_api import expect

    page.click("#nav-leaderboard")
    rows = page.locator("#leaderboard tbody tr")
    expect(rows).to_have_count(10)
    header = page.locator("#leaderboard thead th").nth(3)  # the first metric column
    column = "#leaderboard tbody tr td:nth-child(4)"

    def values() -> list[float]:
        return [
            float(v) for v in page.locator(column).evaluate_all("cells => cells.map(c => c.dataset.value)")
        ]

    header.locator("button").click()
    expect(header).to_have_attribute("aria-sort", "descending")
    assert values() == sorted(values(), reverse=True)
    header.locator("button").click()
    expect(header).to_have_attribute("aria-sort", "ascending")
    assert values() == sorted(values())
    groups = page.locator(f"{column} .group").all_inner_texts()
    # six demo conversations cannot separate ten runs (issue #39.1): no letters, and the page says why
    assert groups == [] and "at least 11 conversations" in page.inner_text("body")
    assert "majority" in page.locator("#leaderboard tbody tr").first.inner_text()  # worst first, ascending
    _shot(page, "view-leaderboard.png")


def _many_way(page: Any) -> None:
    from playwright.sync_api import expect

    page.click("#nav-compare")
    table = page.locator("table.many[data-task='itp']").first
    expect(table.locator("tbody tr")).to_have_count(10)
    expect(table.locator("td.pair")).to_have_count(90)
    _shot(page, "view-compare-many.png")
    link = table.locator("td.pair[data-a='3'][data-b='0'] a.a-only")
    count = link.inner_text().lstrip("+")
    link.click()
    expect(page.locator("#shown-count")).to_have_text(count)
    if int(count):
        right = page.locator("#instances tbody tr td:nth-child(5)").all_inner_texts()
        other = page.locator("#instances tbody tr td:last-child").all_inner_texts()
        assert set(right) == {"right"} and {o.split()[-1] for o in other} == {"wrong"}
        html = page.locator("#instances tbody tr td:last-child").first.inner_html()
        assert all(len(o.split()) == 2 for o in other), (page.url, html)  # the other's prediction and verdict


def test_ten_runs_in_the_app(ten: list[Path], browser: Any) -> None:
    page, problems = _page(browser)
    with served(create_app(ten)) as url:
        page.goto(url + "/")
        _names(page)
        _sorting(page)
        _many_way(page)
    assert [p for p in problems if not p.startswith("Failed to load resource")] == []


def _bundle_walk(page: Any, start: str) -> None:
    from playwright.sync_api import expect

    page.goto(start)
    _names(page)
    _sorting(page)
    _many_way(page)
    page.locator("#instances tbody tr a.open").first.click()
    expect(page.locator("#side-by-side tbody tr")).to_have_count(10)
    expect(page.locator("#conversation .turn.target")).to_have_count(1)
    expect(page.locator("#data-origin")).to_contain_text("same content as the run recorded")
    page.click("#back")
    expect(page.locator("#instances")).to_be_visible()


def test_ten_runs_in_the_bundle_from_disk_and_a_static_server(
    ten: list[Path], browser: Any, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    written = write_bundle(ten, site)
    assert written.files < 200
    page, problems = _page(browser)
    _bundle_walk(page, (site / "index.html").as_uri())
    failed: list[str] = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _bundle_walk(page, f"http://127.0.0.1:{server.server_address[1]}/index.html")
    finally:
        server.shutdown()
        server.server_close()
    assert failed == []
    assert [p for p in problems if not p.startswith("Failed to load resource")] == []


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass
