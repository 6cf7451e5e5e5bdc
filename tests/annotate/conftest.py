"""Fixtures for annotation tests: a short video made by ffmpeg's lavfi sources, and subtitle files for it.

All words and names are invented for the tests.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FFMPEG = shutil.which("ffmpeg")
FFPROBE = shutil.which("ffprobe")
MISSING = "ffmpeg/ffprobe not installed (Debian: apt-get install ffmpeg; `make system-deps` does it)"

# 5 cues over 12 s: a cue with two speakers (2), an overlap (3 starts before 2 ends), a 3 s gap before 5.
SRT = """\
1
00:00:00,500 --> 00:00:02,000
THERAPIST: What brings you both in today?

2
00:00:02,000 --> 00:00:04,250
NORA: He never plans anything with me.
- ELI: That is not fair.

3
00:00:04,000 --> 00:00:05,500
Nora: I just want a weekend.

4
00:00:05,500 --> 00:00:07,000
<i>ELI:</i> Then say so.

5
00:00:10,000 --> 00:00:11,800
THERAPIST: Say it to her directly.
"""


def make_video(path: Path, seconds: float = 12.0) -> Path:
    """An H.264 + AAC test video (lavfi ``testsrc`` and ``sine``), 25 fps so cuts land within 0.04 s."""
    assert FFMPEG is not None
    subprocess.run(
        [
            FFMPEG, "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", f"testsrc=size=128x96:rate=25:duration={seconds}",
            "-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest",
            str(path),
        ],
        check=True,
    )  # fmt: skip
    return path


@pytest.fixture(scope="session")
def ffmpeg() -> None:
    """Skip the test, with the reason shown, when ffmpeg or ffprobe is missing."""
    if FFMPEG is None or FFPROBE is None:
        pytest.skip(MISSING)


@pytest.fixture(scope="session")
def test_video(ffmpeg: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_video(tmp_path_factory.mktemp("video") / "session.mp4")


@pytest.fixture
def srt_file(tmp_path: Path) -> Path:
    path = tmp_path / "session.srt"
    path.write_text(SRT, encoding="utf-8")
    return path
