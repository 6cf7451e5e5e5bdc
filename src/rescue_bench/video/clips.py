"""The ``video`` input mode of ER, VP and SSP: row clips attached to a rendered request.

It changes the requests the engine sends, through the hook the run hands the engine
(:mod:`rescue_bench.video.mode`); clips are read from annotation work directories through
:mod:`rescue_bench.workdir` and cut with :mod:`rescue_bench.media`, so video mode never imports ``annotate``.

A task renders its request as usual (in ``video`` mode the transcript lines carry the base fields only); then
:func:`attach_clips` turns the user message into OpenAI-style content parts: for every row the items show, in
order (each item's earlier rows, then its current row where the task shows one; a row shared by two items is
attached once), a short text label and either

* the clip itself, ``{"type": "video_url", "video_url": {"url": ...}}`` (plus ``"fps"`` when set, the
  DashScope convention), for endpoints that take video; or
* ``frames`` still frames spread over the clip, ``{"type": "image_url", ...}``, for any vision model;

followed by the original prompt text. Clips come from work directories (``annotate ingest``) or from
reference-style review assets (``<root>/<sample_id>/manifest.json``); a clip counts only if its file exists.

Nothing is dropped silently: every shown row without a clip is listed in :attr:`VideoRequest.missing`, and an
instance that lacks the clip its task needs (ER and VP: the current row's; SSP: at least one earlier row's) is
listed in :attr:`VideoRequest.unusable`, for the run to record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rescue_bench import media
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.jsonfile import read_json
from rescue_bench.records import Instance, Json, Request
from rescue_bench.tasks import video_tasks
from rescue_bench.tasks.context import chat_message, row_index_of, shown_context
from rescue_bench.workdir import manifest_paths, read_manifest

VIDEO_TASKS: tuple[str, ...] = video_tasks()
ClipForm = Literal["video", "frames"]
Role = Literal["context", "current"]


@dataclass(frozen=True, slots=True)
class Clip:
    """A row's clip as a manifest records it."""

    sample_id: str
    row_index: int
    path: Path
    relative: str
    """The path as the manifest gives it (relative to its work directory or review-asset root)."""
    duration_sec: float | None = None

    @property
    def exists(self) -> bool:
        return self.path.is_file()


@dataclass(frozen=True, slots=True)
class ClipIndex:
    """Clips by (sample id, row index)."""

    clips: Mapping[tuple[str, int], Clip] = field(default_factory=dict)

    def get(self, sample_id: str, row_index: int) -> Clip | None:
        return self.clips.get((sample_id, row_index))

    def __len__(self) -> int:
        return len(self.clips)


@dataclass(frozen=True, slots=True)
class VideoSettings:
    form: ClipForm = "video"
    frames: int = 4
    """Frames per clip in the ``frames`` form."""
    fps: float | None = None
    """Added to each ``video_url`` part when set (DashScope reads it; the reference ER/VP scripts sent 1)."""
    url_base: str | None = None
    """Where the clips are served over HTTP (the clip's relative path is appended); default: data URLs."""
    frame_width: int = 512


@dataclass(frozen=True, slots=True)
class MissingClip:
    instance_id: str
    row_index: int
    role: Role
    reason: str

    @property
    def text(self) -> str:
        return f"video: no clip for {self.role} row {self.row_index} ({self.reason})"


@dataclass(frozen=True, slots=True)
class VideoRequest:
    """The request with clips attached, what was attached, and what was missing."""

    request: Request
    attached: tuple[int, ...]
    """Row indices, in attachment order."""
    missing: tuple[MissingClip, ...]
    unusable: tuple[str, ...]
    """Instances without the clip their task needs."""

    def problems_for(self, instance_id: str) -> tuple[str, ...]:
        return tuple(m.text for m in self.missing if m.instance_id == instance_id)


class MediaSource(Protocol):
    """Turns clips into URLs; the I/O edge of :func:`attach_clips`."""

    def video_url(self, clip: Clip) -> str: ...

    def frame_urls(self, clip: Clip, count: int) -> list[str]: ...


