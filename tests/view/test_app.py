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
from rescue_bench.view.bundle import write_bundle


def _first(run: Path, task: str) -> str:
    return next(str(r["instance_id"]) for r in records(run) if r["task"] == task)


def test_hostile_text_is_escaped_under_a_strict_policy(runs: dict[str, Path]) -> None:
    client = TestClient(create_app([runs["hostile"]]))
    for url in ("/", "/instances?task=er", f"/instances/{quote(_first(runs['hostile'], 'er'), safe='')}"):
        response = client.get(url)
        assert response.status_code == 200
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert "unsafe-inline" not in response.headers["content-security-policy"]
        assert HOSTILE not in response.text and "<img src=x" not in response.text
        assert re.findall(r"<script(?![^>]*\bsrc=)", response.text) == []
        assert " style=" not in response.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text


def test_bad_input_is_a_page_naming_file_and_line(runs: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs["random"], copy)
    lines = (copy / "predictions.jsonl").read_text().splitlines()
    lines[2] = "{not json"
    (copy / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    client = TestClient(create_app([copy]))
    response = client.get("/")
    assert response.status_code == 500 and "predictions.jsonl:3" in response.text
    assert "Traceback" not in response.text
    good = TestClient(create_app([runs["random"]]))
    assert good.get("/instances?page=x").status_code == 400
    assert good.get("/instances/nope::rpp::1").status_code == 404
    assert good.get("/compare?a=0&b=0").status_code == 400


def test_redact_leaves_out_transcripts_and_replies(runs: dict[str, Path]) -> None:
    client = TestClient(create_app([runs["hostile"]], redact=True))
    instance = _first(runs["hostile"], "er")
    page = client.get(f"/instances/{quote(instance, safe='')}").text
    assert "alert" not in page and 'id="conversation"' not in page and 'id="reply"' not in page
    assert instance in page


def test_bundle_is_relative_and_redactable(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "site"
    count = write_bundle([runs["random"], runs["hostile"]], out, redact=True)
    files = list(out.glob("*.html"))
    assert count == len(files) and (out / "static" / "view.js").exists()
    for path in files:
        text = path.read_text()
        assert 'href="/' not in text and 'src="/' not in text and "alert(" not in text
    assert len(files) > len(records(runs["random"])) + len(records(runs["hostile"]))


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
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    runner = CliRunner()
    result = runner.invoke(cli, ["view", str(runs["majority"])])
    assert result.exit_code == 0, result.output
    assert calls[0]["host"] == "127.0.0.1" and "warning" not in result.output
    assert f"http://127.0.0.1:{calls[0]['port']}/" in result.output
    result = runner.invoke(cli, ["view", str(runs["majority"]), "--host", "0.0.0.0", "--port", "8765"])
    assert calls[1] == {"host": "0.0.0.0", "port": 8765, "log_level": "warning"}
    assert "warning: binding 0.0.0.0" in result.output and "http://0.0.0.0:8765/" in result.output


def test_a_running_run_is_marked_partial(runs: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs["majority"], copy)
    manifest = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps({**manifest, "status": "running"}))
    lines = (copy / "predictions.jsonl").read_text().splitlines(keepends=True)
    (copy / "predictions.jsonl").write_text("".join(lines[:10]))
    page = TestClient(create_app([copy])).get("/").text
    assert 'id="partial-0"' in page and "running" in page
    itp = manifest["counts"]["itp"]["instances"]
    assert f"10 of {itp}" in page


def test_redacted_search_does_not_reveal_reply_text(runs: dict[str, Path]) -> None:
    open_client = TestClient(create_app([runs["hostile"]]))
    redacted = TestClient(create_app([runs["hostile"]], redact=True))
    url = "/instances?task=itp&q=onerror"
    assert 'id="shown-count">0<' not in open_client.get(url).text
    assert 'id="shown-count">0<' in redacted.get(url).text
    first = _first(runs["hostile"], "itp")
    assert first in redacted.get(f"/instances?task=itp&q={quote(first)}").text
