"""The HTML report on one screen's width: a contents list, collapsible sections, the leaderboard scrolling in
its own box, and the configuration once (what differs between runs, then what they share)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.report.conftest import LONG_NAMES

from rescue_bench.report.build import Report, build_report, write_report
from rescue_bench.report.html import COLLAPSED

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def three(study_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    runs = [study_dir / name.replace("/", "-") for name in LONG_NAMES]
    report = build_report(runs, with_paper=True)
    out = tmp_path_factory.mktemp("html")
    write_report(report, out)
    return report, out / "report.html"


@pytest.mark.slow
def test_the_configuration_is_shown_once(three: tuple[Report, Path]) -> None:
    report, _ = three
    differ, shared = report.table("config"), report.table("config_shared")
    assert differ.columns == ("Setting", *LONG_NAMES)
    assert {row[0] for row in differ.rows} >= {"model.model", "model.provider"}
    assert all(len(set(row[1:])) > 1 for row in differ.rows)  # only what differs
    keys = [row[0] for row in differ.rows] + [row[0] for row in shared.rows]
    assert len(keys) == len(set(keys))
    # the spec stands for its copies: no config.* or options.* beside spec.*, nothing about how the run went
    assert any(k.startswith("spec.") for k in keys)
    assert not any(
        k.startswith(("config.", "options.", "counts.", "timings.")) or k == "status" for k in keys
    )
    assert len(keys) < 120


def _browse(page_path: Path, width: int) -> dict[str, Any]:
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is not installed (apt-get install -y --no-install-recommends chromium)")
    playwright = pytest.importorskip("playwright.sync_api", reason="the web-test extra is not installed")
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            found: dict[str, Any] = page.evaluate(
                """() => {
                  const box = document.querySelector('#leaderboard .scroll');
                  return {
                    pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
                    height: document.documentElement.scrollHeight,
                    box: [box.scrollWidth, box.clientWidth, box.getBoundingClientRect().right],
                    links: [...document.querySelectorAll('nav.contents a')].map(a => a.getAttribute('href')),
                    open: [...document.querySelectorAll('details.section')].map(d => [d.id, d.open]),
                  };
                }"""
            )
            page.click("#per_label > summary")
            found["opened"] = page.evaluate("document.querySelector('#per_label').open")
        finally:
            browser.close()
    return found


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 800])
def test_the_report_fits_the_screen_and_the_leaderboard_scrolls_in_its_box(
    three: tuple[Report, Path], width: int
) -> None:
    report, page = three
    found = _browse(page, width)
    assert found["pageWidth"] <= found["viewport"], "the page scrolls sideways"
    scroll_width, client_width, right = found["box"]
    assert scroll_width > client_width and right <= width  # the wide table scrolls inside its own box
    assert found["links"] == [f"#{t.key}" for t in report.tables] + ["#figures"]
    states = dict(found["open"])
    assert states["leaderboard"] and states["per_scenario"] and states["config"]
    assert not any(states[key] for key in COLLAPSED) and not states["figures"]
    assert found["opened"], "a closed section opens with a click"
    assert found["height"] < 8000, found["height"]  # three runs were about 42,000 px as one flat page
