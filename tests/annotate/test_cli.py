"""`rescue-bench annotate ingest | draft | export` end to end through the typer app."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.annotate.workdirs import answer, asked_rows, broken_rows, good_rows, make_workdir
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import load_samples

runner = CliRunner()


def invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    def handler(req: ChatRequest) -> str:
        rows = asked_rows(req)
        # the second segment keeps breaking rules, so the export has rows with open violations
        return answer(broken_rows(rows) if "ep_seg02" in req.text else good_rows(rows))

    with FakeOpenAIServer(handler) as fake:
        yield fake


def test_draft_then_export(tmp_path: Path, server: FakeOpenAIServer) -> None:
    root = make_workdir(tmp_path / "work", ("ep_seg01", "ep_seg02"))
    drafted = invoke("annotate", "draft", str(root), "--model", "vllm/drafter", "--base-url", server.base_url)
    assert drafted.exit_code == 0, drafted.output
    assert "ep_seg01: 5 rows, 0 with open violations, 0/1 request(s) repaired (clean)" in drafted.output
    assert (
        "2 segment(s) drafted, 0 already drafted, 0 failed; 10 rows, 3 with open violations" in drafted.output
    )
    again = invoke("annotate", "draft", str(root), "--model", "vllm/drafter", "--base-url", server.base_url)
    assert "0 segment(s) drafted, 2 already drafted" in again.output and server.count == 3
    out = tmp_path / "export" / "drafts.jsonl"
    exported = invoke("annotate", "export", str(root), "--out", str(out))
    assert exported.exit_code == 0, exported.output
    assert "2 usable samples, 10 rows: 0 errors" in exported.output
    assert "3 row(s) with open draft violations" in exported.output
    samples = load_samples(out)
    assert [s.sample_id for s in samples] == ["ep/ep_seg01", "ep/ep_seg02"]
    assert samples[0].participants == ("Nora", "Eli") and samples[0].scenario == "couple"
    assert samples[1].rows[1].target == ("Dr. Reed",)
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert "split_note" not in first["rows"][0]


def test_the_review_app_reads_drafted_work_directories(tmp_path: Path, server: FakeOpenAIServer) -> None:
    loader = pytest.importorskip("rescue_bench.review.loader", reason="the review extra is not installed")
    root = make_workdir(tmp_path / "work", ("ep_seg01", "ep_seg02"))
    invoke("annotate", "draft", str(root), "--model", "vllm/drafter", "--base-url", server.base_url)
    segments, warnings = loader.read_workdir(root)
    assert warnings == []
    assert [(s.segment_id, s.sample_id, s.model) for s in segments] == [
        ("ep_seg01", "ep/ep_seg01", "vllm/drafter"),
        ("ep_seg02", "ep/ep_seg02", "vllm/drafter"),
    ]
    flagged = {row.data["row_index"]: row.violations for row in segments[1].rows if row.violations}
    assert sorted(flagged) == [2, 4, 5]
    assert flagged[2][0].startswith("target[0]: 'Dr. Reed' is outside the closed set")
    assert segments[0].rows[1].subtitle_text == "He never plans anything with me."


def test_draft_sends_runs_generation_flags(tmp_path: Path, server: FakeOpenAIServer) -> None:
    root = make_workdir(tmp_path / "work")
    settings = ("--seed", "7", "--temperature", "0.3", "--top-p", "0.8", "--max-tokens", "900")
    result = invoke(
        "annotate", "draft", str(root), "--model", "vllm/drafter", "--base-url", server.base_url, *settings
    )
    assert result.exit_code == 0, result.output
    bodies = [r.body for r in server.requests]
    assert bodies and {(b["seed"], b["temperature"], b["top_p"]) for b in bodies} == {(7, 0.3, 0.8)}
    assert all(b["max_tokens"] <= 900 for b in bodies)  # each request's own cap, 900 at most


def test_draft_names_its_model(tmp_path: Path) -> None:
    result = invoke("annotate", "draft", str(make_workdir(tmp_path / "w")))
    assert result.exit_code == 2 and result.output.strip().startswith("error: --model:"), result.output


def test_estimate_spends_nothing(tmp_path: Path, server: FakeOpenAIServer) -> None:
    root = make_workdir(tmp_path / "work")
    result = invoke(
        "annotate", "draft", str(root), "--model", "vllm/drafter", "--base-url", server.base_url,
        "--estimate", "--rows-per-request", "2", "--price-in", "1", "--price-out", "2",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "5 rows to draft in 3 first-round request(s)" in result.output and "at most $" in result.output
    assert server.count == 0


def test_user_mistakes_are_one_line_errors(tmp_path: Path) -> None:
    bad_scenario = invoke(
        "annotate", "ingest", "--video", "v.mp4", "--subtitles", "s.srt", "--scenario", "trio",
        "--participants", "A,B", "--out", str(tmp_path / "w"),
    )  # fmt: skip
    assert bad_scenario.exit_code == 2
    assert bad_scenario.output.strip() == "error: --scenario must be couple or family (got 'trio')"
    not_workdir = invoke(
        "annotate", "draft", str(tmp_path), "--model", "vllm/m", "--base-url", "http://127.0.0.1:9"
    )
    assert not_workdir.exit_code == 1
    assert "not an annotation work directory" in not_workdir.output and "Traceback" not in not_workdir.output
    baseline = invoke("annotate", "draft", str(make_workdir(tmp_path / "w2")), "--model", "baseline/random")
    assert baseline.exit_code == 2 and "choose a chat model to draft with" in baseline.output
    undrafted = invoke("annotate", "export", str(tmp_path / "w2"), "--out", str(tmp_path / "x.jsonl"))
    assert undrafted.exit_code == 1 and "no drafted segment to export" in undrafted.output


@pytest.mark.ffmpeg
def test_ingest_command(tmp_path: Path, test_video: Path, srt_file: Path) -> None:
    out = tmp_path / "work"
    result = invoke(
        "annotate", "ingest", "--video", str(test_video), "--subtitles", str(srt_file),
        "--scenario", "couple", "--participants", "Nora,Eli", "--out", str(out),
        "--split-gap", "2.5", "--min-segment-sec", "3",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "dropped segment session_seg02 (cues 5-5, 1.8 s): shorter than 3 s" in result.output
    assert "cue 3: overlaps cue 2 by 0.250 s" in result.output
    assert result.output.strip().endswith("1 segment(s), 5 rows; 5 clip(s) cut, 0 kept; 1 segment(s) dropped")
    assert sorted(p.name for p in (out / "clips" / "session_seg01").iterdir()) == [
        f"row_{i:04d}.mp4" for i in range(1, 6)
    ]
