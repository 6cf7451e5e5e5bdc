"""ffmpeg and ffprobe, run as subprocesses: probe a duration, cut a row clip, grab evenly spaced frames.

The tools are found on ``PATH`` (Debian: ``apt-get install ffmpeg``), or named by ``RESCUE_BENCH_FFMPEG`` and
``RESCUE_BENCH_FFPROBE``. A missing tool raises :class:`~rescue_bench.errors.DependencyError` with the install
command; a file ffmpeg cannot read raises :class:`~rescue_bench.errors.DataError` with the file name and
ffmpeg's own last words.

Clips are re-encoded (H.264 + AAC, ``+faststart`` so browsers can play them while loading): a stream copy can
only cut at key frames, which would move row boundaries by up to several seconds. Seeking before ``-i`` is
frame-accurate when re-encoding, and fast on long videos.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rescue_bench.atomic import atomic_path
from rescue_bench.errors import DataError, DependencyError

FFMPEG_ENV = "RESCUE_BENCH_FFMPEG"
FFPROBE_ENV = "RESCUE_BENCH_FFPROBE"
INSTALL_HINT = "install it (Debian/Ubuntu: sudo apt-get install ffmpeg; macOS: brew install ffmpeg)"
_QUIET = ("-hide_banner", "-nostdin", "-loglevel", "error")


@dataclass(frozen=True, slots=True)
class Tools:
    """Paths of the two programs."""

    ffmpeg: str
    ffprobe: str


def find_tools() -> Tools:
    """ffmpeg and ffprobe, or :class:`DependencyError` naming the one that is missing."""
    found = []
    for name, env in (("ffmpeg", FFMPEG_ENV), ("ffprobe", FFPROBE_ENV)):
        wanted = os.environ.get(env) or name
        path = shutil.which(wanted)
        if path is None:
            where = f"{env}={wanted}" if os.environ.get(env) else "PATH"
            raise DependencyError(f"{name} not found on {where}: {INSTALL_HINT}")
        found.append(path)
    return Tools(*found)


def _run(args: list[str], what: str, file: Path) -> bytes:
    try:
        done = subprocess.run(args, capture_output=True, check=False)
    except OSError as exc:
        raise DependencyError(f"cannot run {args[0]} ({exc.strerror or exc}): {INSTALL_HINT}") from None
    if done.returncode != 0:
        raise DataError(f"{file}: {what} failed: {last_line(done.stderr)}")
    return done.stdout


def last_line(stderr: bytes) -> str:
    """The last non-empty line of a tool's error output (where ffmpeg says what went wrong).

    >>> last_line(b"[mov @ 0x1] moov atom not found\\nclip.mp4: Invalid data found\\n\\n")
    'clip.mp4: Invalid data found'
    """
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1] if lines else "no error message"


def probe_duration(path: Path, tools: Tools | None = None) -> float:
    """The container duration of a media file in seconds, as ffprobe reports it."""
    tools = tools or find_tools()
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    args = [tools.ffprobe, "-v", "error", "-show_entries", "format=duration", "-of", "json", str(path)]
    out = _run(args, "ffprobe", path)
    try:
        return float(json.loads(out)["format"]["duration"])
    except (ValueError, KeyError, TypeError):
        raise DataError(f"{path}: ffprobe reports no duration (is it a video or audio file?)") from None


def cut_clip(video: Path, start: float, end: float, out: Path, tools: Tools | None = None) -> float:
    """Cut ``video`` between ``start`` and ``end`` seconds into ``out`` (MP4); return the clip's duration.

    The clip is written under a temporary name and renamed, so an interrupted cut leaves no half file.
    """
    if end <= start:
        raise ValueError(f"clip end {end} is not after its start {start}")
    tools = tools or find_tools()
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        _cut(video, start, end, tmp, tools)
    return probe_duration(out, tools)


def _cut(video: Path, start: float, end: float, tmp: Path, tools: Tools) -> None:
    args = [
        tools.ffmpeg, *_QUIET, "-y", "-ss", f"{start:.3f}", "-i", str(video), "-t", f"{end - start:.3f}",
        "-map", "0:v:0?", "-map", "0:a:0?", "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
        "-c:a", "aac", "-movflags", "+faststart", str(tmp),
    ]  # fmt: skip
    _run(args, f"cutting {start:.3f}-{end:.3f} s", video)


def frame_times(duration: float, count: int) -> list[float]:
    """``count`` instants spread evenly over ``duration``: the middle of ``count`` equal slices.

    >>> frame_times(4.0, 4)
    [0.5, 1.5, 2.5, 3.5]
    >>> frame_times(3.0, 1)
    [1.5]
    """
    if count < 1:
        raise ValueError(f"frame count must be at least 1 (got {count})")
    step = duration / count
    return [round((k + 0.5) * step, 3) for k in range(count)]


def extract_frame(video: Path, at: float, *, max_width: int = 512, tools: Tools | None = None) -> bytes:
    """One JPEG frame of ``video`` at ``at`` seconds, at most ``max_width`` pixels wide, as bytes."""
    tools = tools or find_tools()
    args = [
        tools.ffmpeg, *_QUIET, "-ss", f"{at:.3f}", "-i", str(video), "-frames:v", "1",
        "-vf", f"scale='min({max_width},iw)':-2", "-q:v", "4", "-f", "image2pipe", "-c:v", "mjpeg", "-",
    ]  # fmt: skip
    image = _run(args, f"extracting a frame at {at:.3f} s", video)
    if not image:
        raise DataError(f"{video}: no video frame at {at:.3f} s (the file may have no video stream)")
    return image


def extract_frames(
    video: Path,
    count: int,
    *,
    duration: float | None = None,
    max_width: int = 512,
    tools: Tools | None = None,
) -> list[bytes]:
    """``count`` JPEG frames spread evenly over the whole of ``video`` (see :func:`frame_times`)."""
    tools = tools or find_tools()
    length = probe_duration(video, tools) if duration is None else duration
    return [extract_frame(video, t, max_width=max_width, tools=tools) for t in frame_times(length, count)]


def data_url(payload: bytes, mime: str) -> str:
    """A ``data:`` URL, the form OpenAI-compatible endpoints take for inline images and videos.

    >>> data_url(b"hi", "image/jpeg")
    'data:image/jpeg;base64,aGk='
    """
    return f"data:{mime};base64,{base64.b64encode(payload).decode('ascii')}"