def check_video_tasks(tasks: Sequence[str]) -> None:
    """Video mode exists for ER, VP and SSP only (as in the reference scripts)."""
    other = [t for t in tasks if t not in VIDEO_TASKS]
    if other:
        raise ConfigError(
            f"--mode video covers {', '.join(VIDEO_TASKS)}; {', '.join(other)} cannot take it (pick --tasks)"
        )


def shown_rows(inst: Instance) -> list[tuple[int, Role]]:
    """The rows an instance shows, in prompt order: earlier rows, then the current row (ER, VP)."""
    shown = shown_context(inst.context)
    rows: list[tuple[int, Role]] = [(row_index_of(r), "context") for r in shown.rows]
    if shown.current is not None:
        rows.append((row_index_of(shown.current), "current"))
    return rows


def attach_clips(
    request: Request,
    batch: Sequence[Instance],
    clips: ClipIndex,
    settings: VideoSettings,
    source: MediaSource,
) -> VideoRequest:
    """``request`` with the clips of the rows its items show; see the module docstring."""
    order: list[int] = []
    found: dict[int, Clip] = {}
    missing: list[MissingClip] = []
    unusable: list[str] = []
    for inst in batch:
        rows = shown_rows(inst)
        for row_index, role in rows:
            clip = clips.get(inst.sample_id, row_index)
            if clip is None or not clip.exists:
                reason = "not in any clip manifest" if clip is None else f"file missing: {clip.relative}"
                missing.append(MissingClip(inst.id, row_index, role, reason))
            elif row_index not in found:
                found[row_index] = clip
                order.append(row_index)
        if not _usable(rows, found):
            unusable.append(inst.id)
    parts: list[Json] = []
    for number, row_index in enumerate(order, start=1):
        parts.extend(_clip_parts(number, found[row_index], settings, source))
    new_request = _with_parts(request, parts) if parts else request
    return VideoRequest(new_request, tuple(order), tuple(missing), tuple(unusable))


def _usable(rows: Sequence[tuple[int, Role]], found: Mapping[int, Clip]) -> bool:
    current = [r for r, role in rows if role == "current"]
    if current:
        return current[0] in found
    return any(r in found for r, _ in rows)


def _clip_parts(number: int, clip: Clip, settings: VideoSettings, source: MediaSource) -> list[Json]:
    length = f"{clip.duration_sec:.1f} s" if clip.duration_sec is not None else "length unknown"
    if settings.form == "frames":
        urls = source.frame_urls(clip, settings.frames)
        label = f"Clip {number}: row {clip.row_index}, {len(urls)} frames spread over {length}"
        return [
            {"type": "text", "text": label},
            *({"type": "image_url", "image_url": {"url": u}} for u in urls),
        ]
    part: dict[str, Json] = {"type": "video_url", "video_url": {"url": source.video_url(clip)}}
    if settings.fps is not None:
        part["fps"] = settings.fps
    return [{"type": "text", "text": f"Clip {number}: row {clip.row_index} ({length})"}, part]


def _with_parts(request: Request, parts: list[Json]) -> Request:
    """The request with ``parts`` put before the text of its last user message."""
    messages = list(request.messages)
    last = max(i for i, m in enumerate(messages) if chat_message(m).role == "user")
    content = chat_message(messages[last]).content
    text_parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
    messages[last] = {**messages[last], "content": [*parts, *text_parts]}
    return replace(request, messages=tuple(messages))


# -- the I/O edge -------------------------------------------------------------------------------------------


