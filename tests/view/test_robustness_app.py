"""The viewer's robustness routes without a browser: the table's links, a refused run, bad queries."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.view.app import create_app


def _run(out: Path, model: str, *args: str) -> Path:
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--model",
            model,
            "--data",
            "demo",
            "--tasks",
            "rpp",
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


def test_routes(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", "baseline/random")
    swapped = _run(tmp_path / "swap", "baseline/random", "--perturb", "name-swap")
    other = _run(tmp_path / "other", "baseline/majority", "--perturb", "label-order")
    client = TestClient(create_app([base, swapped]), base_url="http://127.0.0.1")
    page = client.get("/robustness?base=0")
    assert page.status_code == 200 and "name-swap" in page.text
    links = [x.replace("&amp;", "&") for x in re.findall(r'class="flipped" href="([^"]+)"', page.text)]
    assert links == ["/flipped?base=0&run=1&task=rpp"]
    flipped = client.get(links[0])
    assert flipped.status_code == 200
    assert re.search(r'id="flipped-count">0<', flipped.text)  # the random baseline ignores names
    lone = client.get("/robustness?base=1")  # the perturbed run as base: the other is not its variant
    assert lone.status_code == 200 and "No run here is a perturbed variant" in lone.text
    assert client.get("/flipped?base=0&run=0&task=rpp").status_code == 400
    assert client.get("/flipped?base=0&run=1&task=nope").status_code == 400
    assert client.get("/robustness?base=7").status_code == 400
    refused = TestClient(create_app([base, other]), base_url="http://127.0.0.1").get("/robustness?base=0")
    assert refused.status_code == 400 and "baseline/majority" in refused.text
    assert "Traceback" not in refused.text


def test_flipped_answers_of_repeated_runs_name_their_repeat(tmp_path: Path) -> None:
    """With ``--repeats 2`` each flip is an (instance, repeat) pair, and its links open that repeat."""
    base = _run(tmp_path / "base", "baseline/random", "--repeats", "2")
    shuffled = _run(tmp_path / "shuffled", "baseline/random", "--repeats", "2", "--perturb", "label-order")
    page = (
        TestClient(create_app([base, shuffled]), base_url="http://127.0.0.1")
        .get("/flipped?base=0&run=1&task=rpp")
        .text
    )
    count = int(re.findall(r'id="flipped-count">(\d+)<', page)[0])
    rows = page.split('id="flipped"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0].count("<tr>")
    assert "shared (instance, repeat) pairs" in page and rows == count > 0
    predictions = (base / "predictions.jsonl").read_text().splitlines()
    lines = sum(json.loads(line)["task"] == "rpp" for line in predictions)
    assert f"of {lines} shared (instance, repeat) pairs" in page  # both repeats of every RPP instance
    opened = [x.replace("&amp;", "&") for x in re.findall(r'class="open" href="([^"]+)"', page)]
    assert any("at=1" in link for link in opened) and any("at=" not in link for link in opened)
