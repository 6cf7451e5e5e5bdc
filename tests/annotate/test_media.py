from __future__ import annotations

from pathlib import Path

import pytest

from rescue_bench import media
from rescue_bench.errors import DataError, DependencyError


@pytest.mark.ffmpeg
def test_probe_and_cut_are_frame_accurate(test_video: Path, tmp_path: Path) -> None:
    assert media.probe_duration(test_video) == pytest.approx(12.0, abs=0.05)
    out = tmp_path / "clips" / "c.mp4"
    duration = media.cut_clip(test_video, 1.25, 3.55, out)
    assert out.is_file()
    assert duration == pytest.approx(2.3, abs=0.1)
    assert media.probe_duration(out) == duration
    assert not list(out.parent.glob(".*"))  # no temporary file left behind


@pytest.mark.ffmpeg
def test_frames_are_jpeg_and_deterministic(test_video: Path) -> None:
    frames = media.extract_frames(test_video, 3, max_width=64)
    assert len(frames) == 3
    assert all(f.startswith(b"\xff\xd8") for f in frames)  # JPEG start-of-image
    assert len(set(frames)) == 3  # testsrc changes over time: three different pictures
    assert media.extract_frames(test_video, 3, max_width=64) == frames


@pytest.mark.ffmpeg
def test_unreadable_media_is_a_data_error_with_ffmpeg_words(ffmpeg: None, tmp_path: Path) -> None:
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video")
    with pytest.raises(DataError, match=r"bad\.mp4: ffprobe failed: .*Invalid data"):
        media.probe_duration(bad)
    with pytest.raises(DataError, match=r"gone\.mp4: no such file"):
        media.probe_duration(tmp_path / "gone.mp4")


def test_missing_ffmpeg_is_a_dependency_error_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(media.FFMPEG_ENV, "ffmpeg-that-does-not-exist")
    with pytest.raises(DependencyError, match=r"ffmpeg not found on .*apt-get install ffmpeg"):
        media.find_tools()


def test_frame_times_and_data_urls() -> None:
    assert media.frame_times(2.0, 2) == [0.5, 1.5]
    with pytest.raises(ValueError):
        media.frame_times(2.0, 0)
    assert media.data_url(b"\xff\xd8", "image/jpeg") == "data:image/jpeg;base64,/9g="
