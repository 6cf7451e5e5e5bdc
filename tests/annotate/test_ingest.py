from __future__ import annotations

import json
from pathlib import Path

import pytest

from rescue_bench import media
from rescue_bench.annotate.ingest import (
    IngestSettings,
    check_settings,
    fit_to_video,
    ingest,
    plan_segments,
    split_segments,
)
from rescue_bench.annotate.subtitles import Cue, Turn, read_subtitles
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.workdir import WorkdirInfo, read_info, read_manifest, write_info

PEOPLE = ("Nora", "Eli")


def settings(**changes: object) -> IngestSettings:
    base: dict[str, object] = {"scenario": "couple", "participants": PEOPLE, "min_segment_sec": 2.0}
    base.update(changes)
    return IngestSettings(**base)  # type: ignore[arg-type]


def cue(number: int, start: float, end: float, speaker: str = "Nora") -> Cue:
    return Cue(number, number * 4, start, end, (Turn(speaker, f"line {number}"),))


# -- planning (pure) -----------------------------------------------------------------------------------------


def test_split_by_gap_or_one_segment_per_file() -> None:
    cues = [cue(1, 0, 2), cue(2, 2.5, 4), cue(3, 10, 12), cue(4, 12.2, 13)]
    assert [[c.number for c in s] for s in split_segments(cues, 3.0)] == [[1, 2], [3, 4]]
    assert [[c.number for c in s] for s in split_segments(cues, None)] == [[1, 2, 3, 4]]


def test_short_segments_are_dropped_and_numbering_stays_stable() -> None:
    cues = [cue(1, 0, 1), cue(2, 10, 40), cue(3, 100, 200)]
    kept, dropped = plan_segments(cues, settings(min_segment_sec=60, split_gap=5.0), "ep1")
    assert [s.segment_id for s in kept] == ["ep1_seg03"]
    assert kept[0].sample_id == "ep1/seg03"
    assert dropped == [
        "dropped segment ep1_seg01 (cues 1-1, 1.0 s): shorter than 60 s",
        "dropped segment ep1_seg02 (cues 2-2, 30.0 s): shorter than 60 s",
    ]


