"""Serve clips from the media root, and from nowhere else.

A media path is refused (as "not found", so that nothing is learned about the disk) when it is absolute, has
an empty, ``.``, ``..`` or hidden component, contains a backslash, NUL or ``%`` (a second round of URL
encoding), has a suffix that is not a media type, or resolves, symlinks followed, to a file outside the root.
The response supports HTTP Range requests (Starlette's ``FileResponse``), which browsers need to seek in a
video.
"""

from __future__ import annotations

from pathlib import Path

from starlette.responses import FileResponse

MEDIA_TYPES: dict[str, str] = {
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".webm": "video/webm",
    ".ogv": "video/ogg",
    ".mov": "video/quicktime",
    ".mp3": "audio/mpeg",
    ".m4a": "audio/mp4",
    ".wav": "audio/wav",
    ".vtt": "text/vtt; charset=utf-8",
    ".srt": "text/plain; charset=utf-8",
}


class MediaNotFound(Exception):
    """The path does not name a servable file inside the media root."""


def check_relative(relative: str) -> tuple[str, ...]:
    """The path's components, or :class:`MediaNotFound` when the path could leave the root or is not media.

    >>> check_relative("clips/seg1/row_0001.mp4")
    ('clips', 'seg1', 'row_0001.mp4')
    >>> check_relative("clips/../../etc/passwd.mp4")
    Traceback (most recent call last):
    ...
    rescue_bench.review.media.MediaNotFound: clips/../../etc/passwd.mp4
    """
    parts = tuple(relative.split("/"))
    bad_char = any(ch in relative for ch in ("\\", "\x00", "%"))
    bad_part = any(not part or part in (".", "..") or part.startswith(".") for part in parts)
    if bad_char or bad_part or Path(relative).suffix.lower() not in MEDIA_TYPES:
        raise MediaNotFound(relative)
    return parts


def resolve_media(root: Path, relative: str) -> Path:
    """The real path of ``relative`` under ``root``; :class:`MediaNotFound` unless it is a file there."""
    parts = check_relative(relative)
    real_root = root.resolve(strict=True)
    try:
        real = real_root.joinpath(*parts).resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # missing file, symlink loop
        raise MediaNotFound(relative) from exc
    # The target's own suffix counts too: a link named clip.mp4 must not serve review.db.
    if not real.is_relative_to(real_root) or not real.is_file() or real.suffix.lower() not in MEDIA_TYPES:
        raise MediaNotFound(relative)
    return real


def media_response(root: Path, relative: str) -> FileResponse:
    """A Range-capable response for a media file (its resolved path: a later symlink swap is not followed)."""
    real = resolve_media(root, relative)
    return FileResponse(
        real, media_type=MEDIA_TYPES[real.suffix.lower()], headers={"Cache-Control": "private"}
    )


def clip_root_of(roots: tuple[Path, ...], source_path: str, clip: str | None) -> int | None:
    """The index of the media root that serves ``clip`` of a segment loaded from ``source_path``: the work
    directory holding that path, else the first root that has the file; ``None`` when none has it."""
    if not clip:
        return None
    source = Path(source_path)
    ordered = sorted(range(len(roots)), key=lambda i: not source.is_relative_to(roots[i]))
    return next((i for i in ordered if _clip_exists(roots[i], clip)), None)


def _clip_exists(root: Path, clip: str) -> bool:
    try:
        resolve_media(root, clip)
    except (MediaNotFound, OSError):
        return False
    return True
