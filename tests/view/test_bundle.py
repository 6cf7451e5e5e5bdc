"""The static bundle: a few pages and compressed data files; ``--redact`` leaves every text out; names from a
hostile run never reach file names."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.view.conftest import HOSTILE, records

from rescue_bench.data.load import load_samples
from rescue_bench.view.bundle import write_bundle
from rescue_bench.view.data import ViewError

PUT = re.compile(r'^RB\.put\("([A-Za-z0-9_.-]+)","([A-Za-z0-9+/=]*)"\);\n$')


def data_files(site: Path) -> dict[str, Any]:
    """Every data file of a bundle, decoded as its page script decodes it."""
    out = {}
    for path in sorted((site / "data").glob("*.js")):
        found = PUT.match(path.read_text(encoding="ascii"))
        assert found and f"{found.group(1)}.js" == path.name, path
        out[found.group(1)] = json.loads(gzip.decompress(base64.b64decode(found.group(2))))
    return out


def test_a_few_pages_and_data_files(runs: dict[str, Path], tmp_path: Path) -> None:
    site = tmp_path / "site"
    paths = [runs["random"], runs["majority"], runs["hostile"]]
    written = write_bundle(paths, site)
    files = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    assert written.files == len(files)
    pages = [f for f in files if f.endswith(".html")]
    assert sorted(pages) == sorted(
        [
            "index.html",
            "instances.html",
            "leaderboard.html",
            "compare.html",
            *(f"matrices-{i}.html" for i in range(3)),
        ]
    )
    data = data_files(site)
    tasks = {i: sorted({str(r["task"]) for r in records(p)}) for i, p in enumerate(paths)}
    assert sorted(k for k in data if k.startswith("rows-")) == sorted(
        f"rows-{i}-{t}" for i, ts in tasks.items() for t in ts
    )
    # every instance is in its rows file, and the hostile text is data, never markup in a page
    for i, path in enumerate(paths):
        ids = {row[0] for t in tasks[i] for row in data[f"rows-{i}-{t}"]}
        assert ids == {str(r["instance_id"]) for r in records(path)}
    for page in pages:
        text = (site / page).read_text()
        assert HOSTILE not in text and 'href="/' not in text and 'src="/' not in text
    # the conversations and messages of runs on the same data are written once
    assert len([k for k in data if k.startswith("conv-")]) == 1
    details = data["detail-0-rpp"]
    request = next(iter(details["transcripts"].values()))["request"]
    assert request in data[details["messages"]]["requests"]


def test_redact_writes_no_text(runs: dict[str, Path], tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_bundle([runs["hostile"], runs["random"]], site, redact=True)
    everything = "\n".join(p.read_text(errors="replace") for p in site.rglob("*.html"))
    data = data_files(site)
    decoded = json.dumps(data, ensure_ascii=False)
    assert "alert" not in decoded and "alert" not in everything
    assert not [k for k in data if k.startswith(("conv-", "msgs-"))]
    for key, value in data.items():
        if key.startswith("detail-"):
            assert "transcripts" not in value
            for item in value["items"].values():
                request = item["request"]
                assert request is None or (request["text"] is None and request["reasoning"] is None)
                assert all(j[4] is None for j in item["judgments"])
    # not a word of the conversations either
    said = [
        row.dialogue_cleaned
        for s in load_samples("demo")
        for row in s.rows
        if len(row.dialogue_cleaned or "") > 30
    ]
    assert said and not [text for text in said if text in decoded or text in everything]


def test_a_hostile_task_name_is_refused(runs: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs["majority"], copy)
    lines = (copy / "predictions.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "task": "../../../escaped"})
    (copy / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ViewError, match="unknown task name"):
        write_bundle([copy], tmp_path / "site")
    assert not (tmp_path / "site").exists() and not list(tmp_path.rglob("escaped*"))
