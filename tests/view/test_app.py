"""The app over HTTP (TestClient): headers, escaping, errors as pages, redaction, the bundle and the CLI."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from tests.view.conftest import HOSTILE, records
from typer.testing import CliRunner

from rescue_bench.cli.main import app as cli
from rescue_bench.view.app import create_app


def _first(run: Path, task: str) -> str:
    return next(str(r["instance_id"]) for r in records(run) if r["task"] == task)


def test_hostile_text_is_escaped_under_a_strict_policy(runs: dict[str, Path]) -> None:
    client = TestClient(create_app([runs["hostile"]]), base_url="http://127.0.0.1")
    for url in ("/", "/instances?task=er", f"/instances/{quote(_first(runs['hostile'], 'er'), safe='')}"):
        response = client.get(url)
        assert response.status_code == 200
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert "unsafe-inline" not in response.headers["content-security-policy"]
        assert HOSTILE not in response.text and "<img src=x" not in response.text
        assert re.findall(r"<script(?![^>]*\bsrc=)", response.text) == []
        assert " style=" not in response.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text


def test_one_damaged_run_leaves_the_others_viewable(runs: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs["random"], copy)
    lines = (copy / "predictions.jsonl").read_text().splitlines()
    lines[2] = "{not json"
    (copy / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    client = TestClient(create_app([runs["majority"], copy]), base_url="http://127.0.0.1")
    overview = client.get("/")
    assert overview.status_code == 200 and "predictions.jsonl:3" in overview.text
    assert 'id="broken-1"' in overview.text and "baseline/majority" in overview.text
    assert client.get("/instances?run=0&task=rpp").status_code == 200
    damaged = client.get("/instances?run=1&task=rpp")
    assert damaged.status_code == 500 and "predictions.jsonl:3" in damaged.text
    assert "Traceback" not in damaged.text
    good = TestClient(create_app([runs["random"]]), base_url="http://127.0.0.1")
    assert good.get("/instances?page=x").status_code == 400
    assert good.get("/instances/nope::rpp::1").status_code == 404
    assert good.get("/compare?a=0&b=0").status_code == 400
    assert good.get("/instances?run=5&task=rpp").status_code == 400


def test_a_forged_host_header_is_refused(runs: dict[str, Path]) -> None:
    """DNS rebinding: a page of evil.example whose name now points at 127.0.0.1 sends Host: evil.example."""
    app = create_app([runs["hostile"]], hosts=["192.0.2.7"], port=8123)
    for host in ("127.0.0.1:8123", "localhost:8123", "[::1]:8123", "192.0.2.7:8123", "LOCALHOST"):
        assert TestClient(app).get("/", headers={"host": host}).status_code == 200, host
    for host in ("evil.example", "evil.example:8123", "127.0.0.1:9999", "127.0.0.1.evil.example:8123", ""):
        response = TestClient(app).get("/", headers={"host": host})
        assert response.status_code == 421, host
        assert "baseline" not in response.text and "alert" not in response.text  # nothing of the runs
    instance = quote(_first(runs["hostile"], "er"), safe="")
    assert (
        TestClient(app).get(f"/instances/{instance}", headers={"host": "evil.example:8123"}).status_code
        == 421
    )
    assert TestClient(app).get("/static/view.js", headers={"host": "evil.example"}).status_code == 421


def test_request_facts_are_in_human_units(runs: dict[str, Path]) -> None:
    client = TestClient(create_app([runs["hostile"]]), base_url="http://127.0.0.1")
    page = client.get(f"/instances/{quote(_first(runs['hostile'], 'itp'), safe='')}").text
    time_cell = re.search(r'id="fact-time">([^<]*)<', page)
    latency = re.search(r'id="fact-latency">([^<]*)<', page)
    assert time_cell and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", time_cell.group(1))
    assert latency and re.fullmatch(r"\d+ ms|\d+\.\d\d s", latency.group(1))
    assert "e+09" not in page


def test_redact_leaves_out_transcripts_and_replies(runs: dict[str, Path]) -> None:
    client = TestClient(create_app([runs["hostile"]], redact=True), base_url="http://127.0.0.1")
    instance = _first(runs["hostile"], "er")
    page = client.get(f"/instances/{quote(instance, safe='')}").text
    assert "alert" not in page and 'id="conversation"' not in page and 'id="reply"' not in page
    assert instance in page


def test_cli_refuses_what_is_not_a_run(tmp_path: Path, runs: dict[str, Path]) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["view", str(tmp_path)])
    assert result.exit_code == 1 and "is not a run directory: predictions.jsonl is missing" in result.output
    result = runner.invoke(cli, ["view", str(runs["majority"]), "--bundle", str(tmp_path / "b")])
    assert result.exit_code == 0 and (tmp_path / "b" / "index.html").exists(), result.output


def test_serve_binds_loopback_and_warns_about_other_hosts(
    runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    calls: list[dict[str, Any]] = []
    apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: (apps.append(app), calls.append(kw)))
    runner = CliRunner()
    result = runner.invoke(cli, ["view", str(runs["majority"])])
    assert result.exit_code == 0, result.output
    assert calls[0]["host"] == "127.0.0.1" and "warning" not in result.output
    assert f"http://127.0.0.1:{calls[0]['port']}/" in result.output
    result = runner.invoke(cli, ["view", str(runs["majority"]), "--host", "0.0.0.0", "--port", "8765"])
    assert calls[1] == {"host": "0.0.0.0", "port": 8765, "log_level": "warning"}
    assert "warning: binding 0.0.0.0" in result.output and "http://0.0.0.0:8765/" in result.output
    # the host check knows the bound address and port (and this machine's names, bound to every address)
    assert {"0.0.0.0", "localhost"} <= apps[1].state.hosts and apps[1].state.port == 8765
    runner.invoke(cli, ["view", str(runs["majority"]), "--allow-host", "viewer.lan", "--allow-host", "Proxy"])
    assert {"viewer.lan", "proxy", "127.0.0.1"} <= apps[2].state.hosts
    assert "0.0.0.0" not in apps[2].state.hosts


def test_a_running_run_is_marked_partial(runs: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs["majority"], copy)
    manifest = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps({**manifest, "status": "running"}))
    lines = (copy / "predictions.jsonl").read_text().splitlines(keepends=True)
    (copy / "predictions.jsonl").write_text("".join(lines[:10]))
    page = TestClient(create_app([copy]), base_url="http://127.0.0.1").get("/").text
    assert 'id="partial-0"' in page and "running" in page
    itp = manifest["counts"]["itp"]["instances"]
    assert f"10 of {itp}" in page


def test_unfinished_runs_need_partial(runs: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs["majority"], copy)
    manifest = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps({**manifest, "status": "incomplete"}))
    runner = CliRunner()
    result = runner.invoke(cli, ["view", str(runs["random"]), str(copy), "--bundle", str(tmp_path / "b")])
    assert result.exit_code == 1 and "not finished" in result.output and "(incomplete)" in result.output
    assert "--partial" in result.output and not (tmp_path / "b").exists()
    args = ["view", str(runs["random"]), str(copy), "--bundle", str(tmp_path / "b"), "--partial"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    leaderboard = (tmp_path / "b" / "leaderboard.html").read_text()
    assert "PARTIAL (incomplete)" in leaderboard and 'class="partial-row"' in leaderboard


def test_redacted_search_does_not_reveal_reply_text(runs: dict[str, Path]) -> None:
    open_client = TestClient(create_app([runs["hostile"]]), base_url="http://127.0.0.1")
    redacted = TestClient(create_app([runs["hostile"]], redact=True), base_url="http://127.0.0.1")
    url = "/instances?task=itp&q=onerror"
    assert 'id="shown-count">0<' not in open_client.get(url).text
    assert 'id="shown-count">0<' in redacted.get(url).text
    first = _first(runs["hostile"], "itp")
    assert first in redacted.get(f"/instances?task=itp&q={quote(first)}").text
