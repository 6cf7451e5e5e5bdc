"""Video mode of a run: the clip hook, built once per run, and what an estimate can say about the clips.

The attachment itself lives in :mod:`rescue_bench.engine.clips`; this module turns a run's config into
its settings, refuses configurations that cannot work, and turns each attachment into per-instance notes
(problems and the ``video_unusable`` flag) for ``predictions.jsonl``. Instances are never dropped for a
missing clip: they are sent with whatever clips exist, scored, and counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rescue_bench.engine.clips import (
    Clip,
    VideoRequest,
    VideoSettings,
    attach_clips,
    check_video_tasks,
    load_clip_index,
    make_video_hook,
)
from rescue_bench.engine.plans import TaskPlan
from rescue_bench.errors import ConfigError
from rescue_bench.records import Instance, Request
from rescue_bench.spec import RunSpec

Hook = Callable[[Request, Sequence[Instance]], VideoRequest]
"""What the run applies to each rendered request in video mode."""


@dataclass(frozen=True, slots=True)
class VideoNote:
    """What one instance's request lacked: problems to record and whether its needed clip was missing."""

    problems: tuple[str, ...] = ()
    unusable: bool = False


def check_video_config(config: RunSpec) -> None:
    """Refuse video settings that cannot work, before anything is loaded or sent.

    Raises:
        ConfigError: clips without video mode, video mode without clips, or a task without a video mode.
    """
    if not config.is_video:
        if config.video.clips:
            raise ConfigError("--clips applies to --mode video only")
        return
    check_video_tasks(config.tasks)
    if not config.video.clips:
        raise ConfigError("--mode video needs --clips WORKDIR (an annotate work directory or review assets)")


def video_settings(config: RunSpec) -> VideoSettings:
    return VideoSettings(
        form=config.video.form,
        frames=config.video.frames,
        fps=config.video.fps,
        url_base=config.video.clip_url_base,
    )


def make_hook(config: RunSpec) -> Hook | None:
    """The run's clip hook (the clip index is read once, here); ``None`` outside video mode."""
    check_video_config(config)
    if not config.is_video:
        return None
    return make_video_hook([Path(c) for c in config.video.clips], video_settings(config))


def notes(attached: VideoRequest, batch: Sequence[Instance]) -> dict[str, VideoNote]:
    """Per-instance notes of one attachment."""
    unusable = set(attached.unusable)
    return {i.id: VideoNote(attached.problems_for(i.id), i.id in unusable) for i in batch}


@dataclass(frozen=True, slots=True)
class ClipCoverage:
    requests: int
    clips: int
    """Clips attached over all requests (a clip shown by two requests counts twice)."""
    unusable: int
    """Instances without the clip their task needs."""


class _Placeholder:
    """Clip URLs that read nothing: an estimate needs which clips exist, not their bytes."""

    def video_url(self, clip: Clip) -> str:
        return f"clip:{clip.relative}"

    def frame_urls(self, clip: Clip, count: int) -> list[str]:
        return [f"frame:{clip.relative}:{k}" for k in range(count)]


def clip_coverage(config: RunSpec, plans: Sequence[TaskPlan]) -> ClipCoverage | None:
    """How the run's first-attempt requests would be covered by clips; ``None`` outside video mode."""
    check_video_config(config)
    if not config.is_video:
        return None
    index = load_clip_index([Path(c) for c in config.video.clips])
    settings, source = video_settings(config), _Placeholder()
    requests = clips = unusable = 0
    for plan in plans:
        for batch in plan.batches:
            result = attach_clips(plan.task.render(batch, plan.cfg), batch, index, settings, source)
            requests += 1
            clips += len(result.attached)
            unusable += len(result.unusable)
    return ClipCoverage(requests, clips, unusable)