def test_cues_past_the_video_end() -> None:
    kept, issues = fit_to_video([cue(1, 0, 2), cue(2, 9, 11), cue(3, 12, 13)], 10.0, "s.srt")
    assert [(c.number, c.end) for c in kept] == [(1, 2), (2, 10.0)]
    assert [(i.severity, i.cue) for i in issues] == [("warning", 2), ("error", 3)]
    assert "cut back" in issues[0].message and "after the end of the video (10.000 s)" in issues[1].message


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"participants": ("Nora",)}, "a couple segment has 2 or 3 people"),
        ({"participants": ("Nora", "Therapist")}, "'Therapist' is reserved"),
        ({"participants": ("Nora", "Nora")}, "distinct"),
        ({"scenario": "family", "participants": ("Ana",)}, "at least 2"),
        ({"split_gap": 0.0}, "--split-gap > 0"),
    ],
)
def test_settings_errors(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_settings(settings(**changes))


# -- end to end with ffmpeg ----------------------------------------------------------------------------------


@pytest.mark.ffmpeg
def test_ingest_cuts_clips_that_match_the_cues(test_video: Path, srt_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "work"
    result = ingest(
        test_video, srt_file, out, settings(split_gap=2.5, min_segment_sec=1.5), log=lambda _: None
    )
    assert [s.segment_id for s in result.segments] == ["session_seg01", "session_seg02"]
    assert result.dropped == ()
    track = read_subtitles(srt_file, PEOPLE)
    first = read_manifest(out / "segments" / "session_seg01" / "manifest.json")
    assert first.scenario == "couple" and first.participants == PEOPLE
    assert (first.start_time, first.end_time) == (0.5, 7.0)
    # cue 2 names two speakers: two rows with the cue's times
    assert [(r.index, r.cue, r.speaker, r.text) for r in first.rows] == [
        (1, 1, "Therapist", "What brings you both in today?"),
        (2, 2, "Nora", "He never plans anything with me."),
        (3, 2, "Eli", "That is not fair."),
        (4, 3, "Nora", "I just want a weekend."),
        (5, 4, "Eli", "Then say so."),
    ]
    cues = {c.number: c for c in track.cues}
    for row in first.rows:
        assert row.clip_path == f"clips/session_seg01/row_{row.index:04d}.mp4"
        clip = out / str(row.clip_path)
        assert clip.is_file()
        expected = cues[row.cue or 0].end - cues[row.cue or 0].start
        assert (row.start_time, row.end_time) == (cues[row.cue or 0].start, cues[row.cue or 0].end)
        assert row.duration_sec == pytest.approx(expected, abs=0.1)
        assert media.probe_duration(clip) == pytest.approx(expected, abs=0.1)
    info = read_info(out)
    assert info.video == str(test_video.resolve()) and info.video_duration_sec == pytest.approx(
        12.0, abs=0.05
    )
    raw = json.loads((out / "segments" / "session_seg01" / "manifest.json").read_text())
    assert set(raw) == {
        "segment_id",
        "sample_id",
        "scenario",
        "participants",
        "start_time",
        "end_time",
        "rows",
    }
    assert {"index", "start_time", "end_time", "speaker", "text", "clip_path", "duration_sec"} <= set(
        raw["rows"][0]
    )


@pytest.mark.ffmpeg
def test_short_segment_is_dropped_and_rerun_keeps_clips(
    test_video: Path, srt_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "work"
    first = ingest(
        test_video, srt_file, out, settings(split_gap=2.5, min_segment_sec=3.0), log=lambda _: None
    )
    assert [s.segment_id for s in first.segments] == ["session_seg01"]
    assert first.dropped == ("dropped segment session_seg02 (cues 5-5, 1.8 s): shorter than 3 s",)
    assert not (out / "segments" / "session_seg02").exists()
    assert (first.clips_cut, first.clips_kept) == (5, 0)
    again = ingest(
        test_video, srt_file, out, settings(split_gap=2.5, min_segment_sec=3.0), log=lambda _: None
    )
    assert (again.clips_cut, again.clips_kept) == (0, 5)


@pytest.mark.ffmpeg
def test_blocking_cue_problems_stop_the_ingest_unless_skipped(test_video: Path, tmp_path: Path) -> None:
    subs = tmp_path / "s.srt"
    subs.write_text(
        "1\n00:00:00,000 --> 00:00:03,000\nNORA: One.\n\n2\nbroken\n\n"
        "3\n00:00:13,000 --> 00:00:14,000\nELI: Late.\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError) as caught:
        ingest(test_video, subs, tmp_path / "w1", settings(), log=lambda _: None)
    assert "2 cue problem(s)" in str(caught.value)
    assert "s.srt:5: cue 2: not a valid SRT cue" in str(caught.value)
    assert "cue 3: starts at 13.000 s, at or after the end of the video" in str(caught.value)
    result = ingest(test_video, subs, tmp_path / "w2", settings(allow_bad_cues=True), log=lambda _: None)
    assert [len(s.rows) for s in result.segments] == [1]
    assert any("cue 2" in w and w.endswith("(skipped)") for w in result.warnings)


@pytest.mark.ffmpeg
def test_all_segments_too_short_and_foreign_workdirs_are_refused(
    test_video: Path, srt_file: Path, tmp_path: Path
) -> None:
    with pytest.raises(DataError, match="every segment is shorter than 120 s"):
        ingest(test_video, srt_file, tmp_path / "w", settings(min_segment_sec=120), log=lambda _: None)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("x")
    with pytest.raises(ConfigError, match="not empty and is not a work directory"):
        ingest(test_video, srt_file, busy, settings(), log=lambda _: None)
    info = WorkdirInfo(
        "couple", PEOPLE, str(test_video.resolve()), "/elsewhere/other.srt", "2025-01-01T00:00:00Z"
    )
    write_info(tmp_path / "w", info)
    with pytest.raises(ConfigError, match=r"holds a work directory for .*other\.srt; choose another --out"):
        ingest(test_video, srt_file, tmp_path / "w", settings(), log=lambda _: None)
