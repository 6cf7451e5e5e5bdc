"""The viewer on runs made with `--repeats 3`, in a real browser (chromium driven by Playwright, as
test_browser.py): the list's repeat column and filter, every repeat's reply side by side on an instance's
page, previous/next within the filtered list, and the comparison of two repeated runs. Expected values come
from the runs' own predictions.jsonl and requests.jsonl."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.live_server import served
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, schema_answer
from tests.view.test_browser import CHROMIUM, CHROMIUM_ARGS
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.view.app import create_app
from rescue_bench.view.bundle import write_bundle

pytestmark = pytest.mark.browser
REPEATS = 3


def by_seed(request: ChatRequest) -> str:
    """The schema's answer, with every (seed + 2)-th yes/no flipped, so that the repeats (sent with seeds
    none, 1, 2) answer differently."""
    seed = int(request.body.get("seed") or 0)
    answer = json.loads(schema_answer(request))

    def flip(value: Any, place: list[int]) -> Any:
        if isinstance(value, dict):
            return {k: flip(v, place) for k, v in value.items()}
        if isinstance(value, list):
            return [flip(v, place) for v in value]
        if value in ("yes", "no"):
            place[0] += 1
            if place[0] % (seed + 2) == 0:
                return "no" if value == "yes" else "yes"
        return value

    return json.dumps(flip(answer, [0]))


def lines(run: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / name).read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("view-repeats")
    out = {}
    with FakeOpenAIServer(by_seed) as server:
        for name, seed in (("a", []), ("b", ["--seed", "7"])):
            args = ["run", "--data", "demo", "--model", "vllm/fake", "--base-url", server.base_url]
            args += ["--tasks", "itp", "--repeats", str(REPEATS), "--no-bertscore", "--no-cache", "--quiet"]
            result = CliRunner().invoke(
                app, [*args, *seed, "--out", str(root / name)], catch_exceptions=False
            )
            assert result.exit_code == 0, result.output
            out[name] = root / name
    return out


@pytest.fixture
def live(repeated: dict[str, Path]) -> Iterator[str]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found (apt-get install -y --no-install-recommends chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")

    web = create_app([repeated["a"], repeated["b"]])
    with served(web) as url:
        yield url


def test_repeats_in_the_browser(live: str, repeated: dict[str, Path], tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        try:
            _list_and_instance(page, live, repeated["a"])
            _compare(page, live, repeated)
            _bundle(page, repeated["a"], tmp_path)
        finally:
            browser.close()
    assert [e for e in errors if not e.startswith("Failed to load resource")] == []


def _list_and_instance(page: Any, base: str, run: Path) -> None:
    from playwright.sync_api import expect

    predictions = lines(run, "predictions.jsonl")
    replies = {
        (r["request_key"], r.get("repeat", 0)): r["reply"]["text"] for r in lines(run, "requests.jsonl")
    }
    page.goto(f"{base}/instances?run=0&task=itp&per=500")
    expect(page.locator("#instances thead th", has_text="Repeat")).to_have_count(1)
    expect(page.locator("#shown-count")).to_have_text(str(len(predictions)))
    wanted = [p for p in predictions if p.get("repeat", 0) == 2]
    page.select_option("#f-repeat", "2")
    page.click("#apply")
    expect(page.locator("#shown-count")).to_have_text(str(len(wanted)))
    cells = page.locator("#instances tbody td.repeat")
    expect(cells).to_have_count(min(len(wanted), 50))  # the form asks for the default page size
    assert set(cells.all_inner_texts()) == {"2"}

    page.locator("#instances tbody tr a.open").first.click()
    first = wanted[0]["instance_id"]
    expect(page.locator("#instance-id")).to_have_text(first)
    expect(page.locator("#shown-repeat")).to_have_text("repeat 2")
    mine = sorted((p for p in predictions if p["instance_id"] == first), key=lambda p: p.get("repeat", 0))
    rows = page.locator("#repeats tbody tr")
    expect(rows).to_have_count(REPEATS)
    shown = [rows.nth(k).locator("pre.reply").inner_text() for k in range(REPEATS)]
    assert shown == [replies[p["request_key"], p.get("repeat", 0)] for p in mine]
    assert len(set(shown)) > 1  # the repeats answered differently, and each shows its own reply
    expect(page.locator("#repeats tr.current")).to_have_attribute("data-repeat", "2")

    page.click("#next")
    expect(page.locator("#instance-id")).to_have_text(wanted[1]["instance_id"])
    expect(page.locator("#shown-repeat")).to_have_text("repeat 2")
    page.click("#prev")
    expect(page.locator("#instance-id")).to_have_text(first)
    page.locator("#repeats tbody tr[data-repeat='1'] a").click()
    expect(page.locator("#shown-repeat")).to_have_text("repeat 1")
    expect(page.locator("#reply")).to_have_text(replies[mine[1]["request_key"], 1])


def _compare(page: Any, base: str, repeated: dict[str, Path]) -> None:
    from playwright.sync_api import expect

    a, b = (
        {(p["instance_id"], p.get("repeat", 0)): p for p in lines(repeated[k], "predictions.jsonl")}
        for k in ("a", "b")
    )
    right = {
        key: (a[key]["prediction"] == a[key]["gold"], b[key]["prediction"] == b[key]["gold"]) for key in a
    }
    page.goto(f"{base}/compare?a=0&b=1")
    expect(page.locator("h1")).to_contain_text(" vs ")
    page.goto(f"{base}/instances?run=0&task=itp&vs=1&cmp=a_only&per=500")
    expected = sum(1 for x, y in right.values() if x and not y)
    assert expected > 0
    expect(page.locator("#shown-count")).to_have_text(str(expected))


def _bundle(page: Any, run: Path, tmp_path: Path) -> None:
    """The bundle's instance page of a run with repeats: the repeat it was opened at, every repeat's reply."""
    from playwright.sync_api import expect

    write_bundle([run], tmp_path / "site")
    predictions = lines(run, "predictions.jsonl")
    replies = {
        (r["request_key"], r.get("repeat", 0)): r["reply"]["text"] for r in lines(run, "requests.jsonl")
    }
    wanted = [p for p in predictions if p["task"] == "itp" and p.get("repeat", 0) == 2]
    page.goto((tmp_path / "site" / "instances.html").as_uri() + "#run=0&task=itp&repeat=2")
    expect(page.locator("#shown-count")).to_have_text(str(len(wanted)))
    page.locator("#instances tbody tr a.open").first.click()
    first = wanted[0]["instance_id"]
    expect(page.locator("#instance-id")).to_have_text(first)
    expect(page.locator("#shown-repeat")).to_have_text("repeat 2")
    mine = sorted((p for p in predictions if p["instance_id"] == first), key=lambda p: p.get("repeat", 0))
    rows = page.locator("#repeats tbody tr")
    expect(rows).to_have_count(REPEATS)
    shown = [rows.nth(k).locator("pre.reply").inner_text() for k in range(REPEATS)]
    assert shown == [replies[p["request_key"], p.get("repeat", 0)] for p in mine]
    expect(page.locator("#repeats tr.current")).to_have_attribute("data-repeat", "2")
    page.click("#next")
    expect(page.locator("#instance-id")).to_have_text(wanted[1]["instance_id"])
