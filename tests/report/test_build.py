"""The report of a run the project produced itself (baseline on the demo data, both scenarios)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.report.writers import SHEETS

EXPECTED_FIGURES = {
    "baseline_random_rpp_confusion__couple",
    "baseline_random_rpp_confusion__family",
    "baseline_random_ssp_confusion__couple",
    "baseline_random_ssp_confusion__family",
    "baseline_random_stp_confusion_by_target_kind__all",
    "rpp_accuracy_by_position",
    "gold_by_position_couple",
    "gold_by_position_family",
    "transitions_couple",
    "transitions_family",
    "rpp_transition_accuracy_baseline_random_couple",
    "rpp_transition_accuracy_baseline_random_family",
    "local_vs_relational_profile",
}


def test_every_file_is_written(built: tuple[Any, Path]) -> None:
    report, out = built
    for name in ("report.md", "report.html", "results.xlsx", "results.csv", "table.tex"):
        assert (out / name).stat().st_size > 0, name
    assert {f.key for f in report.figures} == EXPECTED_FIGURES
    for figure in report.figures:
        assert (out / "figures" / f"{figure.key}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_leaderboard_matches_scores_json(built: tuple[Any, Path], demo_run: Path) -> None:
    report, _ = built
    scores = json.loads((demo_run / "scores.json").read_text())
    row = report.table("leaderboard").rows[0]
    assert row[:3] == ("baseline/random", "this toolkit", "finished")
    run = json.loads((demo_run / "run.json").read_text())
    valid = sum(c["valid"] for c in run["counts"].values()) / sum(
        c["instances"] for c in run["counts"].values()
    )
    assert row[3].value == pytest.approx(valid)
    rpp = row[4 + 3]
    assert (
        rpp.value == scores["rpp"]["all"]["accuracy"]
        and [rpp.lo, rpp.hi] == scores["rpp"]["all"]["ci"]["accuracy"]
    )
    er_llm, vp_llm = row[4 + 8], row[4 + 10]
    assert er_llm.value == pytest.approx(scores["er"]["all"]["llm"]) and er_llm.lo is not None
    assert 1.0 <= vp_llm.value <= 5.0
    published = [r for r in report.table("leaderboard").rows if str(r[0]).endswith("(published)")]
    assert len(published) == 10 and all("published" in str(r[1]) for r in published)
    scenarios = [r[1] for r in report.table("per_scenario").rows]
    assert scenarios == ["Couple", "Family", "Both"]


def test_markdown_and_tex(built: tuple[Any, Path]) -> None:
    _, out = built
    md = (out / "report.md").read_text()
    assert "| Model | Source | Status | Valid (%) | ITP Prec. |" in md and "(published)" in md
    assert md.count("![") == len(EXPECTED_FIGURES)
    measured = "Measured: demo data (fictional): 6 samples (4 couple, 2 family)"
    assert md.splitlines()[2].startswith(measured) and f"**{measured}" in md  # under the title and the board
    assert "judge fake/overlap-judge" in md.splitlines()[2]
    tex = (out / "table.tex").read_text()
    assert tex.count(r"\toprule") == 2 and r"\bottomrule" in tex and "baseline/random" in tex
    assert r"GPT-4o (published) & published & -- & 86.67 & 82.63 & 84.60" in tex
    assert r"baseline/random & finished & 100.0 &" in tex
    assert "% Measured: demo data (fictional)" in tex


def test_xlsx_opens_with_the_expected_sheets(built: tuple[Any, Path]) -> None:
    from openpyxl import load_workbook

    _, out = built
    book = load_workbook(out / "results.xlsx", read_only=True)
    assert tuple(n for n in book.sheetnames if not n.startswith("relational_")) == SHEETS
    relational = [n for n in book.sheetnames if n.startswith("relational_")]
    assert {"relational_rpp_transition", "relational_stp_target_type", "relational_er_intensity"} <= set(
        relational
    )
    assert book.sheetnames.index(relational[-1]) == book.sheetnames.index("config") - 1
    rows = list(book["leaderboard"].iter_rows(values_only=True))
    assert rows[0][:7] == (
        "Model",
        "Source",
        "Status",
        "Valid (%)",
        "ITP Prec.",
        "ITP Prec. CI low",
        "ITP Prec. CI high",
    )
    assert rows[1][0] == "baseline/random" and rows[1][2] == "finished" and isinstance(rows[1][4], float)
    labels = list(book["per_label"].iter_rows(values_only=True))
    assert {r[1] for r in labels[1:] if r[1]} == {"couple", "family"}
    book.close()


def test_csv_is_long_format_with_cis(built: tuple[Any, Path], demo_run: Path) -> None:
    _, out = built
    with (out / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    ours = [r for r in rows if r["source"] == "this toolkit"]
    assert {r["scope"] for r in ours} == {"all", "couple", "family"}
    scores = json.loads((demo_run / "scores.json").read_text())
    itp_f1 = next(r for r in ours if r["scope"] == "family" and r["task"] == "itp" and r["metric"] == "f1")
    assert float(itp_f1["value"]) == pytest.approx(scores["itp"]["family"]["f1"])
    assert float(itp_f1["ci_low"]) <= float(itp_f1["value"]) <= float(itp_f1["ci_high"])
    run = json.loads((demo_run / "run.json").read_text())
    valid = sum(c["valid"] for c in run["counts"].values()) / sum(
        c["instances"] for c in run["counts"].values()
    )
    assert {r["status"] for r in ours} == {"finished"}
    assert all(float(r["valid_share"]) == pytest.approx(valid) for r in ours)
    assert {(r["status"], r["valid_share"]) for r in rows if r["source"] != "this toolkit"} == {
        ("published", "")
    }


def test_html_is_self_contained_and_escaped(built: tuple[Any, Path]) -> None:
    _, out = built
    html = (out / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == len(EXPECTED_FIGURES)
    assert "http://" not in html and "https://" not in html and "<script" not in html


def test_html_autoescapes_run_names(tmp_path: Path) -> None:
    from rescue_bench.report.build import Report
    from rescue_bench.report.html import render_html
    from rescue_bench.report.tables import Table

    evil = "<img src=x onerror=alert(1)>"
    page = render_html(Report(evil, (evil,), (Table("t", "T", ("a",), ((evil,),)),), ()))
    assert evil not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


@pytest.mark.browser
def test_html_loads_in_headless_chromium(built: tuple[Any, Path]) -> None:
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("Debian chromium is not installed (apt-get install -y --no-install-recommends chromium)")
    playwright = pytest.importorskip("playwright.sync_api", reason="the web-test extra is not installed")
    report, out = built
    args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    errors: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=args)
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((out / "report.html").as_uri())
            page.wait_for_load_state("load")
            images = page.eval_on_selector_all(
                "figure.report-figure img", "els => els.map(e => [e.complete, e.naturalWidth, e.alt])"
            )
            tables = page.eval_on_selector_all("details.section table", "els => els.length")
            title = page.title()
        finally:
            browser.close()
    assert errors == []
    assert len(images) == len(report.figures)
    assert all(complete and width > 100 for complete, width, _ in images)  # decoded, not broken
    assert tables >= 6 and title.startswith("RESCUE-Bench report")