class LocalMedia:
    """Clips read from disk: videos as data URLs (or URLs under ``url_base``), frames cut with ffmpeg."""

    def __init__(self, settings: VideoSettings) -> None:
        self.settings = settings
        self._frames: dict[tuple[Path, int], list[str]] = {}

    def video_url(self, clip: Clip) -> str:
        if self.settings.url_base:
            return f"{self.settings.url_base.rstrip('/')}/{clip.relative.lstrip('/')}"
        return media.data_url(clip.path.read_bytes(), "video/mp4")

    def frame_urls(self, clip: Clip, count: int) -> list[str]:
        key = (clip.path, count)
        if key not in self._frames:
            images = media.extract_frames(
                clip.path, count, duration=clip.duration_sec, max_width=self.settings.frame_width
            )
            self._frames[key] = [media.data_url(image, "image/jpeg") for image in images]
        return self._frames[key]


def load_clip_index(sources: Sequence[Path]) -> ClipIndex:
    """Clips of every manifest under ``sources`` (work directories or review-asset roots)."""
    clips: dict[tuple[str, int], Clip] = {}
    for source in sources:
        if not source.is_dir():
            raise ConfigError(f"--clips {source}: not a directory")
        found = _workdir_clips(source) if manifest_paths(source) else _asset_clips(source)
        if not found:
            raise DataError(f"--clips {source}: no manifest.json with clips found")
        clash = next((key for key in found if key in clips), None)
        if clash is not None:
            raise ConfigError(f"--clips: sample {clash[0]!r} has clips in two sources")
        clips.update(found)
    return ClipIndex(clips)


def _workdir_clips(root: Path) -> dict[tuple[str, int], Clip]:
    out: dict[tuple[str, int], Clip] = {}
    for path in manifest_paths(root):
        segment = read_manifest(path)
        for row in segment.rows:
            if row.clip_path:
                clip = Clip(
                    segment.sample_id, row.index, root / row.clip_path, row.clip_path, row.duration_sec
                )
                out[(segment.sample_id, row.index)] = clip
    return out


def _asset_clips(root: Path) -> dict[tuple[str, int], Clip]:
    """Manifests in the reference layout: ``<root>/<sample_id>/manifest.json``, rows ``{index, clip_path,
    duration_sec}``. A clip path is read relative to the manifest's directory when that file exists, else
    relative to ``root`` (the reference wrote paths relative to its repository root).
    """
    out: dict[tuple[str, int], Clip] = {}
    for path in sorted(root.rglob("manifest.json")):
        try:
            manifest = AssetManifest.model_validate(read_json(path))
        except ValidationError:
            raise DataError(f"{path}: expected an object with a 'rows' list") from None
        sample_id = str(manifest.sample_id or path.parent.relative_to(root).as_posix())
        for entry in manifest.rows:
            row = _asset_row(entry)
            if row is None:
                continue
            relative = str(row.clip_path)
            near = path.parent / relative
            full = near if near.is_file() else root / relative
            out[(sample_id, row.index)] = Clip(sample_id, row.index, full, relative, row.seconds)
    return out


class AssetManifest(BaseModel):
    """A reference-layout ``manifest.json`` (written by another tool: unknown keys are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    rows: list[Json]
    sample_id: Json = None


class AssetRow(BaseModel):
    """One row of it; rows without an integer ``index`` or a ``clip_path`` are skipped."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    index: Annotated[int, Field(strict=True)]
    clip_path: Json
    duration_sec: Json = None

    @property
    def seconds(self) -> float | None:
        value = self.duration_sec
        return float(value) if isinstance(value, int | float) else None


def _asset_row(entry: Json) -> AssetRow | None:
    try:
        row = AssetRow.model_validate(entry)
    except ValidationError:
        return None
    return row if row.clip_path else None


def make_video_hook(
    sources: Sequence[Path], settings: VideoSettings
) -> Callable[[Request, Sequence[Instance]], VideoRequest]:
    """What the engine calls on each rendered request in video mode (the clip index is read once, here)."""
    if settings.form == "frames" and settings.frames < 1:
        raise ConfigError(f"--video-frames must be at least 1 (got {settings.frames})")
    index = load_clip_index(sources)
    source = LocalMedia(settings)
    return lambda request, batch: attach_clips(request, batch, index, settings, source)
