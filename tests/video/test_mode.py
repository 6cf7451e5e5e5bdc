"""`run --mode video`: row clips reach the endpoint in order, as video or frames; missing clips are counted.

The conversation and its words are invented; clips are made by ffmpeg's lavfi sources (one colour per row).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, schema_answer
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import load_samples
from rescue_bench.data.schema import Row, Sample
from rescue_bench.engine.plans import build_plans
from rescue_bench.records import Instance
from rescue_bench.rundir import read_jsonl
from rescue_bench.spec import RunSpec
from rescue_bench.video.clips import shown_rows
from rescue_bench.workdir import (
    ManifestRow,
    SegmentManifest,
    WorkdirInfo,
    write_info,
    write_manifest,
)

SAMPLE_ID = "ep/seg01"
TURNS = (  # (speaker, target, words, strategy)
    ("Therapist", "Couple", "What brings the two of you here today?", None),
    ("Nora", "Eli", "He never plans anything with me at all.", None),
    ("Eli", "Nora", "That is simply not fair to say about me.", None),
    ("Therapist", "Nora", "Tell him that directly, Nora, right now.", "enact"),
    ("Nora", "Eli", "I want us to plan one weekend together.", None),
    ("Eli", "Nora", "I did not know it mattered this much to you.", None),
    ("Therapist", "Eli", "What happens inside you when she says that?", "evoke"),
    ("Eli", "Nora", "I feel like I keep failing her again and again.", None),
    ("Nora", "Eli", "You are not failing, I just miss you so much.", None),
    ("Therapist", "Nora", "Can you tell him what you miss the most?", "enact"),
)
COLOURS = ("red", "green", "blue", "yellow", "white", "black", "cyan", "magenta", "orange", "purple")
NO_CLIP = 8
"""A row whose clip file is missing: ER/VP at row 8 lack their current clip."""
runner = CliRunner()


def sample() -> Sample:
    rows = []
    for i, (speaker, target, words, strategy) in enumerate(TURNS, start=1):
        row: dict[str, Any] = {
            "row_index": i, "start_time": float(i), "end_time": i + 1.0, "primary_speaker": speaker,
            "target": [target], "dialogue_cleaned": words,
        }  # fmt: skip
        if strategy:
            row["support_strategy"] = [
                {"provider": "Therapist", "target": [target], "strategy_type": strategy}
            ]
        elif speaker != "Therapist":
            row["internal_emotion"] = [
                {"person": speaker, "emotion_description": "feels tense", "intensity": 5}
            ]
            row["viewpoints_attitudes"] = [{"source": speaker, "target": target, "viewpoint": "is distant"}]
        rows.append(Row.model_validate(row))
    return Sample(sample_id=SAMPLE_ID, scenario="couple", participants=("Nora", "Eli"), rows=tuple(rows))


def make_clip(path: Path, colour: str) -> None:
    ffmpeg = shutil.which("ffmpeg")
    assert ffmpeg is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            ffmpeg, "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", f"color=c={colour}:size=64x48:rate=10:duration=0.5",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(path),
        ],
        check=True,
    )  # fmt: skip


def workdir(root: Path, *, ffmpeg: bool) -> Path:
    """A work directory with a clip per row (ffmpeg-made, or placeholder bytes), except row ``NO_CLIP``."""
    write_info(root, WorkdirInfo("couple", ("Nora", "Eli"), "/v/ep.mp4", "/v/ep.srt", "2025-01-01T00:00:00Z"))
    rows = []
    for i, (speaker, _, words, _) in enumerate(TURNS, start=1):
        clip = f"clips/ep_seg01/row_{i:04d}.mp4"
        if i != NO_CLIP:
            if ffmpeg:
                make_clip(root / clip, COLOURS[i - 1])
            else:
                (root / clip).parent.mkdir(parents=True, exist_ok=True)
                (root / clip).write_bytes(f"clip-{i}".encode())
        rows.append(ManifestRow(i, float(i), i + 1.0, speaker, words, clip, 0.5, i))
    manifest = SegmentManifest("ep_seg01", SAMPLE_ID, "couple", ("Nora", "Eli"), 1.0, 11.0, tuple(rows))
    write_manifest(root, manifest)
    return root


@pytest.fixture(scope="session")
def ffmpeg() -> None:
    """Skip, with the reason shown, when ffmpeg is missing."""
    if shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None:
        pytest.skip("ffmpeg/ffprobe not installed (Debian: apt-get install ffmpeg)")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(sample().to_release()) + "\n", encoding="utf-8")
    return path


def run_video(server: FakeOpenAIServer, data: Path, clips: Path, out: Path, *extra: str) -> Any:
    args = ["run", "--model", "vllm/vid", "--base-url", server.base_url, "--data", str(data)]
    args += ["--tasks", "er,vp,ssp", "--mode", "video", "--clips", str(clips), "--out", str(out)]
    return runner.invoke(app, [*args, "--no-cache", "--no-bertscore", "-q", *extra], catch_exceptions=False)


def instances(data: Path) -> list[Instance]:
    config = RunSpec(model="vllm/vid", tasks=("er", "vp", "ssp"), data=str(data), mode="video")
    return [i for plan in build_plans(load_samples(str(data)), config) for i in plan.instances]


def expected_rows(inst: Instance) -> tuple[int, ...]:
    return tuple(row for row, _ in shown_rows(inst) if row != NO_CLIP)


def unusable(inst: Instance) -> bool:
    rows = shown_rows(inst)
    current = [r for r, role in rows if role == "current"]
    return current == [NO_CLIP] if current else not expected_rows(inst)


def parts(request: ChatRequest) -> list[dict[str, Any]]:
    content = request.messages[-1]["content"]
    return content if isinstance(content, list) else []


def labelled_rows(request: ChatRequest) -> tuple[int, ...]:
    labels = [p["text"] for p in parts(request) if p["type"] == "text" and p["text"].startswith("Clip ")]
    assert [label.split(":")[0] for label in labels] == [f"Clip {k}" for k in range(1, len(labels) + 1)]
    return tuple(int(label.split("row ")[1].split()[0].rstrip(",")) for label in labels)


@pytest.mark.ffmpeg
def test_video_form_sends_each_instance_its_clips_in_row_order(
    tmp_path: Path, data: Path, ffmpeg: None
) -> None:
    clips = workdir(tmp_path / "work", ffmpeg=True)
    with FakeOpenAIServer(schema_answer) as server:
        result = run_video(server, data, clips, tmp_path / "run")
    assert result.exit_code == 0, result.output
    built = instances(data)
    assert server.count == len(built)  # batch size 1 in video mode: one request per instance
    sent: Counter[tuple[bytes, ...]] = Counter()
    for request in server.requests:
        videos = [p for p in parts(request) if p["type"] == "video_url"]
        assert all(p["video_url"]["url"].startswith("data:video/mp4;base64,") for p in videos)
        decoded = tuple(base64.b64decode(p["video_url"]["url"].split(",", 1)[1]) for p in videos)
        assert len(decoded) == len(labelled_rows(request))
        sent[decoded] += 1
    clip = clips / "clips" / "ep_seg01"
    wanted = Counter(tuple((clip / f"row_{r:04d}.mp4").read_bytes() for r in expected_rows(i)) for i in built)
    assert sent == wanted
    lines = {r["instance_id"]: r for r in read_jsonl(tmp_path / "run" / "predictions.jsonl")}
    assert set(lines) == {i.id for i in built}  # none dropped
    flagged = {i.id for i in built if unusable(i)}
    assert flagged and {k for k, r in lines.items() if r["meta"].get("video_unusable")} == flagged
    for iid in flagged:
        assert any(p.startswith("video: no clip for") for p in lines[iid]["problems"])
    counts = json.loads((tmp_path / "run" / "run.json").read_text())["counts"]
    assert sum(c["video_unusable"] for c in counts.values()) == len(flagged)
    config = json.loads((tmp_path / "run" / "run.json").read_text())["config"]
    assert config["mode"] == "video" and config["video"]["clips"] == [str(clips)]


@pytest.mark.ffmpeg
def test_frames_form_sends_n_jpeg_frames_per_clip(tmp_path: Path, data: Path, ffmpeg: None) -> None:
    clips = workdir(tmp_path / "work", ffmpeg=True)
    with FakeOpenAIServer(schema_answer) as server:
        result = run_video(
            server, data, clips, tmp_path / "run", "--video-form", "frames", "--video-frames", "2"
        )
    assert result.exit_code == 0, result.output
    wanted = Counter(expected_rows(i) for i in instances(data))
    assert Counter(labelled_rows(r) for r in server.requests) == wanted
    for request in server.requests:
        images = [p["image_url"]["url"] for p in parts(request) if p["type"] == "image_url"]
        assert len(images) == 2 * len(labelled_rows(request))
        assert all(u.startswith("data:image/jpeg;base64,/9j/") for u in images)
        assert not any(p["type"] == "video_url" for p in parts(request))


def test_clip_urls_and_fps_and_settings_that_cannot_work(tmp_path: Path, data: Path) -> None:
    clips = workdir(tmp_path / "work", ffmpeg=False)
    with FakeOpenAIServer(schema_answer) as server:
        result = run_video(
            server, data, clips, tmp_path / "run", "--tasks", "er",
            "--clip-url-base", "http://media.lan/work", "--video-fps", "2",
        )  # fmt: skip
        first = server.requests[0] if server.requests else None
        refused = run_video(server, data, clips, tmp_path / "run", "--tasks", "er", "--video-fps", "1")
    assert result.exit_code == 0, result.output
    assert first is not None
    video = next(p for p in parts(first) if p["type"] == "video_url")
    assert video["video_url"]["url"].startswith("http://media.lan/work/clips/ep_seg01/row_")
    assert video["fps"] == 2
    assert refused.exit_code == 2 and "video: " in refused.output  # the recorded clip settings changed

    def usage(*args: str) -> str:
        done = runner.invoke(app, ["run", "--model", "vllm/vid", "--data", str(data), *args])
        assert done.exit_code == 2, done.output
        return done.output.strip()

    out = ("--out", str(tmp_path / "nowhere"))
    assert usage("--mode", "video", "--tasks", "er", *out).startswith("error: --mode video needs --clips")
    assert "itp cannot take it" in usage("--mode", "video", "--tasks", "er,itp", "--clips", str(clips), *out)
    assert (
        usage("--tasks", "er", "--clips", str(clips), *out) == "error: --clips applies to --mode video only"
    )
    assert not (tmp_path / "nowhere").exists()


def test_estimate_reports_clip_coverage(tmp_path: Path, data: Path) -> None:
    clips = workdir(tmp_path / "work", ffmpeg=False)
    result = runner.invoke(
        app,
        [
            "estimate",
            "--model",
            "openai/gpt-4o",
            "--data",
            str(data),
            "--tasks",
            "er,vp,ssp",
            "--mode",
            "video",
            "--clips",
            str(clips),
        ],
    )
    assert result.exit_code == 0, result.output
    built = instances(data)
    clips_sent = sum(len(expected_rows(i)) for i in built)
    flagged = sum(unusable(i) for i in built)
    assert (
        f"video: {clips_sent} clips attached over {len(built)} requests; {flagged} instances lack"
        in result.output
    )
