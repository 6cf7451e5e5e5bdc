"""`rescue-bench annotate ingest | draft | export` end to end through the typer app."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.annotate.workdirs import answer, asked_rows, broken_rows, good_rows, make_workdir
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, Script
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


def test_draft_spend_in_dollars_adds_up_over_resumes(tmp_path: Path) -> None:
    def handler(req: ChatRequest) -> Any:
        return Script(content=answer(good_rows(asked_rows(req))), usage=(1000, 200))

    root = make_workdir(tmp_path / "work", ("ep_seg01", "ep_seg02"))
    priced = ("--price-in", "2", "--price-out", "10", "--no-cache")
    with FakeOpenAIServer(handler) as fake:
        first = invoke(
            "annotate", "draft", str(root), "--model", "vllm/drafter", "--base-url", fake.base_url, *priced
        )
        assert first.exit_code == 0, first.output
        # two requests of 1,000 + 200 tokens at $2 and $10 per million: $0.0080
        assert "$0.0080 spent in finished rounds, $0.0080 in total for this work directory" in first.output
        assert json.loads((root / "workdir.json").read_text())["draft_spend_usd"] == pytest.approx(0.008)
        again = invoke(
            "annotate",
            "draft",
            str(root),
            "--model",
            "vllm/drafter",
            "--base-url",
            fake.base_url,
            "--force",
            *priced,
        )
    assert "$0.0080 spent in finished rounds, $0.0160 in total for this work directory" in again.output
    assert json.loads((root / "workdir.json").read_text())["draft_spend_usd"] == pytest.approx(0.016)


def test_ctrl_c_says_what_is_kept_and_how_to_resume(tmp_path: Path) -> None:
    """Ctrl-C while the second group of segments is asked: the first group's drafts and every reply received
    are kept; the command says so and exits 130; the same command then finishes the work."""
    main = threading.main_thread().ident
    interrupted = threading.Event()

    def handler(req: ChatRequest) -> str:
        if "ep_seg09" in req.text and not interrupted.is_set():
            interrupted.set()
            assert main is not None
            signal.pthread_kill(main, signal.SIGINT)  # as Ctrl-C in the terminal
            time.sleep(0.5)
        return answer(good_rows(asked_rows(req)))

    segments = tuple(f"ep_seg{i:02d}" for i in range(1, 11))  # 8 segments a round: seg09 is in the second
    root = make_workdir(tmp_path / "work", segments)
    with FakeOpenAIServer(handler) as fake:
        args = ("annotate", "draft", str(root), "--model", "vllm/drafter", "--base-url", fake.base_url)
        stopped = invoke(*args, "--price-in", "1", "--price-out", "1")
        assert stopped.exit_code == 130, stopped.output
        assert "interrupted: 8 segment(s) drafted and written;" in stopped.output
        assert "new repl(ies) kept in the response cache" in stopped.output
        assert "Re-run the same command to resume" in stopped.output and "Traceback" not in stopped.output
        resumed = invoke(*args)
    assert resumed.exit_code == 0 and "2 segment(s) drafted, 8 already drafted" in resumed.output


def test_speaker_one_letter_off_gets_a_did_you_mean_and_speaker_map_fixes_it(tmp_path: Path) -> None:
    from rescue_bench.annotate.subtitles import read_subtitles

    srt = tmp_path / "s.srt"
    srt.write_text("1\n00:00:01,000 --> 00:00:02,000\nNORAH: Hello there.\n", encoding="utf-8")
    (warning,) = read_subtitles(srt, ("Nora", "Eli")).warnings
    assert (
        "speaker 'Norah' is neither a participant nor the therapist; did you mean 'Nora'?" in warning.message
    )
    assert "--speaker-map 'Norah=Nora'" in warning.message
    fixed = read_subtitles(srt, ("Nora", "Eli"), speaker_map={"NORAH": "Nora"})
    assert fixed.warnings == () and fixed.cues[0].turns[0].speaker == "Nora"
    far = read_subtitles(srt, ("Zed", "Eli")).warnings[0].message
    assert "did you mean" not in far and "--speaker-map" in far
    bad = invoke(
        "annotate", "ingest", "--video", "v.mp4", "--subtitles", str(srt), "--scenario", "couple",
        "--participants", "Nora,Eli", "--speaker-map", "NORAH=Norah", "--out", str(tmp_path / "w"),
    )  # fmt: skip
    assert (
        bad.exit_code == 2
        and "--speaker-map NORAH=Norah: map a subtitle label to one of Nora, Eli" in bad.output
    )
