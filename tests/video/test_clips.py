"""Video mode: requests of the real ER, VP and SSP tasks get the right clips, in order, in both forms."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.data.schema import Row, Sample
from rescue_bench.errors import ConfigError
from rescue_bench.records import Instance, Request, Shown
from rescue_bench.tasks import get_task
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.video.clips import (
    Clip,
    ClipIndex,
    LocalMedia,
    VideoSettings,
    attach_clips,
    check_video_tasks,
    load_clip_index,
    make_video_hook,
)
from rescue_bench.workdir import (
    ManifestRow,
    SegmentManifest,
    WorkdirInfo,
    write_info,
    write_manifest,
)

SAMPLE_ID = "ep/seg01"
TURNS = (  # (speaker, target, words, strategy); invented
    ("Therapist", "Couple", "What brings you both in today?", None),
    ("Nora", "Eli", "He never plans anything with me at all.", None),
    ("Eli", "Nora", "That is simply not fair to say.", None),
    ("Therapist", "Nora", "Tell him that directly, Nora.", "enact"),
    ("Nora", "Eli", "I want us to plan one weekend together.", None),
    ("Eli", "Nora", "I did not know it mattered this much.", None),
    ("Therapist", "Eli", "What happens inside when she says that?", "evoke"),
    ("Eli", "Nora", "I feel like I keep failing her again.", None),
    ("Nora", "Eli", "You are not failing, I just miss you.", None),
    ("Therapist", "Nora", "Can you tell him what you miss?", "enact"),
)


def sample() -> Sample:
    rows = []
    for i, (speaker, target, words, strategy) in enumerate(TURNS, start=1):
        row: dict[str, Any] = {
            "row_index": i, "start_time": float(i), "end_time": i + 1.0, "primary_speaker": speaker,
            "target": [target], "dialogue_cleaned": words,
        }  # fmt: skip
        if speaker == "Therapist" and strategy:
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


def workdir(root: Path, *, no_file: tuple[int, ...] = (), no_clip: tuple[int, ...] = ()) -> Path:
    """A work directory whose rows have clips (``clip-<n>`` bytes), except the given ones."""
    write_info(root, WorkdirInfo("couple", ("Nora", "Eli"), "/v/ep.mp4", "/v/ep.srt", "2025-01-01T00:00:00Z"))
    rows = []
    for i, (speaker, _, words, _) in enumerate(TURNS, start=1):
        clip = None if i in no_clip else f"clips/ep_seg01/row_{i:04d}.mp4"
        if clip and i not in no_file:
            (root / clip).parent.mkdir(parents=True, exist_ok=True)
            (root / clip).write_bytes(f"clip-{i}".encode())
        rows.append(ManifestRow(i, float(i), i + 1.0, speaker, words, clip, 1.0 if clip else None, i))
    write_manifest(
        root, SegmentManifest("ep_seg01", SAMPLE_ID, "couple", ("Nora", "Eli"), 1.0, 11.0, tuple(rows))
    )
    return root


def instances(task: str, context_size: int = 2) -> dict[int, Instance]:
    built = get_task(task).build(sample(), TaskConfig(mode="video", context_size=context_size))
    return {inst.row_index: inst for inst in built}


def render(task: str, *batch: Instance) -> Request:
    return get_task(task).render(list(batch), TaskConfig(mode="video"))


class FakeFrames:
    """Frames named after their clip, so the test can see which clip each image came from."""

    def video_url(self, clip: Clip) -> str:
        return f"video:{clip.row_index}"

    def frame_urls(self, clip: Clip, count: int) -> list[str]:
        return [f"data:image/jpeg;base64,row{clip.row_index}-f{k}" for k in range(1, count + 1)]


def decoded(part: dict[str, Any]) -> str:
    url = part["video_url"]["url"]
    assert url.startswith("data:video/mp4;base64,")
    return base64.b64decode(url.split(",", 1)[1]).decode()


def test_er_gets_earlier_clips_then_the_current_clip_as_video(tmp_path: Path) -> None:
    index = load_clip_index([workdir(tmp_path / "w")])
    inst = instances("er")[5]
    request = render("er", inst)
    settings = VideoSettings(form="video")
    result = attach_clips(request, [inst], index, settings, LocalMedia(settings))
    assert result.attached == (3, 4, 5) and result.missing == () and result.unusable == ()
    parts = result.request.messages[-1]["content"]
    assert [p["type"] for p in parts] == [
        "text",
        "video_url",
        "text",
        "video_url",
        "text",
        "video_url",
        "text",
    ]
    assert [p["text"] for p in parts[:-1] if p["type"] == "text"] == [
        "Clip 1: row 3 (1.0 s)", "Clip 2: row 4 (1.0 s)", "Clip 3: row 5 (1.0 s)",
    ]  # fmt: skip
    assert [decoded(p) for p in parts if p["type"] == "video_url"] == ["clip-3", "clip-4", "clip-5"]
    assert parts[-1] == {"type": "text", "text": request.messages[-1]["content"]}
    assert result.request.messages[0] == request.messages[0]  # the system prompt is untouched
    assert result.request.instance_ids == request.instance_ids


def test_frames_form_sends_n_images_per_clip_in_row_order(tmp_path: Path) -> None:
    index = load_clip_index([workdir(tmp_path / "w")])
    inst = instances("vp")[9]
    settings = VideoSettings(form="frames", frames=3)
    result = attach_clips(render("vp", inst), [inst], index, settings, FakeFrames())
    parts = result.request.messages[-1]["content"]
    images = [p["image_url"]["url"].rsplit(",", 1)[1] for p in parts if p["type"] == "image_url"]
    assert images == [f"row{r}-f{k}" for r in (7, 8, 9) for k in (1, 2, 3)]
    assert parts[0] == {"type": "text", "text": "Clip 1: row 7, 3 frames spread over 1.0 s"}
    assert not any(p["type"] == "video_url" for p in parts)


def test_ssp_attaches_only_earlier_rows_never_the_therapist_turn(tmp_path: Path) -> None:
    index = load_clip_index([workdir(tmp_path / "w")])
    inst = instances("ssp")[7]
    result = attach_clips(render("ssp", inst), [inst], index, VideoSettings(), FakeFrames())
    assert result.attached == (5, 6)
    urls = [p["video_url"]["url"] for p in result.request.messages[-1]["content"] if p["type"] == "video_url"]
    assert urls == ["video:5", "video:6"]


def test_rows_shared_by_items_are_attached_once_and_urls_and_fps_follow_settings(tmp_path: Path) -> None:
    root = workdir(tmp_path / "w")
    vp = instances("vp")
    batch = [vp[8], vp[9]]  # rows 6-8 and 7-9
    settings = VideoSettings(url_base="http://media.lan/work/", fps=1)
    result = attach_clips(
        render("vp", *batch), batch, load_clip_index([root]), settings, LocalMedia(settings)
    )
    assert result.attached == (6, 7, 8, 9)
    videos = [p for p in result.request.messages[-1]["content"] if p["type"] == "video_url"]
    url = "http://media.lan/work/clips/ep_seg01/row_0006.mp4"
    assert videos[0] == {"type": "video_url", "video_url": {"url": url}, "fps": 1}


def test_missing_clips_are_reported_and_instances_without_the_needed_clip_are_flagged(tmp_path: Path) -> None:
    index = load_clip_index([workdir(tmp_path / "w", no_file=(3, 5), no_clip=(2,))])
    er = instances("er")[5]
    result = attach_clips(render("er", er), [er], index, VideoSettings(), FakeFrames())
    assert result.attached == (4,)
    assert [(m.row_index, m.role) for m in result.missing] == [(3, "context"), (5, "current")]
    assert result.unusable == (er.id,)
    assert result.problems_for(er.id) == (
        "video: no clip for context row 3 (file missing: clips/ep_seg01/row_0003.mp4)",
        "video: no clip for current row 5 (file missing: clips/ep_seg01/row_0005.mp4)",
    )
    ssp = instances("ssp")[4]  # earlier rows 2 (no clip in the manifest) and 3 (file missing)
    nothing = attach_clips(render("ssp", ssp), [ssp], index, VideoSettings(), FakeFrames())
    assert nothing.unusable == (ssp.id,) and nothing.attached == ()
    assert nothing.missing[0].reason == "not in any clip manifest"
    assert nothing.request == render("ssp", ssp)  # nothing to attach: the text request stands, reported
    no_context = instances("ssp", context_size=0)[7]
    assert attach_clips(
        render("ssp", no_context), [no_context], index, VideoSettings(), FakeFrames()
    ).unusable


def test_reference_layout_and_source_errors(tmp_path: Path) -> None:
    assets = tmp_path / "review_assets"
    (assets / "ep" / "seg01").mkdir(parents=True)
    (assets / "ep" / "seg01" / "row1.mp4").write_bytes(b"near")
    (assets / "clips").mkdir()
    (assets / "clips" / "row2.mp4").write_bytes(b"root")
    rows = [
        {"index": 1, "clip_path": "row1.mp4", "duration_sec": 2.5},
        {"index": 2, "clip_path": "clips/row2.mp4"},
    ]
    (assets / "ep" / "seg01" / "manifest.json").write_text(json.dumps({"rows": rows}))
    index = load_clip_index([assets])
    first, second = index.get(SAMPLE_ID, 1), index.get(SAMPLE_ID, 2)
    assert first is not None and first.exists and first.duration_sec == 2.5
    assert second is not None and second.path == assets / "clips" / "row2.mp4" and second.exists
    with pytest.raises(ConfigError, match="has clips in two sources"):
        load_clip_index([assets, workdir(tmp_path / "w")])
    with pytest.raises(ConfigError, match="not a directory"):
        load_clip_index([tmp_path / "nowhere"])
    assert len(ClipIndex()) == 0


def test_video_mode_covers_er_vp_and_ssp_only(tmp_path: Path) -> None:
    check_video_tasks(["er", "vp", "ssp"])
    with pytest.raises(ConfigError, match="--mode video covers ssp, er, vp; itp, rpp cannot take it"):
        check_video_tasks(["er", "itp", "rpp"])
    with pytest.raises(ConfigError, match="--video-frames must be at least 1"):
        make_video_hook([workdir(tmp_path / "w")], VideoSettings(form="frames", frames=0))


@pytest.mark.ffmpeg
def test_the_hook_with_real_clips_and_frames(tmp_path: Path, test_video: Path, srt_file: Path) -> None:
    from rescue_bench.annotate.ingest import IngestSettings, ingest

    root = tmp_path / "work"
    subs = tmp_path / "two.srt"
    subs.write_text("\n\n".join(srt_file.read_text(encoding="utf-8").split("\n\n")[:2]), encoding="utf-8")
    ingest(
        test_video,
        subs,
        root,
        IngestSettings("couple", ("Nora", "Eli"), min_segment_sec=1),
        log=lambda _: None,
    )
    hook = make_video_hook([root], VideoSettings(form="frames", frames=2, frame_width=64))
    rows = ({"row_index": 1, "line": "[1] ..."},)
    context = Shown("video", 1, rows=rows, current={"row_index": 2, "line": "[2] ..."})
    inst = Instance("session/seg01::er::2", "er", "session/seg01", "couple", 2, None, (), context)
    request = Request(
        "er", ({"role": "system", "content": "s"}, {"role": "user", "content": "u"}), {}, (inst.id,)
    )
    result = hook(request, [inst])
    assert result.attached == (1, 2) and result.missing == ()
    images = [
        p["image_url"]["url"] for p in result.request.messages[-1]["content"] if p["type"] == "image_url"
    ]
    assert len(images) == 4 and all(u.startswith("data:image/jpeg;base64,/9j/") for u in images)
    assert hook(request, [inst]).request == result.request  # same frames again: a stable cache key
