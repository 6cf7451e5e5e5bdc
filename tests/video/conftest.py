"""Fixtures for video-mode tests: the annotation tests' ffmpeg-made video and subtitles (a clip index is built
from an ingested work directory)."""

from tests.annotate.conftest import ffmpeg, srt_file, test_video

__all__ = ["ffmpeg", "srt_file", "test_video"]
