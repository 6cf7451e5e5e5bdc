"""In a real browser (Debian's chromium, Playwright): the viewer's robustness table of a base run and a
``--perturb label-order`` run; clicking a flipped share opens the list of exactly the instances whose top-1
answer changed, counted here from the two predictions.jsonl files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.live_server import served
from tests.view.conftest import records
from tests.view.test_browser import CHROMIUM, CHROMIUM_ARGS
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.view.app import create_app

pytestmark = pytest.mark.browser


def _run(out: Path, *args: str) -> Path:
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--model",
            "baseline/random",
            "--data",
            "demo",
            "--tasks",
            "rpp,stp",
            "--out",
            str(out),
            "--no-bertscore",
            "--no-cache",
            "--quiet",
            *args,
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def pair(tmp_path: Path) -> dict[str, Path]:
    shuffled = _run(tmp_path / "shuffled", "--perturb", "label-order")
    return {"base": _run(tmp_path / "base"), "shuffled": shuffled}


@pytest.fixture
def live(pair: dict[str, Path]) -> Iterator[str]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found (apt-get install -y --no-install-recommends chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")

    server_app = create_app([pair["base"], pair["shuffled"]])
    with served(server_app) as url:
        yield url


def _top(record: dict[str, Any]) -> str:
    value = record["prediction"]
    return "<invalid>" if not record["valid"] or not value else str(value[0])


def test_a_robustness_cell_opens_the_flipped_instances(live: str, pair: dict[str, Path]) -> None:
    from playwright.sync_api import expect, sync_playwright

    base = {str(r["instance_id"]): r for r in records(pair["base"]) if r["task"] == "stp"}
    other = {str(r["instance_id"]): r for r in records(pair["shuffled"]) if r["task"] == "stp"}
    expected = sorted(i for i in base if i in other and _top(base[i]) != _top(other[i]))
    assert expected, "a shuffled label list moves some of the random baseline's answers"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        try:
            page.goto(f"{live}/")
            page.click("#nav-robustness")
            row = page.locator("#robustness-table tr[data-task='stp'][data-run='1']")
            expect(row).to_have_count(1)
            row.locator("a.flipped").click()
            expect(page.locator("#flipped-count")).to_have_text(str(len(expected)))
            shown = page.locator("#flipped tbody a.open").all_inner_texts()
            assert shown == expected
            page.locator("#flipped tbody a.open").first.click()
            expect(page.locator("h1")).to_contain_text(expected[0])
        finally:
            browser.close()
    assert [e for e in errors if not e.startswith("Failed to load resource")] == []
